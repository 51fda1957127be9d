//! Bad input from clients: valid requests with bytes flipped, cut or appended, decoded by the
//! wire layer and, when they still decode, handled by the model, thousands of times per seed.
//! Every one gets an answer (a reply or an error code), never a panic.

use curator_wire::proto::{
    Acl, AddWatchMode, AddWatchRequest, CreateMode, CreateRequest, CreateTtlRequest, DeleteRequest,
    MultiOp, MultiRequest, Perms, Request, SetAclRequest, SetDataRequest,
};
use curator_wire::proto::{ConnectRequest, Id};
use curator_zkmodel::{Connect, Model, ModelConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PATHS: &[&str] = &[
    "/",
    "/a",
    "/a/b",
    "/a/b/c",
    "/zookeeper",
    "/zookeeper/quota",
    "a",
    "/a/",
    "//",
    "/a/./b",
    "",
];

fn path(rng: &mut StdRng) -> String {
    PATHS[rng.random_range(0..PATHS.len())].to_owned()
}

fn acl(rng: &mut StdRng) -> Vec<Acl> {
    let ids = [
        ("world", "anyone"),
        ("auth", ""),
        ("digest", "u:x"),
        ("ip", "10.0.0.0/8"),
        ("nope", "?"),
    ];
    (0..rng.random_range(0..3))
        .map(|_| {
            let (scheme, id) = ids[rng.random_range(0..ids.len())];
            Acl {
                perms: Perms::ALL,
                id: Id::new(scheme, id),
            }
        })
        .collect()
}

fn create(rng: &mut StdRng) -> CreateRequest {
    CreateRequest {
        path: path(rng),
        data: vec![7; rng.random_range(0..16)],
        acl: acl(rng),
        mode: CreateMode::ALL[rng.random_range(0..CreateMode::ALL.len())],
    }
}

fn request(rng: &mut StdRng) -> Request {
    match rng.random_range(0..7) {
        0 => Request::Create(create(rng)),
        1 => Request::CreateTtl(CreateTtlRequest {
            path: path(rng),
            data: Vec::new(),
            acl: acl(rng),
            mode: CreateMode::ALL[rng.random_range(0..CreateMode::ALL.len())],
            ttl: rng.random_range(-5..5),
        }),
        2 => Request::SetData(SetDataRequest {
            path: path(rng),
            data: vec![1, 2, 3],
            version: rng.random_range(-2..3),
        }),
        3 => Request::Delete(DeleteRequest {
            path: path(rng),
            version: rng.random_range(-2..3),
        }),
        4 => Request::SetAcl(SetAclRequest {
            path: path(rng),
            acl: acl(rng),
            version: rng.random_range(-2..3),
        }),
        5 => Request::AddWatch(AddWatchRequest {
            path: path(rng),
            mode: if rng.random_bool(0.5) {
                AddWatchMode::Persistent
            } else {
                AddWatchMode::PersistentRecursive
            },
        }),
        _ => Request::Multi(MultiRequest {
            ops: (0..rng.random_range(0..4))
                .map(|_| match rng.random_range(0..3) {
                    0 => MultiOp::Create(create(rng)),
                    1 => MultiOp::Delete(DeleteRequest {
                        path: path(rng),
                        version: -1,
                    }),
                    _ => MultiOp::SetData(SetDataRequest {
                        path: path(rng),
                        data: Vec::new(),
                        version: rng.random_range(-1..2),
                    }),
                })
                .collect(),
        }),
    }
}

#[test]
fn mangled_requests_get_answers_and_never_a_panic() {
    for seed in 0..20_u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut model = Model::new(ModelConfig::default(), 0);
        let Connect::Accepted { connection, .. } =
            model.connect(0, &ConnectRequest::new_session(10_000, false), "127.0.0.1")
        else {
            panic!("a new session is accepted");
        };
        let mut answered = 0;
        for xid in 1..=500 {
            let request = request(&mut rng);
            let mut body = bytes::BytesMut::new();
            request.encode(&mut body);
            let mut body = body.to_vec();
            match rng.random_range(0..4) {
                0 if !body.is_empty() => {
                    let at = rng.random_range(0..body.len());
                    body[at] ^= rng.random_range(1..=255);
                }
                1 => body.truncate(rng.random_range(0..=body.len())),
                2 => body.extend((0..rng.random_range(1..8)).map(|_| rng.random::<u8>())),
                _ => {}
            }
            // What no longer decodes is the front's `MarshallingError`; what does, the model
            // answers.
            let Ok(decoded) = Request::decode(request.op_code(), &body) else {
                continue;
            };
            let outcome = model.handle(i64::from(xid), connection, xid, decoded);
            if outcome.reply_to(connection).is_some() {
                answered += 1;
            }
        }
        assert!(answered > 100, "seed {seed}: only {answered} answered");
    }
}
