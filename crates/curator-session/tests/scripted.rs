//! A session against a server played by the test over an in-memory pipe (the codec's server
//! side): what a real server never sends, the session survives. Truncated and oversized frames,
//! unknown xids, a reply to nothing, garbage after a valid frame, an unreadable body, a server
//! behind the session's last zxid, an expired session: each is a typed error or a reconnect,
//! never a panic or a hang.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::BufMut;
use curator_session::proto::{
    ConnectResponse, ErrorCode, EventType, GetDataResponse, KeeperState, OpCode, Request, Response,
    Stat, WatcherEvent,
};
use curator_session::{
    BoxTransport, Connector, Error, ServerAddress, Session, SessionConfig, SessionState,
};
use curator_wire::codec::{ClientFrame, ReplyFrame, RequestFrame, ServerCodec, ServerFrame};
use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

/// Every connection the session makes arrives at the test as the server's end of a pipe,
/// tagged with the server it was made to.
#[derive(Debug)]
struct Pipes(mpsc::UnboundedSender<(ServerAddress, DuplexStream)>);

impl Connector for Pipes {
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let (client, server_end) = tokio::io::duplex(1 << 16);
            self.0
                .send((server.clone(), server_end))
                .map_err(|_| io::Error::from(io::ErrorKind::ConnectionRefused))?;
            Ok(Box::new(client) as BoxTransport)
        })
    }
}

struct Peer {
    framed: Framed<DuplexStream, ServerCodec>,
    zxid: i64,
}

impl Peer {
    /// Answers the handshake; returns the session's `lastZxidSeen`.
    async fn accept(stream: DuplexStream, session_id: i64) -> (Peer, i64) {
        let mut framed = Framed::new(stream, ServerCodec::new());
        let Some(Ok(ClientFrame::Connect(hello))) = framed.next().await else {
            panic!("no handshake");
        };
        framed
            .send(ServerFrame::Connected(ConnectResponse {
                protocol_version: 0,
                timeout: hello.timeout,
                session_id,
                passwd: vec![9; 16],
                read_only: Some(false),
            }))
            .await
            .unwrap();
        (
            Peer {
                framed,
                zxid: 0x100,
            },
            hello.last_zxid_seen,
        )
    }

    /// The next request (pings skipped).
    async fn request(&mut self) -> RequestFrame {
        loop {
            match self.framed.next().await {
                Some(Ok(ClientFrame::Request(request)))
                    if request.header.op_code == OpCode::Ping => {}
                Some(Ok(ClientFrame::Request(request))) => return request,
                other => panic!("expected a request, got {other:?}"),
            }
        }
    }

    async fn reply(&mut self, request: &RequestFrame, response: Response) {
        self.zxid += 1;
        self.framed
            .send(ServerFrame::Reply(ReplyFrame::ok(
                request.header.xid,
                self.zxid,
                &response,
            )))
            .await
            .unwrap();
    }

    async fn raw(&mut self, bytes: &[u8]) {
        self.framed.get_mut().write_all(bytes).await.unwrap();
    }
}

fn data(bytes: &[u8]) -> Response {
    Response::GetData(GetDataResponse {
        data: bytes.to_vec(),
        stat: Stat::default(),
    })
}

struct Harness {
    session: Session,
    pipes: mpsc::UnboundedReceiver<(ServerAddress, DuplexStream)>,
    peer: Peer,
}

async fn start(connect: &str) -> Harness {
    let (sender, mut pipes) = mpsc::unbounded_channel();
    let config = SessionConfig::new(connect)
        .unwrap()
        .session_timeout(Duration::from_secs(30))
        .connector(Arc::new(Pipes(sender)));
    let connecting = tokio::spawn(Session::connect(config));
    let (_, stream) = pipes.recv().await.unwrap();
    let (peer, _) = Peer::accept(stream, 0x77).await;
    let session = connecting.await.unwrap().unwrap();
    Harness {
        session,
        pipes,
        peer,
    }
}

impl Harness {
    /// The server closes the current connection.
    fn hang_up(&mut self) {
        let closed = Framed::new(tokio::io::duplex(1).0, ServerCodec::new());
        drop(std::mem::replace(&mut self.peer.framed, closed));
    }

    /// The session's next connection, accepted.
    async fn reconnected(&mut self) -> i64 {
        let (_, stream) = self.pipes.recv().await.unwrap();
        let (peer, last_zxid) = Peer::accept(stream, 0x77).await;
        self.peer = peer;
        last_zxid
    }

    /// A request after the connection was replaced, answered.
    async fn works(&mut self) {
        let mut state = self.session.state_watch();
        state.wait_for(|s| s.is_connected()).await.unwrap();
        let read = self.session.get_data("/a");
        let request = self.peer.request().await;
        assert_eq!(request.decode().unwrap(), get_data("/a"));
        self.peer.reply(&request, data(b"ok")).await;
        assert_eq!(read.await.unwrap().0, b"ok");
        assert_eq!(self.session.state(), SessionState::Connected);
    }
}

fn get_data(path: &str) -> Request {
    Request::GetData(curator_session::proto::GetDataRequest {
        path: path.into(),
        watch: false,
    })
}

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("no hang")
}

#[tokio::test]
async fn requests_and_replies_match_in_order() {
    let mut h = start("zk:1").await;
    let first = h.session.get_data("/a");
    let second = h.session.get_data("/b");
    let r1 = h.peer.request().await;
    let r2 = h.peer.request().await;
    assert!(r1.header.xid < r2.header.xid, "sent in the order made");
    h.peer.reply(&r1, data(b"1")).await;
    h.peer.reply(&r2, data(b"2")).await;
    assert_eq!(first.await.unwrap().0, b"1");
    assert_eq!(second.await.unwrap().0, b"2");
    assert_eq!(h.session.last_zxid(), 0x102);
}

#[tokio::test]
async fn a_reply_with_an_unknown_xid_drops_the_connection() {
    let mut h = start("zk:1").await;
    let read = h.session.get_data("/a");
    let request = h.peer.request().await;
    h.peer
        .framed
        .send(ServerFrame::Reply(ReplyFrame::ok(
            request.header.xid + 40,
            1,
            &data(b"x"),
        )))
        .await
        .unwrap();
    assert_eq!(bounded(read).await, Err(Error::ConnectionLoss));
    bounded(h.reconnected()).await;
    bounded(h.works()).await;
}

#[tokio::test]
async fn a_reply_to_nothing_drops_the_connection() {
    let mut h = start("zk:1").await;
    let mut states = h.session.state_changes();
    h.peer
        .framed
        .send(ServerFrame::Reply(ReplyFrame::ok(5, 1, &data(b"x"))))
        .await
        .unwrap();
    assert_eq!(
        bounded(states.next()).await,
        Some(SessionState::Disconnected)
    );
    bounded(h.reconnected()).await;
    bounded(h.works()).await;
}

#[tokio::test]
async fn a_truncated_frame_then_the_end_of_the_stream() {
    let mut h = start("zk:1").await;
    let read = h.session.get_data("/a");
    let _request = h.peer.request().await;
    // A frame that says 100 bytes and brings 3, then the server goes.
    h.peer.raw(&[0, 0, 0, 100, 1, 2, 3]).await;
    h.hang_up();
    assert_eq!(bounded(read).await, Err(Error::ConnectionLoss));
    let last_zxid = bounded(h.reconnected()).await;
    assert_eq!(last_zxid, 0, "nothing was answered");
    bounded(h.works()).await;
}

#[tokio::test]
async fn an_oversized_frame_is_refused_before_it_is_read() {
    let (sender, mut pipes) = mpsc::unbounded_channel();
    let config = SessionConfig::new("zk:1")
        .unwrap()
        .max_frame(1024)
        .connector(Arc::new(Pipes(sender)));
    let connecting = tokio::spawn(Session::connect(config));
    let (_, stream) = pipes.recv().await.unwrap();
    let (mut peer, _) = Peer::accept(stream, 1).await;
    let session = connecting.await.unwrap().unwrap();
    let read = session.get_data("/big");
    let request = peer.request().await;
    peer.reply(&request, data(&vec![7; 2048])).await;
    assert_eq!(bounded(read).await, Err(Error::ConnectionLoss));
    assert_eq!(session.state(), SessionState::Disconnected);
}

#[tokio::test]
async fn garbage_after_a_valid_frame() {
    let mut h = start("zk:1").await;
    let read = h.session.get_data("/a");
    let request = h.peer.request().await;
    h.peer.reply(&request, data(b"fine")).await;
    // A negative length: not a frame.
    h.peer.raw(&[0xff, 0xff, 0xff, 0x00, 0xde, 0xad]).await;
    assert_eq!(
        bounded(read).await.unwrap().0,
        b"fine",
        "the valid frame counts"
    );
    bounded(h.reconnected()).await;
    bounded(h.works()).await;
}

#[tokio::test]
async fn an_unreadable_body_fails_its_request_only() {
    let mut h = start("zk:1").await;
    let read = h.session.get_data("/a");
    let request = h.peer.request().await;
    // A getData reply that is not one: the frame is whole, the stream stays in step.
    let mut frame = bytes::BytesMut::new();
    frame.put_i32(16 + 2);
    frame.put_i32(request.header.xid);
    frame.put_i64(0x200);
    frame.put_i32(0);
    frame.put_slice(&[0, 9]);
    h.peer.raw(&frame).await;
    assert!(matches!(
        bounded(read).await,
        Err(Error::UnexpectedReply(_))
    ));
    bounded(h.works()).await;
}

#[tokio::test]
async fn an_unreadable_notification_drops_the_connection() {
    let mut h = start("zk:1").await;
    let mut states = h.session.state_changes();
    let mut frame = bytes::BytesMut::new();
    frame.put_i32(16 + 12);
    frame.put_i32(-1);
    frame.put_i64(-1);
    frame.put_i32(0);
    frame.put_slice(&[0, 0, 0, 9, 0, 0, 0, 3, 0, 0, 0, 0]); // event type 9: none such
    h.peer.raw(&frame).await;
    assert_eq!(
        bounded(states.next()).await,
        Some(SessionState::Disconnected)
    );
    bounded(h.reconnected()).await;
    bounded(h.works()).await;
}

/// A server whose data is older than what the session has seen closes the handshake; the
/// session tries the next server, carrying its last zxid.
#[tokio::test]
async fn a_server_behind_the_session_is_skipped() {
    let mut h = start("zk:1,zk:2").await;
    let read = h.session.get_data("/a");
    let request = h.peer.request().await;
    h.peer.zxid = 0x500;
    h.peer.reply(&request, data(b"x")).await;
    read.await.unwrap();
    let first = h.session.server().unwrap();
    h.hang_up();
    // The next attempt goes to the other server: it is behind, and refuses.
    let (server, stream) = bounded(h.pipes.recv()).await.unwrap();
    assert_ne!(server, first);
    let mut refusing = Framed::new(stream, ServerCodec::new());
    let Some(Ok(ClientFrame::Connect(hello))) = refusing.next().await else {
        panic!("no handshake");
    };
    assert_eq!(hello.last_zxid_seen, 0x501);
    assert_eq!(hello.session_id, 0x77, "the same session");
    drop(refusing);
    // Then back to the first, which is up to date.
    let (server, stream) = bounded(h.pipes.recv()).await.unwrap();
    assert_eq!(server, first);
    let (peer, last) = Peer::accept(stream, 0x77).await;
    assert_eq!(last, 0x501);
    h.peer = peer;
    bounded(h.works()).await;
}

#[tokio::test]
async fn an_expired_session_is_reported_by_the_handshake() {
    let mut h = start("zk:1").await;
    let (_, watch) = {
        let watched = h.session.exists_watched("/w");
        let request = h.peer.request().await;
        h.peer
            .framed
            .send(ServerFrame::Reply(ReplyFrame::error(
                request.header.xid,
                1,
                ErrorCode::NoNode,
            )))
            .await
            .unwrap();
        watched.await.unwrap()
    };
    h.hang_up();
    let (_, stream) = bounded(h.pipes.recv()).await.unwrap();
    let mut framed = Framed::new(stream, ServerCodec::new());
    let _ = framed.next().await;
    framed
        .send(ServerFrame::Connected(ConnectResponse {
            protocol_version: 0,
            timeout: 0,
            session_id: 0,
            passwd: vec![0; 16],
            read_only: Some(false),
        }))
        .await
        .unwrap();
    let event = bounded(watch.changed()).await;
    assert_eq!(event.state, KeeperState::Expired);
    assert_eq!(h.session.state(), SessionState::Expired);
    assert_eq!(h.session.get_data("/a").await, Err(Error::SessionExpired));
}

/// The watch set by a request is in place before its reply is handed out, and a
/// notification that comes before a later reply reaches its watcher first.
#[tokio::test]
async fn notifications_reach_watchers_before_later_replies() {
    let mut h = start("zk:1").await;
    let watched = h.session.get_data_watched("/w");
    let request = h.peer.request().await;
    h.peer.reply(&request, data(b"v1")).await;
    let (_, watch) = watched.await.unwrap();
    let read = h.session.get_data("/w");
    let request = h.peer.request().await;
    h.peer
        .framed
        .send(ServerFrame::Reply(ReplyFrame::notification(
            0x300,
            &WatcherEvent {
                event_type: EventType::NodeDataChanged,
                state: KeeperState::SyncConnected,
                path: "/w".into(),
            },
        )))
        .await
        .unwrap();
    h.peer.reply(&request, data(b"v2")).await;
    assert_eq!(read.await.unwrap().0, b"v2");
    use futures::FutureExt;
    let event = watch.changed().now_or_never().expect("already delivered");
    assert_eq!(
        (event.event_type, event.zxid),
        (EventType::NodeDataChanged, Some(0x300))
    );
}
