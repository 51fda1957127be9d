//! The deterministic core: a single ZooKeeper server's state and its answers, with no I/O and
//! no clock of its own (every call takes `now`).

use std::collections::{BTreeMap, BTreeSet};

use curator_wire::proto::{
    Acl, AddWatchMode, ClientInfo, ConnectRequest, ConnectResponse, Create2Response, CreateMode,
    CreateResponse, ErrorCode, ErrorResponse, EventType, GetAclResponse,
    GetAllChildrenNumberResponse, GetChildren2Response, GetChildrenResponse, GetDataResponse,
    GetEphemeralsResponse, Id, KeeperState, MultiOp, MultiReadOp, MultiReadResponse,
    MultiReadResult, MultiResponse, MultiResult, NEW_SESSION_PASSWORD_LEN, Perms, Request,
    Response, SetSaslResponse, SetWatches2, Stat, SyncResponse, WatcherEvent, WatcherType,
    WhoAmIResponse,
};

use crate::acl;
use crate::config::{ModelConfig, ServerRelease};
use crate::path;
use crate::tree::{self, Kind, Node, Persisted, Tree};
use crate::watch::{Mode, Watches};

/// A client connection to the model, as [`Model::connect`] hands it out. Watches and
/// authentication belong to a connection (as on a ZooKeeper server); a session outlives its
/// connections.
///
/// ```
/// use curator_wire::proto::ConnectRequest;
/// use curator_zkmodel::{Connect, Model, ModelConfig};
///
/// let mut model = Model::new(ModelConfig::default(), 0);
/// let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "127.0.0.1") else { panic!() };
/// assert_eq!(connection.get(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnectionId(pub(crate) u64);

impl ConnectionId {
    /// The number (connections are numbered from 1 in the order they are made).
    ///
    /// ```
    /// # use curator_wire::proto::ConnectRequest;
    /// # use curator_zkmodel::{Connect, Model, ModelConfig};
    /// # let mut model = Model::new(ModelConfig::default(), 0);
    /// # let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "127.0.0.1") else { panic!() };
    /// assert!(connection.get() > 0);
    /// ```
    pub fn get(self) -> u64 {
        self.0
    }
}

/// The answer to one request.
///
/// ```
/// use curator_wire::proto::{ErrorCode, Response};
/// use curator_zkmodel::Reply;
///
/// let reply = Reply { xid: 1, zxid: 5, result: Err(ErrorCode::NoNode) };
/// assert!(reply.result.is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The request's xid (the reserved xids for ping, auth and setWatches).
    pub xid: i32,
    /// The zxid in the reply header: the last zxid the server applied (for a write, its own).
    pub zxid: i64,
    /// The body, or the error code of the header.
    pub result: Result<Response, ErrorCode>,
}

/// What the model sends a connection.
///
/// ```
/// use curator_zkmodel::Message;
///
/// assert!(matches!(Message::Close, Message::Close));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Message {
    /// A reply.
    Reply(Reply),
    /// A watch notification; `zxid` is the change's (-1 for events of a setWatches, as the
    /// server sends them).
    Notification {
        /// The zxid for the notification's header.
        zxid: i64,
        /// The event.
        event: WatcherEvent,
    },
    /// The server closes the connection (after whatever was sent before it).
    Close,
}

/// A message for one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// To whom.
    pub connection: ConnectionId,
    /// What.
    pub message: Message,
}

/// Everything one call to the model sends, in the order a ZooKeeper server sends it: a
/// watch event precedes the reply of the request that caused it.
///
/// ```
/// use curator_wire::proto::{ConnectRequest, ExistsRequest, Request};
/// use curator_zkmodel::{Connect, Model, ModelConfig};
///
/// let mut model = Model::new(ModelConfig::default(), 0);
/// let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "127.0.0.1") else { panic!() };
/// let outcome = model.handle(0, connection, 1, Request::Exists(ExistsRequest { path: "/".into(), watch: false }));
/// assert!(outcome.reply_to(connection).unwrap().result.is_ok());
/// assert!(outcome.events_to(connection).is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The messages, in order.
    pub deliveries: Vec<Delivery>,
}

impl Outcome {
    fn push(&mut self, connection: ConnectionId, message: Message) {
        self.deliveries.push(Delivery {
            connection,
            message,
        });
    }

    /// The reply sent to `connection`, if any.
    ///
    /// ```
    /// use curator_zkmodel::Outcome;
    ///
    /// # let connection = { use curator_wire::proto::ConnectRequest; use curator_zkmodel::*; let mut m = Model::new(ModelConfig::default(), 0); let Connect::Accepted { connection, .. } = m.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() }; connection };
    /// assert!(Outcome::default().reply_to(connection).is_none());
    /// ```
    pub fn reply_to(&self, connection: ConnectionId) -> Option<&Reply> {
        self.deliveries
            .iter()
            .find_map(|delivery| match &delivery.message {
                Message::Reply(reply) if delivery.connection == connection => Some(reply),
                _ => None,
            })
    }

    /// The watch events sent to `connection`, in order.
    ///
    /// ```
    /// use curator_zkmodel::Outcome;
    ///
    /// # let connection = { use curator_wire::proto::ConnectRequest; use curator_zkmodel::*; let mut m = Model::new(ModelConfig::default(), 0); let Connect::Accepted { connection, .. } = m.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() }; connection };
    /// assert!(Outcome::default().events_to(connection).is_empty());
    /// ```
    pub fn events_to(&self, connection: ConnectionId) -> Vec<&WatcherEvent> {
        self.deliveries
            .iter()
            .filter(|delivery| delivery.connection == connection)
            .filter_map(|delivery| match &delivery.message {
                Message::Notification { event, .. } => Some(event),
                _ => None,
            })
            .collect()
    }

    /// Whether `connection` is closed by this outcome.
    ///
    /// ```
    /// use curator_zkmodel::Outcome;
    ///
    /// # let connection = { use curator_wire::proto::ConnectRequest; use curator_zkmodel::*; let mut m = Model::new(ModelConfig::default(), 0); let Connect::Accepted { connection, .. } = m.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() }; connection };
    /// assert!(!Outcome::default().closes(connection));
    /// ```
    pub fn closes(&self, connection: ConnectionId) -> bool {
        self.deliveries
            .iter()
            .any(|delivery| delivery.connection == connection && delivery.message == Message::Close)
    }
}

/// The answer to a connect request.
///
/// ```
/// use curator_wire::proto::ConnectRequest;
/// use curator_zkmodel::{Connect, Model, ModelConfig};
///
/// let mut model = Model::new(ModelConfig::default(), 0);
/// let mut resume = ConnectRequest::new_session(10_000, false);
/// resume.session_id = 42;
/// let Connect::Refused { response, .. } = model.connect(0, &resume, "127.0.0.1") else { panic!() };
/// assert_eq!(response.timeout, 0, "the session has expired (or never was)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Connect {
    /// A new or resumed session on a new connection: send `response`.
    Accepted {
        /// The new connection.
        connection: ConnectionId,
        /// The handshake's answer.
        response: ConnectResponse,
        /// Messages for other connections (a resumed session's previous connection is
        /// closed).
        others: Outcome,
    },
    /// The session is unknown, expired or the password is wrong: send `response` (timeout 0,
    /// session 0), then close.
    Refused {
        /// The handshake's answer.
        response: ConnectResponse,
        /// Messages for other connections (the session's previous connection is closed even
        /// so, as the server does).
        others: Outcome,
    },
    /// The client has seen a zxid this server has not: close without an answer (the client
    /// tries another server).
    Dropped,
}

/// A session as the server tracks it.
#[derive(Debug, Clone)]
struct Session {
    password: Vec<u8>,
    timeout: i64,
    expires_at: i64,
    connection: Option<ConnectionId>,
}

/// A connection's state.
#[derive(Debug, Clone)]
struct Connection {
    session: i64,
    peer: String,
    auth: Vec<Id>,
}

/// What a change fires, recorded while a transaction runs and fired once it is applied.
#[derive(Debug)]
enum Fire {
    Created {
        path: String,
        acl: Vec<Acl>,
        parent: String,
        parent_acl: Vec<Acl>,
    },
    Deleted {
        path: String,
        acl: Vec<Acl>,
        parent: String,
        parent_acl: Vec<Acl>,
    },
    Changed {
        path: String,
        acl: Vec<Acl>,
    },
}

/// Who asks, and the transaction's zxid and time.
#[derive(Debug)]
struct Ctx {
    now: i64,
    zxid: i64,
    session: i64,
    auth: Vec<Id>,
}

/// How a create request came (the opcode decides what the tree stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Plain,
    Container,
    Ttl,
}

/// One create, from any of the four opcodes.
struct CreateOp<'a> {
    path: &'a str,
    data: &'a [u8],
    acl: &'a [Acl],
    mode: CreateMode,
    ttl: i64,
    how: How,
}

/// A single ZooKeeper server: its data tree, sessions, connections and watches.
///
/// Every method takes `now`, the time in milliseconds (since the Unix epoch for stats that
/// look like a real server's; any origin works), which must not go backwards. Nothing happens
/// between calls: sessions expire and containers are reaped only in [`tick`](Model::tick)
/// (or [`expire_sessions`](Model::expire_sessions) and [`reap`](Model::reap)).
///
/// ```
/// use curator_wire::proto::{Acl, ConnectRequest, CreateMode, CreateRequest, GetDataRequest, Request, Response};
/// use curator_zkmodel::{Connect, Model, ModelConfig};
///
/// let mut model = Model::new(ModelConfig::default(), 1_000);
/// let Connect::Accepted { connection, response, .. } =
///     model.connect(1_000, &ConnectRequest::new_session(10_000, false), "127.0.0.1") else { panic!() };
/// assert_eq!(response.timeout, 10_000);
///
/// let create = CreateRequest { path: "/job-".into(), data: b"x".to_vec(), acl: Acl::open_unsafe(), mode: CreateMode::PersistentSequential };
/// let outcome = model.handle(1_001, connection, 1, Request::Create(create));
/// assert_eq!(outcome.reply_to(connection).unwrap().result, Ok(Response::Create(curator_wire::proto::CreateResponse { path: "/job-0000000000".into() })));
///
/// let outcome = model.handle(1_002, connection, 2, Request::GetData(GetDataRequest { path: "/job-0000000000".into(), watch: false }));
/// let Ok(Response::GetData(read)) = &outcome.reply_to(connection).unwrap().result else { panic!() };
/// assert_eq!((read.data.as_slice(), read.stat.czxid, read.stat.ctime), (&b"x"[..], 2, 1_001));
/// ```
#[derive(Debug)]
pub struct Model {
    config: ModelConfig,
    tree: Tree,
    data_watches: Watches,
    child_watches: Watches,
    sessions: BTreeMap<i64, Session>,
    connections: BTreeMap<ConnectionId, Connection>,
    zxid: i64,
    next_session_id: i64,
    next_connection: u64,
}

impl Model {
    /// A server that starts at `now` with an empty tree (`/`, `/zookeeper`, `/zookeeper/quota`
    /// and `/zookeeper/config`) and zxid 0. Session ids start where a ZooKeeper server's
    /// would at that time: `(now << 24 >>> 8) | server_id << 56`.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// let model = Model::new(ModelConfig::default(), 0);
    /// assert_eq!(model.last_zxid(), 0);
    /// ```
    pub fn new(config: ModelConfig, now: i64) -> Model {
        let mut next_session_id =
            (((now as u64) << 24) >> 8) as i64 | (i64::from(config.server_id) << 56);
        if next_session_id == tree::CONTAINER_OWNER || next_session_id == 0 {
            next_session_id += 1;
        }
        let single_mode = config.release == ServerRelease::V3_8;
        Model {
            tree: Tree::new(config.extended_types, config.config_data.clone()),
            config,
            data_watches: Watches::new(single_mode),
            child_watches: Watches::new(single_mode),
            sessions: BTreeMap::new(),
            connections: BTreeMap::new(),
            zxid: 0,
            next_session_id,
            next_connection: 1,
        }
    }

    /// The configuration.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// assert_eq!(Model::new(ModelConfig::default(), 0).config().tick(), 2_000);
    /// ```
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Whether the model answers as ZooKeeper 3.8.0.
    fn is_3_8(&self) -> bool {
        self.config.release == ServerRelease::V3_8
    }

    /// The zxid of the last transaction applied (every write request, failed or not, every
    /// multi, session creation and close, container reaping, is one).
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// model.connect(0, &ConnectRequest::new_session(10_000, false), "127.0.0.1");
    /// assert_eq!(model.last_zxid(), 1, "createSession is a transaction");
    /// ```
    pub fn last_zxid(&self) -> i64 {
        self.zxid
    }

    /// The live sessions' ids, in order.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// assert!(Model::new(ModelConfig::default(), 0).session_ids().is_empty());
    /// ```
    pub fn session_ids(&self) -> Vec<i64> {
        self.sessions.keys().copied().collect()
    }

    /// A live session's negotiated timeout and the time it expires at unless touched.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { response, .. } = model.connect(500, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// // Expiry is rounded up to the next tick (2000 ms) after now + timeout.
    /// assert_eq!(model.session_deadline(response.session_id), Some((10_000, 12_000)));
    /// ```
    pub fn session_deadline(&self, session: i64) -> Option<(i64, i64)> {
        self.sessions
            .get(&session)
            .map(|session| (session.timeout, session.expires_at))
    }

    /// The earliest time a session expires at, if any session lives.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// assert_eq!(Model::new(ModelConfig::default(), 0).next_expiry(), None);
    /// ```
    pub fn next_expiry(&self) -> Option<i64> {
        self.sessions
            .values()
            .map(|session| session.expires_at)
            .min()
    }

    /// A node's data and stat, as getData would read them (without ACL checks).
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// let model = Model::new(ModelConfig::default(), 0);
    /// assert_eq!(model.node("/zookeeper").unwrap().1.num_children, 2);
    /// assert!(model.node("/missing").is_none());
    /// ```
    pub fn node(&self, path: &str) -> Option<(Vec<u8>, Stat)> {
        self.tree
            .get(path)
            .map(|node| (node.data.clone(), node.stat(self.tree.extended())))
    }

    /// A node's children's names, sorted.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// let model = Model::new(ModelConfig::default(), 0);
    /// assert_eq!(model.children("/").unwrap(), ["zookeeper"]);
    /// ```
    pub fn children(&self, path: &str) -> Option<Vec<String>> {
        self.tree
            .get(path)
            .map(|node| node.children.iter().cloned().collect())
    }

    fn round_up(&self, time: i64) -> i64 {
        let tick = self.config.tick_time;
        (time.div_euclid(tick) + 1) * tick
    }

    fn negotiate(&self, requested: i32) -> i64 {
        let min = self.config.min_session_timeout();
        let max = self.config.max_session_timeout();
        let mut timeout = i64::from(requested);
        if timeout < min {
            timeout = min;
        }
        if timeout > max {
            timeout = max;
        }
        timeout
    }

    /// A client's handshake from `peer` (its address, which becomes the connection's `ip`
    /// identity).
    ///
    /// A new session (id 0) is a transaction; resuming one checks its password, closes its
    /// previous connection and renews it. The timeout is negotiated within the configured
    /// bounds; `readOnly` is answered `false` when the client sent it.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, response, .. } = model.connect(0, &ConnectRequest::new_session(100, false), "h") else { panic!() };
    /// assert_eq!(response.timeout, 4_000, "raised to two ticks");
    ///
    /// let mut again = ConnectRequest::new_session(100, false);
    /// again.session_id = response.session_id;
    /// again.passwd = response.passwd.clone();
    /// let Connect::Accepted { others, .. } = model.connect(10, &again, "h") else { panic!() };
    /// assert!(others.closes(connection), "the previous connection is closed");
    /// ```
    pub fn connect(&mut self, now: i64, request: &ConnectRequest, peer: &str) -> Connect {
        if request.last_zxid_seen > self.zxid {
            return Connect::Dropped;
        }
        let timeout = self.negotiate(request.timeout);
        let read_only = request.read_only.map(|_| false);
        let mut others = Outcome::default();
        let session_id = if request.session_id == 0 {
            let id = self.next_session_id;
            self.next_session_id += 1;
            if self.next_session_id == tree::CONTAINER_OWNER || self.next_session_id == 0 {
                self.next_session_id += 1;
            }
            self.zxid += 1;
            self.sessions.insert(
                id,
                Session {
                    password: password(id),
                    timeout,
                    expires_at: self.round_up(now + timeout),
                    connection: None,
                },
            );
            id
        } else {
            let id = request.session_id;
            if let Some(old) = self.sessions.get_mut(&id).and_then(|s| s.connection.take()) {
                self.drop_connection(old);
                others.push(old, Message::Close);
            }
            let valid = self
                .sessions
                .get(&id)
                .is_some_and(|session| session.password == request.passwd);
            if !valid {
                return Connect::Refused {
                    response: ConnectResponse {
                        protocol_version: 0,
                        timeout: 0,
                        session_id: 0,
                        passwd: vec![0; NEW_SESSION_PASSWORD_LEN],
                        read_only,
                    },
                    others,
                };
            }
            let expires_at = self.round_up(now + timeout);
            if let Some(session) = self.sessions.get_mut(&id) {
                session.timeout = timeout;
                session.expires_at = session.expires_at.max(expires_at);
            }
            id
        };
        let connection = ConnectionId(self.next_connection);
        self.next_connection += 1;
        self.connections.insert(
            connection,
            Connection {
                session: session_id,
                peer: peer.to_owned(),
                auth: vec![Id::new("ip", peer)],
            },
        );
        let session = self
            .sessions
            .get_mut(&session_id)
            .expect("the session was just made or checked");
        session.connection = Some(connection);
        Connect::Accepted {
            connection,
            response: ConnectResponse {
                protocol_version: 0,
                timeout: i32::try_from(timeout).unwrap_or(i32::MAX),
                session_id,
                passwd: session.password.clone(),
                read_only,
            },
            others,
        }
    }

    /// The connection ended (its transport closed): its watches and authentication go; the
    /// session lives on until it expires or a new connection resumes it.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// model.disconnect(connection);
    /// assert_eq!(model.session_ids().len(), 1);
    /// ```
    pub fn disconnect(&mut self, connection: ConnectionId) {
        if let Some(gone) = self.connections.get(&connection) {
            let session = gone.session;
            if let Some(session) = self.sessions.get_mut(&session) {
                if session.connection == Some(connection) {
                    session.connection = None;
                }
            }
        }
        self.drop_connection(connection);
    }

    fn drop_connection(&mut self, connection: ConnectionId) {
        self.connections.remove(&connection);
        self.data_watches.remove_connection(connection);
        self.child_watches.remove_connection(connection);
    }

    /// As a server restart that keeps its data: every connection closes (watches and
    /// authentication go with them), and every session is tracked again from `now` with its
    /// whole timeout, as a ZooKeeper server does with the sessions it loads.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, response, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// assert!(model.restart(9_000).closes(connection));
    /// assert_eq!(model.session_deadline(response.session_id), Some((10_000, 20_000)));
    /// ```
    pub fn restart(&mut self, now: i64) -> Outcome {
        let mut outcome = Outcome::default();
        for connection in self.connections.keys() {
            outcome.push(*connection, Message::Close);
        }
        self.connections.clear();
        let single_mode = self.is_3_8();
        self.data_watches = Watches::new(single_mode);
        self.child_watches = Watches::new(single_mode);
        let tick = self.config.tick_time;
        for session in self.sessions.values_mut() {
            session.connection = None;
            session.expires_at = ((now + session.timeout).div_euclid(tick) + 1) * tick;
        }
        outcome
    }

    fn touch(&mut self, session: i64, now: i64) {
        let tick = self.config.tick_time;
        if let Some(session) = self.sessions.get_mut(&session) {
            let expires_at = ((now + session.timeout).div_euclid(tick) + 1) * tick;
            session.expires_at = session.expires_at.max(expires_at);
        }
    }

    /// Expires the sessions whose deadline has passed (`now` at or after it), then reaps
    /// containers and TTL nodes ([`reap`](Model::reap)).
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// assert!(!model.tick(11_999).closes(connection));
    /// assert!(model.tick(12_000).closes(connection));
    /// assert!(model.session_ids().is_empty());
    /// ```
    pub fn tick(&mut self, now: i64) -> Outcome {
        let mut outcome = self.expire_sessions(now);
        outcome.deliveries.extend(self.reap(now).deliveries);
        outcome
    }

    /// Expires the sessions whose deadline has passed: each is closed as by closeSession (a
    /// transaction that deletes its ephemeral nodes), and its connection, if any, is closed.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// assert!(Model::new(ModelConfig::default(), 0).expire_sessions(1_000_000).deliveries.is_empty());
    /// ```
    pub fn expire_sessions(&mut self, now: i64) -> Outcome {
        let due: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, session)| session.expires_at <= now)
            .map(|(id, _)| *id)
            .collect();
        let mut outcome = Outcome::default();
        for session in due {
            self.expire(session, &mut outcome);
        }
        outcome
    }

    /// Expires one session now, whatever its deadline (as the server does once it stopped
    /// hearing from it); `false` when there is no such session.
    ///
    /// ```
    /// use curator_wire::proto::ConnectRequest;
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, response, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// let (expired, outcome) = model.expire_session(response.session_id);
    /// assert!(expired && outcome.closes(connection));
    /// ```
    pub fn expire_session(&mut self, session: i64) -> (bool, Outcome) {
        let mut outcome = Outcome::default();
        let known = self.sessions.contains_key(&session);
        if known {
            self.expire(session, &mut outcome);
        }
        (known, outcome)
    }

    fn expire(&mut self, session: i64, outcome: &mut Outcome) {
        self.close_session(session, outcome);
        if let Some(connection) = self.sessions.remove(&session).and_then(|s| s.connection) {
            outcome.push(connection, Message::Close);
            self.drop_connection(connection);
        }
    }

    /// The closeSession transaction: deletes the session's ephemerals (in path order).
    fn close_session(&mut self, session: i64, outcome: &mut Outcome) {
        self.zxid += 1;
        let zxid = self.zxid;
        let paths: Vec<String> = self.tree.ephemerals(session).cloned().collect();
        let mut fires = Vec::new();
        for path in paths {
            self.remove_node(&path, zxid, &mut fires);
        }
        self.tree.commit();
        self.fire(zxid, fires, outcome);
    }

    /// Deletes empty containers that have had a child (or, when configured, were never used
    /// for longer than allowed) and TTL nodes without children left unchanged for longer than
    /// their TTL, as ZooKeeper's container manager does on each check: one transaction
    /// (deleteContainer) per node.
    ///
    /// ```
    /// use curator_zkmodel::{Model, ModelConfig};
    ///
    /// assert!(Model::new(ModelConfig::default(), 0).reap(0).deliveries.is_empty());
    /// ```
    pub fn reap(&mut self, now: i64) -> Outcome {
        let never_used = self.config.container_max_never_used;
        let mut candidates: Vec<String> = Vec::new();
        for path in self.tree.containers() {
            let Some(node) = self.tree.get(path) else {
                continue;
            };
            if !node.children.is_empty() {
                continue;
            }
            let used = node.stat.cversion > 0;
            let stale = never_used.is_some_and(|limit| limit > 0 && now - node.stat.mtime > limit);
            if used || stale {
                candidates.push(path.clone());
            }
        }
        for path in self.tree.ttls() {
            let Some(node) = self.tree.get(path) else {
                continue;
            };
            if let Kind::Ttl(ttl) = self.tree.kind(node) {
                if node.children.is_empty() && ttl != 0 && now - node.stat.mtime > ttl {
                    candidates.push(path.clone());
                }
            }
        }
        let mut outcome = Outcome::default();
        for path in candidates {
            self.zxid += 1;
            let zxid = self.zxid;
            let deletable = self.tree.get(&path).is_some_and(|node| {
                node.children.is_empty() && !matches!(self.tree.kind(node), Kind::Ephemeral(_))
            });
            if deletable && !tree::SPECIAL_PATHS.contains(&path.as_str()) {
                let mut fires = Vec::new();
                self.remove_node(&path, zxid, &mut fires);
                self.tree.commit();
                self.fire(zxid, fires, &mut outcome);
            }
        }
        outcome
    }

    /// One request of a connection (`xid` as in its header).
    ///
    /// Answers as a ZooKeeper 3.9 server in standalone mode: the same checks in the same
    /// order (and so the same error codes), one zxid per write request whether it succeeds
    /// or not, watch events before the reply that caused them, and for closeSession the
    /// reply followed by [`Message::Close`]. A request on a connection the model no longer
    /// has is answered with [`Message::Close`] only.
    ///
    /// ```
    /// use curator_wire::proto::{ConnectRequest, DeleteRequest, ErrorCode, Request};
    /// use curator_zkmodel::{Connect, Model, ModelConfig};
    ///
    /// let mut model = Model::new(ModelConfig::default(), 0);
    /// let Connect::Accepted { connection, .. } = model.connect(0, &ConnectRequest::new_session(10_000, false), "h") else { panic!() };
    /// let outcome = model.handle(1, connection, 7, Request::Delete(DeleteRequest { path: "/zookeeper".into(), version: -1 }));
    /// let reply = outcome.reply_to(connection).unwrap();
    /// assert_eq!((reply.xid, reply.zxid, reply.result.clone()), (7, 2, Err(ErrorCode::BadArguments)));
    /// ```
    pub fn handle(
        &mut self,
        now: i64,
        connection: ConnectionId,
        xid: i32,
        request: Request,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let Some(conn) = self.connections.get(&connection) else {
            outcome.push(connection, Message::Close);
            return outcome;
        };
        let (session, auth, peer) = (conn.session, conn.auth.clone(), conn.peer.clone());
        match request {
            Request::Auth(packet) => {
                let ids = acl::authenticate(
                    &packet.scheme,
                    &packet.auth,
                    &peer,
                    self.config.super_digest.as_deref(),
                );
                match ids {
                    Some(ids) => {
                        if let Some(conn) = self.connections.get_mut(&connection) {
                            for id in ids {
                                acl::add_identity(&mut conn.auth, id);
                            }
                        }
                        outcome.push(connection, reply(xid, 0, Ok(Response::Empty)));
                    }
                    None => {
                        outcome.push(connection, reply(xid, 0, Err(ErrorCode::AuthFailed)));
                        outcome.push(connection, Message::Close);
                        self.disconnect(connection);
                    }
                }
                return outcome;
            }
            Request::Sasl(_) => {
                // No SASL here: the exchange is answered with nothing, as by a server without
                // a SASL login configured.
                let token = Response::Sasl(SetSaslResponse { token: Vec::new() });
                outcome.push(connection, reply(xid, 0, Ok(token)));
                return outcome;
            }
            _ => {}
        }
        self.touch(session, now);
        let (zxid, result) = match request {
            Request::Ping => (self.zxid, Ok(Response::Empty)),
            Request::Create(create) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    let op = CreateOp::plain(&create);
                    m.create(ctx, &op, fires)
                        .map(|(path, _)| Response::Create(CreateResponse { path }))
                })
            }
            Request::Create2(create) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    let op = CreateOp::plain(&create);
                    m.create(ctx, &op, fires)
                        .map(|(path, stat)| Response::Create2(Create2Response { path, stat }))
                })
            }
            Request::CreateContainer(create) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    let op = CreateOp {
                        how: How::Container,
                        ..CreateOp::plain(&create)
                    };
                    m.create(ctx, &op, fires)
                        .map(|(path, stat)| Response::Create2(Create2Response { path, stat }))
                })
            }
            Request::CreateTtl(create) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    let op = CreateOp {
                        path: &create.path,
                        data: &create.data,
                        acl: &create.acl,
                        mode: create.mode,
                        ttl: create.ttl,
                        how: How::Ttl,
                    };
                    m.create(ctx, &op, fires)
                        .map(|(path, stat)| Response::Create2(Create2Response { path, stat }))
                })
            }
            Request::Delete(delete) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    m.delete(ctx, &delete.path, delete.version, fires)
                        .map(|()| Response::Empty)
                })
            }
            Request::SetData(set) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    m.set_data(ctx, &set.path, &set.data, set.version, fires)
                        .map(Response::Stat)
                })
            }
            Request::SetAcl(set) => self.write(now, session, &auth, &mut outcome, |m, ctx, _| {
                m.set_acl(ctx, &set.path, &set.acl, set.version)
                    .map(Response::Stat)
            }),
            Request::Multi(multi) => {
                self.write(now, session, &auth, &mut outcome, |m, ctx, fires| {
                    Ok(Response::Multi(m.multi(ctx, &multi.ops, fires)))
                })
            }
            Request::Reconfig(_) => self.write(now, session, &auth, &mut outcome, |_, _, _| {
                Err(ErrorCode::ReconfigDisabled)
            }),
            Request::Exists(exists) => (
                self.zxid,
                self.exists(connection, &auth, &exists.path, exists.watch),
            ),
            Request::GetData(get) => (
                self.zxid,
                self.get_data(connection, &auth, &get.path, get.watch)
                    .map(Response::GetData),
            ),
            Request::GetChildren(get) => (
                self.zxid,
                self.get_children(connection, &auth, &get.path, get.watch)
                    .map(|(children, _)| Response::GetChildren(GetChildrenResponse { children })),
            ),
            Request::GetChildren2(get) => (
                self.zxid,
                self.get_children(connection, &auth, &get.path, get.watch)
                    .map(|(children, stat)| {
                        Response::GetChildren2(GetChildren2Response { children, stat })
                    }),
            ),
            Request::GetAcl(get) => (self.zxid, self.get_acl(&auth, &get.path)),
            Request::GetAllChildrenNumber(get) => (self.zxid, self.all_children(&auth, &get.path)),
            Request::GetEphemerals(get) => (self.zxid, Ok(self.get_ephemerals(session, &get.path))),
            Request::Sync(sync) => (
                self.zxid,
                Ok(Response::Sync(SyncResponse { path: sync.path })),
            ),
            Request::MultiRead(read) => {
                // The steps' watch flags are ignored: the server reads a multiRead's steps
                // back as `Op.getData(path)` and `Op.getChildren(path)`, without them.
                let results = read
                    .ops
                    .iter()
                    .map(|op| match op {
                        MultiReadOp::GetData(get) => self
                            .get_data(connection, &auth, &get.path, false)
                            .map_or_else(MultiReadResult::Error, MultiReadResult::GetData),
                        MultiReadOp::GetChildren(get) => self
                            .get_children(connection, &auth, &get.path, false)
                            .map_or_else(MultiReadResult::Error, |(children, _)| {
                                MultiReadResult::GetChildren(GetChildrenResponse { children })
                            }),
                    })
                    .collect();
                (
                    self.zxid,
                    Ok(Response::MultiRead(MultiReadResponse { results })),
                )
            }
            Request::WhoAmI => {
                let client_info = auth
                    .iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.clone(),
                        user: acl::user_name(id),
                    })
                    .collect();
                (
                    self.zxid,
                    Ok(Response::WhoAmI(WhoAmIResponse { client_info })),
                )
            }
            Request::AddWatch(add) => {
                let mode = match add.mode {
                    AddWatchMode::Persistent => Mode::Persistent,
                    _ => Mode::Recursive,
                };
                self.add_watch(&add.path, connection, mode);
                (
                    self.zxid,
                    Ok(Response::AddWatch(ErrorResponse { err: ErrorCode::Ok })),
                )
            }
            Request::SetWatches(set) => {
                let set = SetWatches2 {
                    relative_zxid: set.relative_zxid,
                    data_watches: set.data_watches,
                    exist_watches: set.exist_watches,
                    child_watches: set.child_watches,
                    ..SetWatches2::default()
                };
                self.set_watches(connection, &set, &mut outcome);
                (self.zxid, Ok(Response::Empty))
            }
            Request::SetWatches2(set) => {
                self.set_watches(connection, &set, &mut outcome);
                (self.zxid, Ok(Response::Empty))
            }
            Request::CheckWatches(check) => {
                let found = self.has_watch(connection, &check.path, check.watcher_type);
                (
                    self.zxid,
                    found.and_then(|found| {
                        if found {
                            Ok(Response::Empty)
                        } else {
                            Err(ErrorCode::NoWatcher)
                        }
                    }),
                )
            }
            Request::RemoveWatches(remove) => {
                let removed = self.remove_watch(connection, &remove.path, remove.watcher_type);
                (
                    self.zxid,
                    removed.and_then(|removed| {
                        if removed {
                            Ok(Response::Empty)
                        } else {
                            Err(ErrorCode::NoWatcher)
                        }
                    }),
                )
            }
            Request::CloseSession => {
                self.close_session(session, &mut outcome);
                self.sessions.remove(&session);
                outcome.push(connection, reply(xid, self.zxid, Ok(Response::Empty)));
                outcome.push(connection, Message::Close);
                self.drop_connection(connection);
                return outcome;
            }
            Request::Auth(_) | Request::Sasl(_) => unreachable!("answered above"),
        };
        outcome.push(connection, reply(xid, zxid, result));
        outcome
    }

    /// Runs a write as one transaction: a new zxid, the change applied (or, on an error, taken
    /// back entirely) and its watches fired.
    fn write(
        &mut self,
        now: i64,
        session: i64,
        auth: &[Id],
        outcome: &mut Outcome,
        change: impl FnOnce(&mut Model, &Ctx, &mut Vec<Fire>) -> Result<Response, ErrorCode>,
    ) -> (i64, Result<Response, ErrorCode>) {
        self.zxid += 1;
        let ctx = Ctx {
            now,
            zxid: self.zxid,
            session,
            auth: auth.to_vec(),
        };
        let mut fires = Vec::new();
        let result = change(self, &ctx, &mut fires);
        if result.is_ok() {
            self.tree.commit();
            self.fire(ctx.zxid, fires, outcome);
        } else {
            self.tree.rollback();
        }
        (ctx.zxid, result)
    }

    fn create(
        &mut self,
        ctx: &Ctx,
        op: &CreateOp<'_>,
        fires: &mut Vec<Fire>,
    ) -> Result<(String, Stat), ErrorCode> {
        let ttl_mode = matches!(
            op.mode,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        );
        if ttl_mode && !self.config.extended_types {
            return Err(ErrorCode::Unimplemented);
        }
        if op.how == How::Ttl && !ttl_mode {
            // A real server refuses this only for a TTL of 0 or more; with a negative one it
            // accepts the request and then fails to apply it (the TTL cannot make an owner),
            // which stops ZooKeeper 3.8 and 3.9. The model refuses it.
            return Err(ErrorCode::BadArguments);
        }
        if ttl_mode {
            if op.ttl <= 0 || op.ttl > tree::MAX_TTL {
                return Err(ErrorCode::BadArguments);
            }
        } else if op.ttl >= 0 {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = path::parent(op.path).ok_or(ErrorCode::BadArguments)?;
        let acl = acl::fixup(op.acl, &ctx.auth)?;
        let parent = self.tree.get(parent_path).ok_or(ErrorCode::NoNode)?;
        acl::check(&parent.acl, Perms::CREATE, &ctx.auth)?;
        let path = if op.mode.is_sequential() {
            format!("{}{:010}", op.path, parent.stat.cversion)
        } else {
            op.path.to_owned()
        };
        if !path::is_valid(&path) {
            return Err(ErrorCode::BadArguments);
        }
        if self.tree.get(&path).is_some() {
            return Err(ErrorCode::NodeExists);
        }
        if matches!(self.tree.kind(parent), Kind::Ephemeral(_)) {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let parent_acl = parent.acl.clone();
        let kind = match op.how {
            How::Container => Kind::Container,
            How::Ttl => Kind::Ttl(op.ttl),
            How::Plain
                if matches!(
                    op.mode,
                    CreateMode::Ephemeral | CreateMode::EphemeralSequential
                ) =>
            {
                Kind::Ephemeral(ctx.session)
            }
            How::Plain => Kind::Persistent,
        };
        let parent_path = parent_path.to_owned();
        let zxid = ctx.zxid;
        self.tree.update_stat(&parent_path, |stat| {
            stat.cversion += 1;
            stat.pzxid = zxid;
        });
        let node = Node {
            data: op.data.to_vec(),
            acl: acl.clone(),
            stat: Persisted {
                czxid: zxid,
                mzxid: zxid,
                ctime: ctx.now,
                mtime: ctx.now,
                version: 0,
                cversion: 0,
                aversion: 0,
                owner: kind.owner(),
                pzxid: zxid,
            },
            children: BTreeSet::new(),
        };
        let stat = node.stat(self.tree.extended());
        self.tree.insert(&path, node);
        fires.push(Fire::Created {
            path: path.clone(),
            acl,
            parent: parent_path,
            parent_acl,
        });
        Ok((path, stat))
    }

    fn delete(
        &mut self,
        ctx: &Ctx,
        path: &str,
        version: i32,
        fires: &mut Vec<Fire>,
    ) -> Result<(), ErrorCode> {
        if tree::SPECIAL_PATHS.contains(&path) {
            return Err(ErrorCode::BadArguments);
        }
        let parent_path = path::parent(path).ok_or(ErrorCode::BadArguments)?;
        let parent = self.tree.get(parent_path).ok_or(ErrorCode::NoNode)?;
        acl::check(&parent.acl, Perms::DELETE, &ctx.auth)?;
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        check_version(node.stat.version, version)?;
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.remove_node(path, ctx.zxid, fires);
        Ok(())
    }

    /// Removes a childless node (no checks) and records what it fires.
    fn remove_node(&mut self, path: &str, zxid: i64, fires: &mut Vec<Fire>) {
        let Some(parent_path) = path::parent(path) else {
            return;
        };
        let parent_path = parent_path.to_owned();
        let parent_acl = self
            .tree
            .get(&parent_path)
            .map(|parent| parent.acl.clone())
            .unwrap_or_default();
        self.tree.update_stat(&parent_path, |stat| {
            stat.pzxid = stat.pzxid.max(zxid);
        });
        if let Some(acl) = self.tree.remove(path) {
            fires.push(Fire::Deleted {
                path: path.to_owned(),
                acl,
                parent: parent_path,
                parent_acl,
            });
        }
    }

    fn set_data(
        &mut self,
        ctx: &Ctx,
        path: &str,
        data: &[u8],
        version: i32,
        fires: &mut Vec<Fire>,
    ) -> Result<Stat, ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::WRITE, &ctx.auth)?;
        let new_version = check_version(node.stat.version, version)?;
        let acl = node.acl.clone();
        let (zxid, now) = (ctx.zxid, ctx.now);
        self.tree.set_data(path, data.to_vec(), |stat| {
            stat.version = new_version;
            stat.mtime = now;
            stat.mzxid = zxid;
        });
        fires.push(Fire::Changed {
            path: path.to_owned(),
            acl,
        });
        Ok(self.stat_of(path))
    }

    fn set_acl(
        &mut self,
        ctx: &Ctx,
        path: &str,
        acl: &[Acl],
        version: i32,
    ) -> Result<Stat, ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        let acl = acl::fixup(acl, &ctx.auth)?;
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::ADMIN, &ctx.auth)?;
        let new_version = check_version(node.stat.aversion, version)?;
        self.tree
            .set_acl(path, acl, |stat| stat.aversion = new_version);
        Ok(self.stat_of(path))
    }

    fn check(&self, ctx: &Ctx, path: &str, version: i32) -> Result<(), ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::READ, &ctx.auth)?;
        check_version(node.stat.version, version).map(|_| ())
    }

    fn multi(&mut self, ctx: &Ctx, ops: &[MultiOp], fires: &mut Vec<Fire>) -> MultiResponse {
        let mut results = Vec::with_capacity(ops.len());
        let mut failed = None;
        for (at, op) in ops.iter().enumerate() {
            let result = match op {
                MultiOp::Create(create) => self
                    .create(ctx, &CreateOp::plain(create), fires)
                    .map(|(path, _)| MultiResult::Create(CreateResponse { path })),
                // ZooKeeper 3.8.0 reads a create2 step back as a create (ZOOKEEPER-4026, fixed
                // in 3.8.2), and answers it with the path only.
                MultiOp::Create2(create) if self.is_3_8() => self
                    .create(ctx, &CreateOp::plain(create), fires)
                    .map(|(path, _)| MultiResult::Create(CreateResponse { path })),
                MultiOp::Create2(create) => self
                    .create(ctx, &CreateOp::plain(create), fires)
                    .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat })),
                MultiOp::CreateContainer(create) => {
                    let op = CreateOp {
                        how: How::Container,
                        ..CreateOp::plain(create)
                    };
                    self.create(ctx, &op, fires)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::CreateTtl(create) => {
                    let op = CreateOp {
                        path: &create.path,
                        data: &create.data,
                        acl: &create.acl,
                        mode: create.mode,
                        ttl: create.ttl,
                        how: How::Ttl,
                    };
                    self.create(ctx, &op, fires)
                        .map(|(path, stat)| MultiResult::Create2(Create2Response { path, stat }))
                }
                MultiOp::Delete(delete) => self
                    .delete(ctx, &delete.path, delete.version, fires)
                    .map(|()| MultiResult::Delete),
                MultiOp::SetData(set) => self
                    .set_data(ctx, &set.path, &set.data, set.version, fires)
                    .map(MultiResult::SetData),
                MultiOp::Check(check) => self
                    .check(ctx, &check.path, check.version)
                    .map(|()| MultiResult::Check),
            };
            match result {
                Ok(result) => results.push(result),
                Err(code) => {
                    failed = Some((at, code));
                    break;
                }
            }
        }
        if let Some((failed_at, code)) = failed {
            // All or nothing: what the earlier steps did is taken back, and every step gets an
            // error result: Ok before the failed one, its code, RuntimeInconsistency after.
            self.tree.rollback();
            fires.clear();
            results = (0..ops.len())
                .map(|at| {
                    MultiResult::Error(match at.cmp(&failed_at) {
                        std::cmp::Ordering::Less => ErrorCode::Ok,
                        std::cmp::Ordering::Equal => code,
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency,
                    })
                })
                .collect();
        }
        MultiResponse { results }
    }

    fn stat_of(&self, path: &str) -> Stat {
        self.tree
            .get(path)
            .map(|node| node.stat(self.tree.extended()))
            .unwrap_or_default()
    }

    fn exists(
        &mut self,
        connection: ConnectionId,
        auth: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<Response, ErrorCode> {
        if path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        // READ on the node is needed from 3.8.4 and 3.9.2 on (ZOOKEEPER-2590).
        if let Some(node) = self.tree.get(path).filter(|_| !self.is_3_8()) {
            acl::check(&node.acl, Perms::READ, auth)?;
        }
        if watch {
            self.data_watches.add(path, connection, Mode::Standard);
        }
        self.tree
            .get(path)
            .map(|node| Response::Stat(node.stat(self.tree.extended())))
            .ok_or(ErrorCode::NoNode)
    }

    fn get_data(
        &mut self,
        connection: ConnectionId,
        auth: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<GetDataResponse, ErrorCode> {
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::READ, auth)?;
        let response = GetDataResponse {
            data: node.data.clone(),
            stat: node.stat(self.tree.extended()),
        };
        if watch {
            self.data_watches.add(path, connection, Mode::Standard);
        }
        Ok(response)
    }

    fn get_children(
        &mut self,
        connection: ConnectionId,
        auth: &[Id],
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, Stat), ErrorCode> {
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::READ, auth)?;
        let children = node.children.iter().cloned().collect();
        let stat = node.stat(self.tree.extended());
        if watch {
            self.child_watches.add(path, connection, Mode::Standard);
        }
        Ok((children, stat))
    }

    fn get_acl(&self, auth: &[Id], path: &str) -> Result<Response, ErrorCode> {
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::READ | Perms::ADMIN, auth)?;
        let acl = if acl::allows(&node.acl, Perms::ADMIN, auth) {
            node.acl.clone()
        } else {
            acl::redact(&node.acl)
        };
        Ok(Response::GetAcl(GetAclResponse {
            acl,
            stat: node.stat(self.tree.extended()),
        }))
    }

    fn all_children(&self, auth: &[Id], path: &str) -> Result<Response, ErrorCode> {
        let node = self.tree.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, Perms::READ, auth)?;
        let total_number = i32::try_from(self.tree.descendants(path)).unwrap_or(i32::MAX);
        Ok(Response::GetAllChildrenNumber(
            GetAllChildrenNumberResponse { total_number },
        ))
    }

    fn get_ephemerals(&self, session: i64, prefix: &str) -> Response {
        let all = prefix.trim().is_empty() || prefix.trim() == "/";
        let ephemerals = self
            .tree
            .ephemerals(session)
            .filter(|path| all || path.starts_with(prefix))
            .cloned()
            .collect();
        Response::GetEphemerals(GetEphemeralsResponse { ephemerals })
    }

    /// setWatches(2) (`DataTree.setWatches`): watches whose node changed since the client's
    /// last zxid fire at once (and are not set); the others are set; persistent ones are set
    /// without catching up.
    fn set_watches(&mut self, connection: ConnectionId, set: &SetWatches2, outcome: &mut Outcome) {
        let relative = set.relative_zxid;
        let event = |outcome: &mut Outcome, event_type, path: &str| {
            outcome.push(connection, notification(-1, event_type, path));
        };
        for path in &set.data_watches {
            match self.tree.get(path) {
                None => event(outcome, EventType::NodeDeleted, path),
                Some(node) if node.stat.mzxid > relative => {
                    event(outcome, EventType::NodeDataChanged, path);
                }
                Some(_) => self.data_watches.add(path, connection, Mode::Standard),
            }
        }
        for path in &set.exist_watches {
            if self.tree.get(path).is_some() {
                event(outcome, EventType::NodeCreated, path);
            } else {
                self.data_watches.add(path, connection, Mode::Standard);
            }
        }
        for path in &set.child_watches {
            match self.tree.get(path) {
                None => event(outcome, EventType::NodeDeleted, path),
                Some(node) if node.stat.pzxid > relative => {
                    event(outcome, EventType::NodeChildrenChanged, path);
                }
                Some(_) => self.child_watches.add(path, connection, Mode::Standard),
            }
        }
        for path in &set.persistent_watches {
            self.add_watch(path, connection, Mode::Persistent);
        }
        for path in &set.persistent_recursive_watches {
            self.add_watch(path, connection, Mode::Recursive);
        }
    }

    /// addWatch: a persistent watch goes into both tables; a recursive one only into the data
    /// table on 3.9, into both on 3.8.0.
    fn add_watch(&mut self, path: &str, connection: ConnectionId, mode: Mode) {
        self.data_watches.add(path, connection, mode);
        if mode == Mode::Persistent || self.is_3_8() {
            self.child_watches.add(path, connection, mode);
        }
    }

    /// checkWatches. ZooKeeper 3.8.0 knows no persistent watcher types (it cannot read the
    /// request: `MarshallingError`), and finds a data or child watch on the path whoever set it
    /// (its `WatchManager.containsWatcher` looks only for a watcher of the path).
    fn has_watch(
        &self,
        connection: ConnectionId,
        path: &str,
        kind: WatcherType,
    ) -> Result<bool, ErrorCode> {
        if self.is_3_8() {
            return match kind {
                WatcherType::Children => Ok(self.child_watches.watched(path)),
                WatcherType::Data => Ok(self.data_watches.watched(path)),
                WatcherType::Any => {
                    Ok(self.child_watches.watched(path) || self.data_watches.watched(path))
                }
                _ => Err(ErrorCode::MarshallingError),
            };
        }
        Ok(match kind {
            WatcherType::Children => {
                self.child_watches
                    .contains(path, connection, Some(Mode::Standard))
            }
            WatcherType::Data => self
                .data_watches
                .contains(path, connection, Some(Mode::Standard)),
            WatcherType::Persistent => {
                self.data_watches
                    .contains(path, connection, Some(Mode::Persistent))
            }
            WatcherType::PersistentRecursive => {
                self.data_watches
                    .contains(path, connection, Some(Mode::Recursive))
            }
            _ => {
                self.child_watches.contains(path, connection, None)
                    || self.data_watches.contains(path, connection, None)
            }
        })
    }

    /// removeWatches. ZooKeeper 3.8.0 knows no persistent watcher types (`MarshallingError`)
    /// and removes a connection's watch from the data or child table whatever its mode.
    fn remove_watch(
        &mut self,
        connection: ConnectionId,
        path: &str,
        kind: WatcherType,
    ) -> Result<bool, ErrorCode> {
        if self.is_3_8() {
            let mut removed = false;
            if matches!(kind, WatcherType::Children | WatcherType::Any) {
                removed |= self.child_watches.remove(path, connection, None);
            }
            if matches!(kind, WatcherType::Data | WatcherType::Any) {
                removed |= self.data_watches.remove(path, connection, None);
            }
            return match kind {
                WatcherType::Children | WatcherType::Data | WatcherType::Any => Ok(removed),
                _ => Err(ErrorCode::MarshallingError),
            };
        }
        Ok(match kind {
            WatcherType::Children => {
                self.child_watches
                    .remove(path, connection, Some(Mode::Standard))
            }
            WatcherType::Data => self
                .data_watches
                .remove(path, connection, Some(Mode::Standard)),
            WatcherType::Persistent => {
                let child = self
                    .child_watches
                    .remove(path, connection, Some(Mode::Persistent));
                let data = self
                    .data_watches
                    .remove(path, connection, Some(Mode::Persistent));
                child || data
            }
            WatcherType::PersistentRecursive => {
                self.data_watches
                    .remove(path, connection, Some(Mode::Recursive))
            }
            _ => {
                let child = self.child_watches.remove(path, connection, None);
                let data = self.data_watches.remove(path, connection, None);
                child || data
            }
        })
    }

    /// Fires what a transaction recorded, in order; each event goes only to connections that
    /// may read the node (ZooKeeper 3.9 filters notifications by the node's ACL).
    fn fire(&mut self, zxid: i64, fires: Vec<Fire>, outcome: &mut Outcome) {
        for fire in fires {
            match fire {
                Fire::Created {
                    path,
                    acl,
                    parent,
                    parent_acl,
                } => {
                    let fired = self.data_watches.trigger(&path, false);
                    self.deliver(zxid, EventType::NodeCreated, &path, &acl, &fired, outcome);
                    let fired = self.child_watches.trigger(&parent, true);
                    self.deliver(
                        zxid,
                        EventType::NodeChildrenChanged,
                        &parent,
                        &parent_acl,
                        &fired,
                        outcome,
                    );
                }
                Fire::Deleted {
                    path,
                    acl,
                    parent,
                    parent_acl,
                } => {
                    let by_data = self.data_watches.trigger(&path, false);
                    self.deliver(zxid, EventType::NodeDeleted, &path, &acl, &by_data, outcome);
                    let by_child: BTreeSet<ConnectionId> = self
                        .child_watches
                        .trigger(&path, false)
                        .difference(&by_data)
                        .copied()
                        .collect();
                    self.deliver(
                        zxid,
                        EventType::NodeDeleted,
                        &path,
                        &acl,
                        &by_child,
                        outcome,
                    );
                    let fired = self.child_watches.trigger(&parent, true);
                    self.deliver(
                        zxid,
                        EventType::NodeChildrenChanged,
                        &parent,
                        &parent_acl,
                        &fired,
                        outcome,
                    );
                }
                Fire::Changed { path, acl } => {
                    let fired = self.data_watches.trigger(&path, false);
                    self.deliver(
                        zxid,
                        EventType::NodeDataChanged,
                        &path,
                        &acl,
                        &fired,
                        outcome,
                    );
                }
            }
        }
    }

    fn deliver(
        &self,
        zxid: i64,
        event_type: EventType,
        path: &str,
        acl: &[Acl],
        to: &BTreeSet<ConnectionId>,
        outcome: &mut Outcome,
    ) {
        // ZooKeeper 3.8 puts no zxid in a notification's header (the change's is there from
        // 3.9 on, ZOOKEEPER-4655). Both filter notifications by the node's ACL (the fix of
        // CVE-2024-23944: 3.8.4, 3.9.2, and Debian 12's 3.8.0-11+deb12u2).
        let zxid = if self.is_3_8() { -1 } else { zxid };
        for connection in to {
            let allowed = self
                .connections
                .get(connection)
                .is_some_and(|conn| acl::allows(acl, Perms::READ, &conn.auth));
            if allowed {
                outcome.push(*connection, notification(zxid, event_type, path));
            }
        }
    }
}

impl<'a> CreateOp<'a> {
    fn plain(create: &'a curator_wire::proto::CreateRequest) -> Self {
        CreateOp {
            path: &create.path,
            data: &create.data,
            acl: &create.acl,
            mode: create.mode,
            ttl: -1,
            how: How::Plain,
        }
    }
}

fn check_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

fn reply(xid: i32, zxid: i64, result: Result<Response, ErrorCode>) -> Message {
    Message::Reply(Reply { xid, zxid, result })
}

fn notification(zxid: i64, event_type: EventType, path: &str) -> Message {
    Message::Notification {
        zxid,
        event: WatcherEvent {
            event_type,
            state: KeeperState::SyncConnected,
            path: path.to_owned(),
        },
    }
}

/// A session's password as a ZooKeeper server makes it: 16 bytes of `java.util.Random` seeded
/// with the session id xor the server's fixed secret (so it matches what a real server would
/// give the same id).
fn password(session: i64) -> Vec<u8> {
    const SUPER_SECRET: i64 = 0xB341_5C00;
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut seed = ((session ^ SUPER_SECRET) as u64 ^ MULTIPLIER) & MASK;
    let mut bytes = vec![0u8; NEW_SESSION_PASSWORD_LEN];
    let mut at = 0;
    while at < bytes.len() {
        seed = seed.wrapping_mul(MULTIPLIER).wrapping_add(0xB) & MASK;
        let mut random = (seed >> 16) as u32;
        for _ in 0..4.min(bytes.len() - at) {
            bytes[at] = random as u8;
            random >>= 8;
            at += 1;
        }
    }
    bytes
}
