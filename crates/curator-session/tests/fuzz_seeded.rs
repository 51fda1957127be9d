//! The session's fuzz driver (`fuzz/drivers.rs`) in the normal test suite: on the seed corpus
//! kept in the repository, and on inputs from a seeded generator (valid server streams for the
//! driver's requests, the same with random damage, and random bytes). A panic anywhere (in the
//! session's own tasks too) or a request that never ends fails the case; the failure prints
//! the case's seed and input, and `CURATOR_SESSION_FUZZ_SEED=<seed>` replays it.
//!
//! `scripts/fuzz.sh session_stream` searches far more inputs with `cargo fuzz`.

#[path = "../fuzz/drivers.rs"]
mod drivers;
#[path = "../../curator-wire/tests/support/values.rs"]
mod values;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::BytesMut;
use curator_wire::codec::{ReplyFrame, ServerCodec, ServerFrame};
use curator_wire::proto::*;
use tokio_util::codec::Encoder;
use values::Values;

static PANICKED: AtomicBool = AtomicBool::new(false);

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/session_stream")
}

/// A server stream that answers the driver's requests in order, with notifications, pings and
/// errors in between.
fn valid_stream(values: &mut Values) -> Vec<u8> {
    let mut wire = BytesMut::new();
    let mut codec = ServerCodec::new();
    let mut frame = |frame: ServerFrame, wire: &mut BytesMut| codec.encode(frame, wire).unwrap();
    frame(
        ServerFrame::Connected(ConnectResponse {
            protocol_version: 0,
            timeout: [10_000, 4_000, 1, -1, 0]
                [values.below(5).min(4) * usize::from(values.below(4) == 0)],
            session_id: values.i64(),
            passwd: vec![3; 16],
            read_only: Some(values.below(8) == 0),
        }),
        &mut wire,
    );
    let mut zxid = 0x100;
    for (index, op) in drivers::REQUESTS.iter().enumerate() {
        while values.below(3) == 0 {
            let extra = match values.below(3) {
                0 => ReplyFrame::notification(
                    if values.flip() { -1 } else { zxid },
                    &WatcherEvent {
                        event_type: [
                            EventType::NodeCreated,
                            EventType::NodeDeleted,
                            EventType::NodeDataChanged,
                            EventType::NodeChildrenChanged,
                        ][values.below(4)],
                        state: KeeperState::SyncConnected,
                        path: ["/a", "/b", "/c", "/c/x/y", "/d", "/"][values.below(6)].into(),
                    },
                ),
                1 => ReplyFrame::ok(PING_XID, zxid, &Response::Empty),
                _ => values.reply_frame(),
            };
            frame(ServerFrame::Reply(extra), &mut wire);
        }
        zxid += 1;
        let xid = i32::try_from(index + 1).unwrap();
        let reply = if values.below(4) == 0 {
            ReplyFrame::error(xid, zxid, values.failure())
        } else {
            let response = match op {
                OpCode::Multi => Response::Multi(MultiResponse {
                    results: vec![if values.flip() {
                        MultiResult::Check
                    } else {
                        MultiResult::Error(ErrorCode::BadVersion)
                    }],
                }),
                OpCode::AddWatch => Response::AddWatch(ErrorResponse { err: ErrorCode::Ok }),
                other => values.response_to(*other),
            };
            ReplyFrame::ok(xid, zxid, &response)
        };
        frame(ServerFrame::Reply(reply), &mut wire);
    }
    wire.to_vec()
}

fn run_case(input: &[u8], what: &str) {
    PANICKED.store(false, Ordering::SeqCst);
    let caught = std::panic::catch_unwind(|| drivers::session_stream(input)).is_err();
    if caught || PANICKED.load(Ordering::SeqCst) {
        let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
        panic!(
            "session_stream failed on {what}; input ({} bytes): {hex}",
            input.len()
        );
    }
}

fn cases() -> u64 {
    std::env::var("CURATOR_SESSION_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(600)
}

#[test]
fn the_session_survives_what_a_server_may_send() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        hook(info);
    }));
    if let Ok(dir) = std::fs::read_dir(seeds_dir()) {
        for entry in dir.flatten() {
            let input = std::fs::read(entry.path()).unwrap();
            run_case(&input, &format!("seed file {}", entry.path().display()));
        }
    }
    let seeds: Vec<u64> = match std::env::var("CURATOR_SESSION_FUZZ_SEED") {
        Ok(seed) => vec![seed.parse().expect("a number")],
        Err(_) => (0..cases()).collect(),
    };
    for seed in seeds {
        let mut values = Values::new(seed);
        let input = match seed % 3 {
            0 => valid_stream(&mut values),
            1 => {
                let input = valid_stream(&mut values);
                values.mutate(input)
            }
            _ => (0..values.below(300)).map(|_| values.rng_byte()).collect(),
        };
        run_case(
            &input,
            &format!("seed {seed} (CURATOR_SESSION_FUZZ_SEED={seed})"),
        );
    }
}

/// Writes the seed corpus (`cargo test -p curator-session --test fuzz_seeded -- --ignored`).
#[test]
#[ignore = "writes fuzz/seeds/session_stream"]
fn write_seed_corpus() {
    let dir = seeds_dir();
    std::fs::create_dir_all(&dir).unwrap();
    for seed in 0..24 {
        let mut values = Values::new(1_000 + seed);
        let input = valid_stream(&mut values);
        std::fs::write(dir.join(format!("valid-{seed:02}")), input).unwrap();
    }
}
