//! A raw ZooKeeper client over curator-wire's codec: one request at a time, every frame the
//! server sends recorded as it came (no retries, no reconnects, no watch bookkeeping), so the
//! comparison sees exactly what each server sent.

use std::collections::VecDeque;
use std::time::Duration;

use curator_wire::codec::{ClientCodec, ClientFrame, RequestFrame, ServerFrame};
use curator_wire::proto::{
    AUTH_XID, ConnectRequest, ConnectResponse, ErrorCode, NOTIFICATION_XID, OpCode, PING_XID,
    Request, Response, SET_WATCHES_XID, WatcherEvent,
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
    /// The negotiated session timeout.
    timeout_ms: i32,
    /// The highest zxid of a reply so far (what a reconnect says it has seen).
    pub(crate) last_zxid: i64,
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
        let mut client = Client {
            framed: None,
            pending: VecDeque::new(),
            next_xid: 1,
            session_id: 0,
            password: Vec::new(),
            timeout_ms,
            last_zxid: 0,
            wait,
        };
        let item = client
            .handshake(address, ConnectRequest::new_session(timeout_ms, false))
            .await;
        (client, item)
    }

    /// Drops the connection and takes the session up again on a new one to `address`, as a
    /// client does after a connection loss (its id, password and last zxid seen).
    pub(crate) async fn reconnect(&mut self, address: &str) -> Item {
        self.drop_connection();
        let request = ConnectRequest {
            last_zxid_seen: self.last_zxid,
            session_id: self.session_id,
            passwd: self.password.clone(),
            ..ConnectRequest::new_session(self.timeout_ms, false)
        };
        self.handshake(address, request).await
    }

    async fn handshake(&mut self, address: &str, request: ConnectRequest) -> Item {
        let stream = TcpStream::connect(address)
            .await
            .unwrap_or_else(|error| panic!("connecting to {address}: {error}"));
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut framed = Framed::new(stream, ClientCodec::new());
        framed
            .send(ClientFrame::Connect(request))
            .await
            .expect("sending the handshake");
        self.framed = Some(framed);
        let item = self.next_item().await;
        if let Item::Connected(response) = &item {
            self.session_id = response.session_id;
            self.password = response.passwd.clone();
            self.timeout_ms = response.timeout;
        }
        item
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
            Request::SetWatches2(_) | Request::SetWatches(_) => SET_WATCHES_XID,
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
                self.last_zxid = self.last_zxid.max(header.zxid);
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
