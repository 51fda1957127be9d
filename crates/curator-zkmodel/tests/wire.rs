//! The front over an in-memory pipe, frame by frame, on paused time: the handshake, pings, an
//! unreadable body, expiry on Tokio's clock and the refusal of an expired session.

use std::time::Duration;

use bytes::Bytes;
use curator_wire::codec::{ClientCodec, ClientFrame, RequestFrame, ServerFrame};
use curator_wire::proto::{
    Acl, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, CreateResponse, ErrorCode,
    OpCode, PING_XID, Request, RequestHeader, Response,
};
use curator_zkmodel::{ModelConfig, Server};
use futures::{SinkExt, StreamExt};
use tokio::io::DuplexStream;
use tokio_util::codec::Framed;

type Client = Framed<DuplexStream, ClientCodec>;

/// A pipe to `server`, served on a task, and the handshake's answer.
async fn attach(
    server: &Server,
    hello: ConnectRequest,
) -> (Client, ConnectResponse, tokio::task::JoinHandle<()>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(server_io, "127.0.0.1").await.expect("served") }
    });
    let mut client = Framed::new(client_io, ClientCodec::new());
    client.send(ClientFrame::Connect(hello)).await.unwrap();
    let Some(Ok(ServerFrame::Connected(response))) = client.next().await else {
        panic!("no handshake answer")
    };
    (client, response, serving)
}

async fn call(client: &mut Client, xid: i32, request: &Request) -> Result<Response, ErrorCode> {
    client
        .send(ClientFrame::Request(RequestFrame::new(xid, request)))
        .await
        .unwrap();
    let Some(Ok(ServerFrame::Reply(reply))) = client.next().await else {
        panic!("no reply")
    };
    assert_eq!(reply.header.xid, xid);
    reply.decode(request.op_code()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_session_lapses_on_tokio_time_and_cannot_be_resumed() {
    let server = Server::new(ModelConfig::default().tick_time(100));
    let (mut client, response, serving) =
        attach(&server, ConnectRequest::new_session(1_000, false)).await;
    assert_eq!(
        (response.timeout, response.passwd.len(), response.read_only),
        (1_000, 16, Some(false))
    );

    let create = Request::Create(CreateRequest {
        path: "/e".into(),
        data: Vec::new(),
        acl: Acl::open_unsafe(),
        mode: CreateMode::Ephemeral,
    });
    assert_eq!(
        call(&mut client, 1, &create).await,
        Ok(Response::Create(CreateResponse { path: "/e".into() }))
    );
    assert_eq!(
        call(&mut client, PING_XID, &Request::Ping).await,
        Ok(Response::Empty)
    );

    // A body the server cannot read is answered, and the connection goes on.
    let unreadable = RequestFrame {
        header: RequestHeader {
            xid: 2,
            op_code: OpCode::GetData,
        },
        body: Bytes::from_static(&[0, 0, 0, 9]),
    };
    client.send(ClientFrame::Request(unreadable)).await.unwrap();
    let Some(Ok(ServerFrame::Reply(reply))) = client.next().await else {
        panic!()
    };
    assert_eq!(
        (reply.header.xid, reply.header.err),
        (2, ErrorCode::MarshallingError)
    );
    assert_eq!(
        call(&mut client, PING_XID, &Request::Ping).await,
        Ok(Response::Empty)
    );

    // Nothing heard for longer than the timeout (rounded up to the tick): the session
    // expires at the next check, its connection closes and its ephemeral goes.
    tokio::time::advance(Duration::from_millis(1_000)).await;
    server.tick();
    assert!(
        server.with_model(|model| model.node("/e").is_some()),
        "not yet"
    );
    tokio::time::advance(Duration::from_millis(100)).await;
    server.tick();
    assert!(
        client.next().await.is_none(),
        "the server closed the connection"
    );
    serving.await.unwrap();
    assert!(server.with_model(|model| model.node("/e").is_none()));

    let mut resume = ConnectRequest::new_session(1_000, false);
    resume.session_id = response.session_id;
    resume.passwd = response.passwd.clone();
    let (mut client, refused, serving) = attach(&server, resume).await;
    assert_eq!((refused.timeout, refused.session_id), (0, 0));
    assert!(client.next().await.is_none(), "closed after the refusal");
    serving.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_resumed_session_closes_its_previous_connection() {
    let server = Server::new(ModelConfig::default());
    let (mut first, response, first_serving) =
        attach(&server, ConnectRequest::new_session(10_000, false)).await;
    let mut resume = ConnectRequest::new_session(10_000, false);
    resume.session_id = response.session_id;
    resume.passwd = response.passwd.clone();
    let (mut second, resumed, _serving) = attach(&server, resume).await;
    assert_eq!(resumed.session_id, response.session_id);
    assert!(first.next().await.is_none());
    first_serving.await.unwrap();
    assert_eq!(
        call(&mut second, PING_XID, &Request::Ping).await,
        Ok(Response::Empty)
    );
}
