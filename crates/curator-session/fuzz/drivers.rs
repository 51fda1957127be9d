//! The fuzz driver of the session (shared by the `cargo fuzz` target and the seeded run in the
//! test suite, `tests/fuzz_seeded.rs`).
//!
//! The input is what a server sends on a connection: the handshake's answer, then anything.
//! A played server answers the session's handshake with the input's first frame, waits for
//! the session's requests ([`REQUESTS`] of them, in this order), then sends the rest of the
//! input and hangs up. The session must not panic, every request must end (a reply, an error,
//! or `ConnectionLoss` when the connection goes), and closing must end every watch.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use curator_session::proto::{
    AddWatchMode, CheckVersionRequest, CreateMode, KeeperState, MultiOp, OpCode,
};
use curator_session::{BoxTransport, Connector, ServerAddress, Session, SessionConfig, open_acl};
use curator_wire::codec::{ClientFrame, ServerCodec};
use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio_util::codec::FramedRead;

/// The requests the session sends once connected, in order (their xids are 1 to 7).
pub(crate) const REQUESTS: [OpCode; 7] = [
    OpCode::GetData,
    OpCode::Exists,
    OpCode::AddWatch,
    OpCode::GetChildren2,
    OpCode::Multi,
    OpCode::Create2,
    OpCode::WhoAmI,
];

/// One connection, then none.
#[derive(Debug)]
struct OnePipe(parking_lot::Mutex<Option<DuplexStream>>);

impl Connector for OnePipe {
    fn connect<'a>(&'a self, _: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let stream = self
                .0
                .lock()
                .take()
                .ok_or(io::ErrorKind::ConnectionRefused)?;
            Ok(Box::new(stream) as BoxTransport)
        })
    }
}

/// Where the handshake's answer ends in `input` (the first frame, or all of it).
fn first_frame_end(input: &[u8]) -> usize {
    match input.get(..4) {
        Some(len) => {
            let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
            len.saturating_add(4).min(input.len())
        }
        None => input.len(),
    }
}

pub(crate) fn session_stream(input: &[u8]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    runtime.block_on(run(input));
}

async fn run(input: &[u8]) {
    let (client, server) = tokio::io::duplex(1 << 16);
    let config = SessionConfig::new("fuzz:2181")
        .expect("a valid connect string")
        .session_timeout(Duration::from_secs(10))
        .connection_timeout(Duration::from_secs(5))
        .max_frame(1 << 20)
        .connector(Arc::new(OnePipe(parking_lot::Mutex::new(Some(client)))));
    let split = first_frame_end(input);
    let (head, tail) = (input[..split].to_vec(), input[split..].to_vec());
    let server = tokio::spawn(play(server, head, tail));
    let session = match Session::connect(config).await {
        Ok(session) => session,
        Err(_) => {
            // Refused, in a typed way: nothing more to see.
            server.abort();
            return;
        }
    };
    let multi = vec![MultiOp::Check(CheckVersionRequest {
        path: "/e".into(),
        version: 1,
    })];
    let (data, exists, watch, children, transaction, create, who) = tokio::join!(
        session.get_data("/a"),
        session.exists_watched("/b"),
        session.add_watch("/c", AddWatchMode::PersistentRecursive),
        session.get_children("/d"),
        session.multi(multi),
        session.create("/f", b"x", open_acl(), CreateMode::Ephemeral, None),
        session.who_am_i(),
    );
    let _ = (data, children, transaction, create, who);
    let _ = tokio::time::timeout(Duration::from_secs(60), server).await;
    session
        .close_within(Duration::from_secs(1))
        .await
        .expect("closing never fails");
    if let Ok((_, watch)) = exists {
        let event = tokio::time::timeout(Duration::from_secs(1), watch.changed())
            .await
            .expect("a closed session ends its watches");
        if event.event_type == curator_session::proto::EventType::None {
            assert!(event.state != KeeperState::SyncConnected, "{event:?}");
        }
    }
    if let Ok(mut watch) = watch {
        tokio::time::timeout(Duration::from_secs(1), async {
            while watch.next().await.is_some() {}
        })
        .await
        .expect("a closed session ends its persistent watches");
    }
}

/// The played server: the handshake's answer, the session's requests, the rest, hang up.
async fn play(stream: DuplexStream, head: Vec<u8>, tail: Vec<u8>) {
    let (read, mut write) = tokio::io::split(stream);
    let mut frames = FramedRead::new(read, ServerCodec::new());
    if !matches!(frames.next().await, Some(Ok(ClientFrame::Connect(_)))) {
        return;
    }
    if write.write_all(&head).await.is_err() {
        return;
    }
    let mut seen = 0;
    while seen < REQUESTS.len() {
        match tokio::time::timeout(Duration::from_secs(2), frames.next()).await {
            Ok(Some(Ok(ClientFrame::Request(request)))) => {
                if request.header.op_code != OpCode::Ping {
                    seen += 1;
                }
            }
            _ => break,
        }
    }
    let _ = write.write_all(&tail).await;
    let _ = write.shutdown().await;
}
