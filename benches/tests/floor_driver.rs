//! The floor drivers speak the line protocol the harness speaks: against a scripted server (a
//! thread answering with curator-wire's server codec, so no ZooKeeper is needed), each floor
//! measures `get_data`, `create_delete` and `pipelined_get_data` with one value per operation,
//! and answers every other scenario `err unsupported`, which the harness takes as "not run"
//! (an "n/a" row), not as a failure.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use bytes::BytesMut;
use curator_benches::harness::Driver;
use curator_wire::codec::{ClientFrame, ReplyFrame, ServerCodec, ServerFrame};
use curator_wire::proto::{
    ConnectResponse, Create2Response, ErrorCode, GetDataResponse, Request, Response, Stat,
};
use tokio_util::codec::{Decoder, Encoder};

const FLOOR_DRIVER: &str = env!("CARGO_BIN_EXE_floor-driver");

/// Serves a connection: the handshake, then getData (100 bytes), create2 and delete on a
/// set of nodes, answered in order, until the client goes.
fn serve(mut stream: TcpStream) {
    let mut codec = ServerCodec::new();
    let mut input = BytesMut::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut nodes = HashSet::new();
    let mut zxid = 1;
    loop {
        let mut output = BytesMut::new();
        while let Some(frame) = codec.decode(&mut input).expect("a client frame") {
            let answer = match frame {
                ClientFrame::Connect(hello) => ServerFrame::Connected(ConnectResponse {
                    protocol_version: 0,
                    timeout: hello.timeout,
                    session_id: 0x5eed,
                    passwd: vec![7; 16],
                    read_only: hello.read_only.map(|_| false),
                }),
                ClientFrame::Request(request) => {
                    let xid = request.header.xid;
                    zxid += 1;
                    let reply = match request.decode().expect("a request body") {
                        Request::GetData(_) => ReplyFrame::ok(
                            xid,
                            zxid,
                            &Response::GetData(GetDataResponse {
                                data: vec![7; 100],
                                stat: Stat::default(),
                            }),
                        ),
                        Request::Create2(create) => {
                            if nodes.insert(create.path.clone()) {
                                ReplyFrame::ok(
                                    xid,
                                    zxid,
                                    &Response::Create2(Create2Response {
                                        path: create.path,
                                        stat: Stat::default(),
                                    }),
                                )
                            } else {
                                ReplyFrame::error(xid, zxid, ErrorCode::NodeExists)
                            }
                        }
                        Request::Delete(delete) => {
                            if nodes.remove(&delete.path) {
                                ReplyFrame::ok(xid, zxid, &Response::Empty)
                            } else {
                                ReplyFrame::error(xid, zxid, ErrorCode::NoNode)
                            }
                        }
                        other => panic!("the floors send no {other:?}"),
                    };
                    ServerFrame::Reply(reply)
                }
            };
            codec.encode(answer, &mut output).expect("encoded");
        }
        if !output.is_empty() && stream.write_all(&output).is_err() {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A scripted server, each connection served on a thread of its own (a floor opens one to check
/// the server, then one per run); its `host:port`.
fn scripted_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let address = listener.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        while let Ok((stream, _)) = listener.accept() {
            std::thread::spawn(move || serve(stream));
        }
    });
    address
}

fn floor(kind: &str) -> Driver {
    let mut command = Command::new(FLOOR_DRIVER);
    command.args([kind, &scripted_server()]);
    Driver::start("floor test driver", command).expect("the floor starts")
}

#[test]
fn each_floor_runs_its_scenarios_and_refuses_the_others() {
    for kind in ["blocking", "tokio"] {
        let mut driver = floor(kind);
        for (scenario, ops) in [
            ("get_data", 5),
            ("create_delete", 4),
            // Two batches: 1,000 in flight, then the rest.
            ("pipelined_get_data", 1500),
        ] {
            let sample = driver
                .run(scenario, ops, "/bench/data")
                .unwrap_or_else(|e| panic!("{kind} {scenario}: {e}"))
                .unwrap_or_else(|| panic!("{kind} does {scenario}"));
            assert_eq!(sample.latencies_ns.len(), ops, "{kind} {scenario}");
            assert!(
                sample.latencies_ns.iter().all(|&ns| ns > 0),
                "{kind} {scenario}: {:?}",
                sample.latencies_ns
            );
            let slowest = sample.latencies_ns.iter().max().copied().unwrap_or(0);
            assert!(sample.elapsed_ns >= slowest, "{kind} {scenario}");
        }
        // The nodes of the first run were deleted: a second one creates them again.
        let again = driver.run("create_delete", 4, "/bench/data");
        assert!(matches!(again, Ok(Some(_))), "{kind}: {again:?}");
        for other in ["mutex_uncontended", "leader_handover", "crash_join"] {
            let refused = driver.run(other, 3, "/bench/x");
            assert!(matches!(refused, Ok(None)), "{kind} {other}: {refused:?}");
        }
    }
}

#[test]
fn a_floor_that_cannot_connect_says_so() {
    let output = Command::new(FLOOR_DRIVER)
        .args(["tokio", "127.0.0.1:1"])
        .output()
        .expect("the driver runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("127.0.0.1:1"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
