//! A raw ZooKeeper client over curator-wire's codec: one request at a time, every frame the
//! server sends recorded as it came (no retries, no reconnects, no watch bookkeeping), so the
//! comparison sees exactly what each server sent.

use std::collections::VecDeque;
use std::time::Duration;

use curator_wire::codec::{ClientCodec, ClientFrame, RequestFrame, ServerFrame};
use curator_wire::proto::{
    AUTH_XID, ConnectRequest, ConnectResponse, ErrorCode, NOTIFICATION_XID, OpCode, PING_XID,
    Request, Response, WatcherEvent,
};
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// One thing a connection received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// The handshake's answer.
    Connected(ConnectResponse),
    /// A reply (a ping's too).
    Reply {
        xid: i32,
        zxid: i64,
        result: Result<Response, ErrorCode>,
    },
    /// A watch notification, with the zxid of its header.
    Event { zxid: i64, event: WatcherEvent },
    /// The server closed the connection.
    Closed,
    /// A frame the client could not read (kept as text, so the comparison reports it).
    Garbled(String),
}

/// A connection and the session it carries.
pub(crate) struct Client {
    framed: Option<Framed<TcpStream, ClientCodec>>,
    pending: VecDeque<(i32, OpCode)>,
    next_xid: i32,
    pub(crate) session_id: i64,
    pub(crate) password: Vec<u8>,
    wait: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({:#x})", self.session_id)
    }
}

impl Client {
    /// Connects to `address` and opens a new session asking for `timeout_ms`.
    pub(crate) async fn connect(address: &str, timeout_ms: i32, wait: Duration) -> (Client, Item) {
        let stream = TcpStream::connect(address)
            .await
            .unwrap_or_else(|error| panic!("connecting to {address}: {error}"));
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut framed = Framed::new(stream, ClientCodec::new());
        framed
            .send(ClientFrame::Connect(ConnectRequest::new_session(
                timeout_ms, false,
            )))
            .await
            .expect("sending the handshake");
        let mut client = Client {
            framed: Some(framed),
            pending: VecDeque::new(),
            next_xid: 1,
            session_id: 0,
            password: Vec::new(),
            wait,
        };
        let item = client.next_item().await;
        if let Item::Connected(response) = &item {
            client.session_id = response.session_id;
            client.password = response.passwd.clone();
        }
        (client, item)
    }

    /// Whether the connection is still open.
    pub(crate) fn is_open(&self) -> bool {
        self.framed.is_some()
    }

    /// Drops the connection (the session lives on in the server).
    pub(crate) fn drop_connection(&mut self) {
        self.framed = None;
        self.pending.clear();
    }

    /// Sends `request` and reads until its reply (or the end of the connection): what came
    /// before the reply, then the reply.
    pub(crate) async fn call(&mut self, request: &Request) -> Vec<Item> {
        let xid = match request {
            Request::Ping => PING_XID,
            Request::Auth(_) => AUTH_XID,
            _ => {
                let xid = self.next_xid;
                self.next_xid += 1;
                xid
            }
        };
        let Some(framed) = self.framed.as_mut() else {
            return vec![Item::Closed];
        };
        self.pending.push_back((xid, request.op_code()));
        if framed
            .send(ClientFrame::Request(RequestFrame::new(xid, request)))
            .await
            .is_err()
        {
            self.drop_connection();
            return vec![Item::Closed];
        }
        let mut items = Vec::new();
        loop {
            let item = self.next_item().await;
            let done = match &item {
                Item::Reply { xid: got, .. } => *got == xid,
                Item::Closed | Item::Garbled(_) => true,
                _ => false,
            };
            items.push(item);
            if done {
                return items;
            }
        }
    }

    /// Reads until the server closes the connection (after a closeSession).
    pub(crate) async fn until_closed(&mut self) -> Vec<Item> {
        let mut items = Vec::new();
        while self.framed.is_some() {
            items.push(self.next_item().await);
        }
        items
    }

    async fn next_item(&mut self) -> Item {
        let Some(framed) = self.framed.as_mut() else {
            return Item::Closed;
        };
        let frame = match tokio::time::timeout(self.wait, framed.next()).await {
            Err(_) => panic!(
                "session {:#x}: no frame from the server within {:?} (pending {:?})",
                self.session_id, self.wait, self.pending
            ),
            Ok(frame) => frame,
        };
        match frame {
            None | Some(Err(_)) => {
                self.drop_connection();
                Item::Closed
            }
            Some(Ok(ServerFrame::Connected(response))) => Item::Connected(response),
            Some(Ok(ServerFrame::Reply(reply))) => {
                let header = reply.header;
                if header.xid == NOTIFICATION_XID {
                    return match reply.decode_event() {
                        Ok(event) => Item::Event {
                            zxid: header.zxid,
                            event,
                        },
                        Err(error) => Item::Garbled(format!("notification: {error}")),
                    };
                }
                let op = match self.pending.front() {
                    Some((xid, op)) if *xid == header.xid => *op,
                    _ => {
                        return Item::Garbled(format!(
                            "reply with xid {} while waiting for {:?}",
                            header.xid, self.pending
                        ));
                    }
                };
                self.pending.pop_front();
                match reply.decode(op) {
                    Ok(result) => Item::Reply {
                        xid: header.xid,
                        zxid: header.zxid,
                        result,
                    },
                    Err(error) => Item::Garbled(format!("reply to {op:?}: {error}")),
                }
            }
        }
    }
}
