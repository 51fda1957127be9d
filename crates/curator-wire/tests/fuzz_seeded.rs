//! The fuzz targets' drivers (`fuzz/drivers.rs`) in the normal test suite: on the seed corpus
//! kept in the repository, and on inputs from a seeded generator (random bytes, and valid
//! encodings with random damage: flipped bits, cuts, inserted and removed bytes, lengths and
//! codes overwritten with edge values). A failure prints the case's seed and input; the same
//! case replays with `CURATOR_WIRE_FUZZ_SEED=<seed>`.
//!
//! `cargo fuzz` (scripts/fuzz.sh) searches far more inputs, guided by coverage; this keeps the
//! same properties checked on every test run.

#[path = "../fuzz/drivers.rs"]
mod drivers;
#[path = "support/values.rs"]
mod values;

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use curator_wire::codec::{
    ClientCodec, ClientFrame, ReplyFrame, RequestFrame, ServerCodec, ServerFrame,
};
use curator_wire::proto::*;
use tokio_util::codec::Encoder;
use values::Values;

type Driver = fn(&[u8]);
/// Makes a valid input for a target.
type Maker = fn(&mut Values) -> Vec<u8>;

/// The targets: name (as in `fuzz/Cargo.toml` and `fuzz/seeds/`), driver, and a maker of
/// valid inputs.
const TARGETS: [(&str, Driver, Maker); 4] = [
    ("client_stream", drivers::client_stream, client_stream_input),
    ("reply_bodies", drivers::reply_bodies, reply_body_input),
    ("server_stream", drivers::server_stream, server_stream_input),
    (
        "request_bodies",
        drivers::request_bodies,
        request_body_input,
    ),
];

fn seeds_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

fn client_stream_input(values: &mut Values) -> Vec<u8> {
    let mut wire = BytesMut::new();
    wire.extend_from_slice(&[values.rng_byte()]);
    let mut codec = ServerCodec::new();
    codec
        .encode(ServerFrame::Connected(values.connect_response()), &mut wire)
        .unwrap();
    for _ in 0..values.below(5) {
        codec
            .encode(ServerFrame::Reply(values.reply_frame()), &mut wire)
            .unwrap();
    }
    wire.to_vec()
}

fn server_stream_input(values: &mut Values) -> Vec<u8> {
    let mut wire = BytesMut::new();
    wire.extend_from_slice(&[values.rng_byte()]);
    let mut codec = ClientCodec::new();
    codec
        .encode(ClientFrame::Connect(values.connect_request()), &mut wire)
        .unwrap();
    for _ in 0..values.below(5) {
        codec
            .encode(ClientFrame::Request(values.request_frame()), &mut wire)
            .unwrap();
    }
    wire.to_vec()
}

fn reply_body_input(values: &mut Values) -> Vec<u8> {
    if values.below(8) == 0 {
        return values.watcher_event().to_bytes().to_vec();
    }
    let (_, response) = values.exchange();
    let mut body = BytesMut::new();
    response.encode(&mut body);
    body.to_vec()
}

fn request_body_input(values: &mut Values) -> Vec<u8> {
    let mut body = BytesMut::new();
    values.request().encode(&mut body);
    body.to_vec()
}

fn run_case(target: &str, driver: Driver, input: &[u8], what: &str) {
    if std::panic::catch_unwind(|| driver(input)).is_err() {
        let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
        panic!(
            "{target} failed on {what}; input ({} bytes): {hex}",
            input.len()
        );
    }
}

#[test]
fn the_seed_corpus_passes_every_driver() {
    for (target, driver, _) in TARGETS {
        let dir = seeds_dir(target);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let input = std::fs::read(&path).unwrap();
            run_case(target, driver, &input, &path.display().to_string());
            seen += 1;
        }
        assert!(seen >= 4, "{target} has {seen} seeds");
    }
}

#[test]
fn the_drivers_hold_on_random_and_damaged_input() {
    let cases: u64 = std::env::var("CURATOR_WIRE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3000);
    let only: Option<u64> = std::env::var("CURATOR_WIRE_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok());
    let seeds: Box<dyn Iterator<Item = u64>> = match only {
        Some(seed) => Box::new(std::iter::once(seed)),
        None => Box::new(0..cases),
    };
    for seed in seeds {
        for (index, (target, driver, valid)) in TARGETS.into_iter().enumerate() {
            let mut values = Values::new(seed << 2 | index as u64);
            let input = if values.below(4) == 0 {
                let len = values.below(200);
                (0..len).map(|_| values.rng_byte()).collect()
            } else {
                let input = valid(&mut values);
                values.mutate(input)
            };
            run_case(target, driver, &input, &format!("seed {seed}"));
        }
    }
}

/// Writes the seed corpus again (`cargo test -p curator-wire --test fuzz_seeded -- --ignored`):
/// realistic sessions and one input per request and reply kind.
#[test]
#[ignore = "writes fuzz/seeds; run by hand to regenerate them"]
fn write_seed_corpus() {
    for (target, _, valid) in TARGETS {
        let dir = seeds_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        for seed in 0..12u64 {
            let mut values = Values::new(0xc0_0000 + seed);
            let input = valid(&mut values);
            std::fs::write(dir.join(format!("generated-{seed:02}")), input).unwrap();
        }
    }
    // A plain session as a server sends it, and as a client sends it.
    let mut wire = BytesMut::new();
    let mut server = ServerCodec::new();
    let frames = [
        ServerFrame::Connected(ConnectResponse {
            protocol_version: 0,
            timeout: 4000,
            session_id: 0x1000_0000_0001,
            passwd: vec![0x5a; 16],
            read_only: Some(false),
        }),
        ServerFrame::Reply(ReplyFrame::ok(
            1,
            0x10,
            &Response::Create2(Create2Response {
                path: "/app".into(),
                stat: Stat {
                    czxid: 0x10,
                    mzxid: 0x10,
                    pzxid: 0x10,
                    ..Stat::default()
                },
            }),
        )),
        ServerFrame::Reply(ReplyFrame::notification(
            -1,
            &WatcherEvent {
                event_type: EventType::NodeChildrenChanged,
                state: KeeperState::SyncConnected,
                path: "/app".into(),
            },
        )),
        ServerFrame::Reply(ReplyFrame::ok(
            2,
            0x11,
            &Response::Multi(MultiResponse {
                results: vec![
                    MultiResult::Error(ErrorCode::Ok),
                    MultiResult::Error(ErrorCode::BadVersion),
                ],
            }),
        )),
        ServerFrame::Reply(ReplyFrame::error(3, 0x11, ErrorCode::NoNode)),
        ServerFrame::Reply(ReplyFrame::ok(PING_XID, 0x11, &Response::Empty)),
    ];
    for frame in frames {
        server.encode(frame, &mut wire).unwrap();
    }
    let input = [&[7u8][..], &wire].concat();
    std::fs::write(seeds_dir("client_stream").join("session"), input).unwrap();

    let mut wire = BytesMut::new();
    let mut client = ClientCodec::new();
    let frames = [
        ClientFrame::Connect(ConnectRequest::new_session(4000, false)),
        ClientFrame::Request(RequestFrame::new(
            1,
            &Request::Create2(CreateRequest {
                path: "/app".into(),
                data: b"x".to_vec(),
                acl: Acl::open_unsafe(),
                mode: CreateMode::Persistent,
            }),
        )),
        ClientFrame::Request(RequestFrame::new(
            2,
            &Request::Multi(MultiRequest {
                ops: vec![
                    MultiOp::Check(CheckVersionRequest {
                        path: "/app".into(),
                        version: 0,
                    }),
                    MultiOp::SetData(SetDataRequest {
                        path: "/app".into(),
                        data: b"y".to_vec(),
                        version: 7,
                    }),
                ],
            }),
        )),
        ClientFrame::Request(RequestFrame::new(PING_XID, &Request::Ping)),
        ClientFrame::Request(RequestFrame::new(4, &Request::CloseSession)),
    ];
    for frame in frames {
        client.encode(frame, &mut wire).unwrap();
    }
    let input = [&[3u8][..], &wire].concat();
    std::fs::write(seeds_dir("server_stream").join("session"), input).unwrap();
}
