//! The session: its shared state, how requests are sent and answered, and the task that keeps
//! it connected.
//!
//! # Shape
//! One lock ([`Core`]) holds the session's state: the current connection's outgoing bytes and
//! the queue of requests waiting for replies, the watch registry, the server list. A request is
//! encoded into the outgoing buffer and queued under that lock when it is *submitted* (when the
//! operation is called, not when its future is first polled), so requests reach the server in
//! the order they were made.
//!
//! Each connection is served by the session's driver task, which runs a reader and a writer for
//! it on the application's Tokio runtime (no thread or reactor of its own):
//! - the writer takes everything queued at once and writes it in one go (so requests made
//!   together leave in one packet), and sends a ping when nothing was sent for half the
//!   negotiated timeout;
//! - the reader reads frames as they come: a reply completes the oldest waiting request (replies
//!   come in the order requests were sent; anything else means the stream is out of step and the
//!   connection is dropped), a notification is handed to its watchers *before the reader looks
//!   at the next frame*, so a watcher has its event before the caller of a later request has
//!   that request's reply (ZooKeeper's ordering guarantee).
//!
//! When a connection breaks, the requests waiting on it fail with
//! [`Error::ConnectionLoss`], the state becomes [`SessionState::Disconnected`], and the driver
//! connects to the next server with the same session (its last seen zxid, so a server behind
//! it refuses and the next is tried), replays credentials and sets every watch again. The
//! server ends the session, not the client (as with ZooKeeper's Java client): the driver keeps
//! trying until a server says the session expired, or the owner closes it. A server that was
//! down for longer than the timeout may still have the session (a restarted server gives the
//! sessions it loads a fresh timeout); an owner that wants a deadline of its own, as
//! curator-framework's simulated expiration is, closes the session when it passes.
//!
//! # Timing (and how it compares with ZooKeeper's Java client)
//! With `T` the negotiated session timeout and `n` servers in the list:
//! - a ping goes out when nothing was sent for `T/2` (Java: `T/3`). A server expires a session
//!   `T` after it last heard from it, so `T/2` leaves half the timeout for a ping to arrive,
//!   while a client whose process dies was last heard from `T/4` before on average instead of
//!   `T/6`: the session of a crashed holder ends sooner, and its lock or leadership passes on
//!   sooner;
//! - a connection that brings nothing for `2T/3` is dead (as Java): with pings every `T/2` a
//!   healthy connection always answers in time, and `T/3` is left to reach another server
//!   before the server gives the session up;
//! - each connection attempt gets `T/n` (as Java), and no more than `2T/5` with one or two
//!   servers, so that a server that accepts a connection and never answers it still leaves time
//!   for two more attempts (the first connection divides the session timeout asked for);
//! - the first reconnect attempt goes out at once (Java waits up to a second first); after a
//!   whole round of servers failed, the next round waits 50 ms, doubling up to 1 s.
//!
//! # Moving without disconnecting
//! A new server list ([`Session::update_server_list`]) may decide that this client moves (see
//! the host list's rebalancing), a read-only connection may find a read-write server, and
//! [`Session::reconnect`] asks for another server. A move is planned, and made before the old
//! connection is broken: new requests are held (not failed) while the replies of those already
//! sent come in; then the session shakes hands with the new server (its watches set again
//! there) while the old connection stays open and is read; only once the new server has taken
//! the session is the old connection dropped and the held requests sent on the new one. When
//! no new server answers, the session goes on over the old connection. Nobody sees
//! `Disconnected` unless the old connection breaks and no new server takes the session (a
//! server closes a moved session's old connection when it gets a request there, a ping
//! included, so the old connection may break because the move succeeded).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use curator_wire::codec::{ClientCodec, ReplyFrame, ServerFrame};
use curator_wire::proto::{
    AUTH_XID, AuthPacket, ConnectRequest, ConnectResponse, ErrorCode, KeeperState,
    NEW_SESSION_PASSWORD_LEN, NOTIFICATION_XID, PING_XID, Record, RemoveWatchesRequest, Request,
    RequestHeader, SET_WATCHES_XID, SetWatches, SetWatches2, WatcherType,
};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::io::{AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerAddress, SessionConfig};
use crate::error::{Error, Result};
use crate::hosts::{HostList, Rebalance};
use crate::transport::BoxTransport;
use crate::watch::{Intent, PendingWatch, Sender, WatchLists, WatchedEvent, Watches};

/// The state of a session.
///
/// ```
/// use curator_session::SessionState;
///
/// assert!(SessionState::Expired.is_terminal());
/// assert!(SessionState::ConnectedReadOnly.is_connected());
/// assert!(!SessionState::Disconnected.is_connected());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// The first connection is being made.
    Connecting,
    /// Connected to a server that can write.
    Connected,
    /// Connected to a read-only server (one cut off from its quorum); reads only, and the
    /// session keeps looking for a read-write server.
    ConnectedReadOnly,
    /// The connection broke; the session is looking for a server.
    Disconnected,
    /// The server ended the session (terminal).
    Expired,
    /// A server refused the session's credentials (terminal).
    AuthFailed,
    /// The owner closed the session (terminal).
    Closed,
}

impl SessionState {
    /// The session is over; nothing more will happen on it.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed
        )
    }

    /// A connection is up (read-write or read-only).
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            SessionState::Connected | SessionState::ConnectedReadOnly
        )
    }

    /// The state as watch events carry it.
    pub fn keeper_state(self) -> KeeperState {
        match self {
            SessionState::Connecting | SessionState::Disconnected => KeeperState::Disconnected,
            SessionState::Connected => KeeperState::SyncConnected,
            SessionState::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
            SessionState::Expired => KeeperState::Expired,
            SessionState::AuthFailed => KeeperState::AuthFailed,
            SessionState::Closed => KeeperState::Closed,
        }
    }

    fn error(self) -> Error {
        match self {
            SessionState::Expired => Error::SessionExpired,
            SessionState::AuthFailed => {
                Error::AuthFailed("the server refused the credentials".into())
            }
            SessionState::Closed => Error::Closed,
            _ => Error::ConnectionLoss,
        }
    }
}

/// The first round of backoff after all servers failed, and its ceiling.
const BACKOFF_START: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The read-only search: first pause, and its ceiling (as Java's client).
const RW_PROBE_START: Duration = Duration::from_millis(100);
const RW_PROBE_MAX: Duration = Duration::from_secs(60);
/// setWatches requests are cut into batches of at most this many bytes of paths (as Java).
const SET_WATCHES_MAX_BYTES: usize = 128 * 1024;

/// A reply, or why none came.
pub(crate) type ReplySender = oneshot::Sender<Result<ReplyFrame>>;

#[derive(Debug)]
struct Pending {
    xid: i32,
    reply: Option<ReplySender>,
    watch: Option<PendingWatch>,
    /// When it was queued: its reply proves the server renewed the session after this.
    queued: Instant,
}

/// The writable side of the current connection (kept across a planned move, paused).
#[derive(Debug)]
struct Link {
    id: u64,
    out: BytesMut,
    pending: VecDeque<Pending>,
    /// How many of `pending` the writer has taken (their replies may come).
    sent: usize,
    /// A planned move: nothing more is written on this connection.
    paused: bool,
    wake: Arc<Notify>,
    drained: Arc<Notify>,
    /// When each ping still unanswered on this connection was queued, oldest first (pings are
    /// answered in order).
    pings: VecDeque<Instant>,
}

impl Link {
    fn new(id: u64) -> Self {
        Self {
            id,
            out: BytesMut::with_capacity(4096),
            pending: VecDeque::new(),
            sent: 0,
            paused: false,
            wake: Arc::new(Notify::new()),
            drained: Arc::new(Notify::new()),
            pings: VecDeque::new(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Core {
    state: SessionState,
    session_id: i64,
    password: Vec<u8>,
    negotiated: Duration,
    last_zxid: i64,
    xid: i32,
    link: Option<Link>,
    links: u64,
    pub(crate) watches: Watches,
    hosts: HostList,
    server: Option<ServerAddress>,
    subscribers: Vec<mpsc::UnboundedSender<SessionState>>,
    move_requested: bool,
    closing: bool,
    /// A read-write server accepted this session: its id means something to the ensemble. A
    /// session made by a read-only server is local to it; the first read-write server makes a
    /// new one (as ZooKeeper's Java client does).
    seen_read_write: bool,
}

impl Core {
    pub(crate) fn next_xid(&mut self) -> i32 {
        self.xid = if self.xid >= i32::MAX - 1 {
            1
        } else {
            self.xid + 1
        };
        self.xid
    }

    fn check_open(&self) -> Result<()> {
        if self.closing {
            return Err(Error::Closed);
        }
        if self.state.is_terminal() {
            return Err(self.state.error());
        }
        Ok(())
    }
}

/// Appends one request frame: the length, the header, the body.
pub(crate) fn put_request(out: &mut BytesMut, xid: i32, request: &Request) {
    let start = out.len();
    out.put_i32(0);
    RequestHeader {
        xid,
        op_code: request.op_code(),
    }
    .encode(out);
    request.encode(out);
    let len = i32::try_from(out.len() - start - 4).unwrap_or(i32::MAX);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Sets the watch flag of a read request.
fn set_watch_flag(request: &mut Request, watch: bool) {
    match request {
        Request::Exists(r) => r.watch = watch,
        Request::GetData(r) => r.watch = watch,
        Request::GetChildren(r) | Request::GetChildren2(r) => r.watch = watch,
        _ => {}
    }
}

/// A watch a request asks for.
#[derive(Debug)]
pub(crate) struct WatchSpec {
    pub(crate) path: String,
    pub(crate) intent: Intent,
    pub(crate) sender: Sender,
}

/// What [`Shared::submit`] hands back.
#[derive(Debug)]
pub(crate) struct Submitted {
    pub(crate) reply: oneshot::Receiver<Result<ReplyFrame>>,
    pub(crate) watch_id: Option<u64>,
}

pub(crate) struct Shared {
    pub(crate) core: Mutex<Core>,
    pub(crate) config: SessionConfig,
    stop: CancellationToken,
    wake_driver: Notify,
    state_tx: watch::Sender<SessionState>,
    base: Instant,
    last_heard: AtomicU64,
    /// See [`Session::last_renewed`]: micros after `base`, 0 for never.
    last_renewed: AtomicU64,
    driver_done: CancellationToken,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let core = self.core.lock();
        f.debug_struct("Session")
            .field("session_id", &format_args!("{:#x}", core.session_id))
            .field("state", &core.state)
            .field("server", &core.server)
            .finish_non_exhaustive()
    }
}

/// A connection whose handshake is done.
struct Established {
    reader: FramedRead<ReadHalf<BoxTransport>, ClientCodec>,
    writer: WriteHalf<BoxTransport>,
    server: ServerAddress,
    response: ConnectResponse,
}

/// Why a connection attempt failed.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// Try another server.
    Retry(String),
    /// The session is over.
    Terminal(SessionState, Error),
}

/// How a connection ended.
enum LinkEnd {
    /// It broke (or was dropped for a protocol error): reconnect.
    Lost(String),
    /// A planned move reached its server: the link, paused, goes on over this connection.
    MovedTo(Established),
    /// The session ended.
    Terminal(SessionState, Error),
    /// The session is stopping.
    Stop,
}

/// A connection being served.
struct Running {
    reader: FramedRead<ReadHalf<BoxTransport>, ClientCodec>,
    writer: WriteHalf<BoxTransport>,
    link_id: u64,
    wake: Arc<Notify>,
    drained: Arc<Notify>,
    read_only: bool,
    server: ServerAddress,
}

impl Shared {
    fn new(config: SessionConfig) -> Self {
        let hosts = HostList::new(config.servers.clone(), None);
        let (session_id, password) = config
            .resume
            .clone()
            .unwrap_or((0, vec![0; NEW_SESSION_PASSWORD_LEN]));
        Self {
            core: Mutex::new(Core {
                state: SessionState::Connecting,
                session_id,
                password,
                negotiated: config.session_timeout,
                last_zxid: 0,
                xid: 0,
                link: None,
                links: 0,
                watches: Watches::default(),
                hosts,
                server: None,
                subscribers: Vec::new(),
                move_requested: false,
                closing: false,
                seen_read_write: session_id != 0,
            }),
            config,
            stop: CancellationToken::new(),
            wake_driver: Notify::new(),
            state_tx: watch::channel(SessionState::Connecting).0,
            base: Instant::now(),
            last_heard: AtomicU64::new(0),
            last_renewed: AtomicU64::new(0),
            driver_done: CancellationToken::new(),
        }
    }

    fn set_state(&self, core: &mut Core, state: SessionState) {
        if core.state == state {
            return;
        }
        tracing::debug!(
            session_id = format_args!("{:#x}", core.session_id),
            ?state,
            "session state"
        );
        core.state = state;
        self.state_tx.send_replace(state);
        core.subscribers.retain(|s| s.send(state).is_ok());
    }

    fn heard(&self) {
        let micros = u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.last_heard.store(micros, Ordering::Relaxed);
    }

    /// A read-write server answered something queued at `queued`: it renewed the session at or
    /// after that instant.
    fn renewed(&self, queued: Instant) {
        let micros = u64::try_from(queued.saturating_duration_since(self.base).as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        self.last_renewed.fetch_max(micros, Ordering::Relaxed);
    }

    /// Queues `request`; its reply (or why none came) arrives on the returned receiver.
    pub(crate) fn submit(
        &self,
        mut request: Request,
        watch: Option<WatchSpec>,
    ) -> Result<Submitted> {
        let (reply, receiver) = oneshot::channel();
        let mut core = self.core.lock();
        core.check_open()?;
        if core.link.is_none() {
            return Err(Error::ConnectionLoss);
        }
        let xid = core.next_xid();
        let watch = watch.map(|spec| {
            let id = core.watches.next_id();
            let one_shot = !matches!(spec.intent, Intent::Persistent | Intent::Recursive);
            let local = one_shot && !core.watches.needs_server_watch(&spec.path, spec.intent);
            if local {
                set_watch_flag(&mut request, false);
            }
            core.watches.sent(&spec.path, spec.intent);
            PendingWatch {
                path: spec.path,
                intent: spec.intent,
                id,
                sender: spec.sender,
                local,
            }
        });
        let watch_id = watch.as_ref().map(|w| w.id);
        let link = core.link.as_mut().expect("checked above");
        put_request(&mut link.out, xid, &request);
        link.pending.push_back(Pending {
            xid,
            reply: Some(reply),
            watch,
            queued: Instant::now(),
        });
        if !link.paused {
            link.wake.notify_one();
        }
        Ok(Submitted {
            reply: receiver,
            watch_id,
        })
    }

    /// Queues a request whose reply nobody waits for (a watch removal).
    fn submit_unanswered(core: &mut Core, request: &Request) {
        if core.closing || core.state.is_terminal() || core.link.is_none() {
            return;
        }
        let xid = core.next_xid();
        let link = core.link.as_mut().expect("checked above");
        put_request(&mut link.out, xid, request);
        link.pending.push_back(Pending {
            xid,
            reply: None,
            watch: None,
            queued: Instant::now(),
        });
        if !link.paused {
            link.wake.notify_one();
        }
    }

    /// A watch handle was dropped before it fired.
    pub(crate) fn forget_watch(&self, id: u64) {
        let mut core = self.core.lock();
        if let Some((path, watcher_type)) = core.watches.remove(id) {
            Self::submit_unanswered(
                &mut core,
                &Request::RemoveWatches(RemoveWatchesRequest { path, watcher_type }),
            );
        }
    }

    /// Removes a watch and, when the server's watch goes with it, reports the server's answer.
    pub(crate) async fn remove_watch(&self, id: u64, _report: bool) -> Result<()> {
        let removal = self.core.lock().watches.remove(id);
        let Some((path, watcher_type)) = removal else {
            return Ok(());
        };
        let submitted = self.submit(
            Request::RemoveWatches(RemoveWatchesRequest { path, watcher_type }),
            None,
        )?;
        let reply = submitted.reply.await.map_err(|_| Error::Closed)??;
        match reply.header.err {
            ErrorCode::Ok => Ok(()),
            // A server before 3.9 knows no removal of one persistent mode: the watch is gone
            // here, and its events reach nobody.
            ErrorCode::MarshallingError
                if matches!(
                    watcher_type,
                    WatcherType::Persistent | WatcherType::PersistentRecursive
                ) =>
            {
                Ok(())
            }
            code => Err(Error::from_code(code)),
        }
    }

    pub(crate) fn weak(self: &Arc<Self>) -> Weak<Shared> {
        Arc::downgrade(self)
    }

    // ---- connecting ----

    /// The time one connection attempt gets.
    fn attempt_timeout(&self) -> Duration {
        let core = self.core.lock();
        // Two and a half attempts per session timeout at least, also with one or two servers.
        #[allow(clippy::cast_precision_loss, reason = "a server count")]
        let servers = (core.hosts.len() as f64).max(2.5);
        core.negotiated
            .div_f64(servers)
            .max(Duration::from_millis(100))
    }

    async fn establish(
        &self,
        server: &ServerAddress,
        timeout: Duration,
    ) -> Result<Established, ConnectError> {
        match tokio::time::timeout(timeout, self.handshake(server)).await {
            Ok(result) => result,
            Err(_) => Err(ConnectError::Retry(format!(
                "no answer within {} ms",
                timeout.as_millis()
            ))),
        }
    }

    async fn handshake(&self, server: &ServerAddress) -> Result<Established, ConnectError> {
        let retry = |why: String| ConnectError::Retry(why);
        let transport = self
            .config
            .connector
            .connect(server)
            .await
            .map_err(|error| retry(error.to_string()))?;
        let (read, mut writer) = tokio::io::split(transport);
        let mut reader = FramedRead::new(
            read,
            ClientCodec::new().with_max_frame(self.config.max_frame),
        );
        let request = {
            let core = self.core.lock();
            let (session_id, passwd) = if core.seen_read_write {
                (core.session_id, core.password.clone())
            } else {
                (0, vec![0; NEW_SESSION_PASSWORD_LEN])
            };
            ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: core.last_zxid,
                timeout: i32::try_from(self.config.session_timeout.as_millis()).unwrap_or(i32::MAX),
                session_id,
                passwd,
                read_only: Some(self.config.can_be_read_only),
            }
        };
        let mut out = BytesMut::new();
        out.put_i32(0);
        request.encode(&mut out);
        let len = i32::try_from(out.len() - 4).unwrap_or(i32::MAX);
        out[..4].copy_from_slice(&len.to_be_bytes());
        let sent = Instant::now();
        write_flush(&mut writer, &out)
            .await
            .map_err(|error| retry(error.to_string()))?;
        let response = match reader.next().await {
            Some(Ok(ServerFrame::Connected(response))) => response,
            Some(Ok(ServerFrame::Reply(_))) => {
                return Err(retry("a reply before the handshake's answer".into()));
            }
            Some(Err(error)) => return Err(retry(error.to_string())),
            None => {
                return Err(retry(
                    "the server closed the connection during the handshake (it may be behind \
                     this session's last zxid, or not serving clients)"
                        .into(),
                ));
            }
        };
        if response.timeout <= 0 {
            return Err(ConnectError::Terminal(
                SessionState::Expired,
                Error::SessionExpired,
            ));
        }
        {
            // The credentials of this session from now on (a new session's id and password).
            let mut core = self.core.lock();
            core.session_id = response.session_id;
            core.password.clone_from(&response.passwd);
            core.seen_read_write |= response.read_only != Some(true);
            core.negotiated = Duration::from_millis(u64::try_from(response.timeout).unwrap_or(0));
        }
        if response.read_only != Some(true) {
            // A read-write server took the session: it renewed it.
            self.renewed(sent);
        }
        if let Some(sasl) = &self.config.sasl {
            crate::sasl::exchange(self, sasl, server, &mut reader, &mut writer).await?;
        }
        if !self.config.auth.is_empty() {
            out.clear();
            for (scheme, auth) in &self.config.auth {
                let packet = Request::Auth(AuthPacket {
                    auth_type: 0,
                    scheme: scheme.clone(),
                    auth: auth.clone(),
                });
                put_request(&mut out, AUTH_XID, &packet);
            }
            write_flush(&mut writer, &out)
                .await
                .map_err(|error| retry(error.to_string()))?;
            // Each answer before anything else: a refused credential ends the session now,
            // not after requests ran without it.
            for _ in &self.config.auth {
                match reader.next().await {
                    Some(Ok(ServerFrame::Reply(reply))) if reply.header.xid == AUTH_XID => {
                        match reply.header.err {
                            ErrorCode::Ok => {}
                            ErrorCode::AuthFailed => {
                                return Err(ConnectError::Terminal(
                                    SessionState::AuthFailed,
                                    Error::AuthFailed("the server refused an auth packet".into()),
                                ));
                            }
                            code => return Err(retry(format!("auth packet answered {code}"))),
                        }
                    }
                    Some(Ok(_)) => return Err(retry("an unexpected frame after auth".into())),
                    Some(Err(error)) => return Err(retry(error.to_string())),
                    None => return Err(retry("closed after auth".into())),
                }
            }
        }
        let (lists, last_zxid) = {
            let core = self.core.lock();
            (core.watches.lists(), core.last_zxid)
        };
        if !lists.is_empty() {
            out.clear();
            for request in set_watches(lists, last_zxid) {
                put_request(&mut out, SET_WATCHES_XID, &request);
            }
            write_flush(&mut writer, &out)
                .await
                .map_err(|error| retry(error.to_string()))?;
        }
        Ok(Established {
            reader,
            writer,
            server: server.clone(),
            response,
        })
    }

    /// Makes `established` the session's connection (resuming a link paused for a move).
    fn install(&self, established: Established) -> Running {
        let Established {
            reader,
            writer,
            server,
            response,
        } = established;
        let read_only = response.read_only == Some(true);
        let (running, streams, event) = {
            let mut core = self.core.lock();
            core.links += 1;
            let link_id = core.links;
            match core.link.as_mut() {
                Some(link) => {
                    link.id = link_id;
                    link.paused = false;
                    link.sent = 0;
                    if !link.out.is_empty() {
                        link.wake.notify_one();
                    }
                }
                None => core.link = Some(Link::new(link_id)),
            }
            core.hosts.connected(&server);
            core.server = Some(server.clone());
            let was = core.state;
            let state = if read_only {
                SessionState::ConnectedReadOnly
            } else {
                SessionState::Connected
            };
            self.set_state(&mut core, state);
            tracing::debug!(
                session_id = format_args!("{:#x}", core.session_id),
                %server,
                read_only,
                timeout_ms = response.timeout,
                "connected"
            );
            let link = core.link.as_ref().expect("installed");
            let running = Running {
                reader,
                writer,
                link_id,
                wake: Arc::clone(&link.wake),
                drained: Arc::clone(&link.drained),
                read_only,
                server,
            };
            // Persistent watchers heard `Disconnected`: they hear the reconnection too.
            let streams = if was == SessionState::Disconnected {
                core.watches.streams()
            } else {
                Vec::new()
            };
            (
                running,
                streams,
                WatchedEvent::session(state.keeper_state()),
            )
        };
        for stream in streams {
            let _ = stream.send(event.clone());
        }
        self.heard();
        running
    }

    /// The connection `link_id` broke: its waiting requests fail, persistent watchers hear it.
    fn lost(&self, link_id: u64, why: &str) {
        let (pending, streams) = {
            let mut core = self.core.lock();
            if core.link.as_ref().is_none_or(|link| link.id != link_id) || core.state.is_terminal()
            {
                return;
            }
            let link = core.link.take().expect("checked");
            for pending in &link.pending {
                if let Some(watch) = &pending.watch {
                    core.watches.unanswered(&watch.path, watch.intent);
                }
            }
            tracing::info!(
                session_id = format_args!("{:#x}", core.session_id),
                server = ?core.server,
                why,
                "connection lost"
            );
            core.server = None;
            self.set_state(&mut core, SessionState::Disconnected);
            (link.pending, core.watches.streams())
        };
        let event = WatchedEvent::session(KeeperState::Disconnected);
        for stream in streams {
            let _ = stream.send(event.clone());
        }
        for pending in pending {
            if let Some(reply) = pending.reply {
                let _ = reply.send(Err(Error::ConnectionLoss));
            }
        }
    }

    /// The session ended: everything waiting learns why, every watcher hears it.
    fn terminate(&self, state: SessionState, error: &Error) {
        let (pending, senders) = {
            let mut core = self.core.lock();
            if core.state.is_terminal() {
                return;
            }
            let link = core.link.take();
            let senders = core.watches.drain();
            core.server = None;
            tracing::info!(
                session_id = format_args!("{:#x}", core.session_id),
                ?state,
                "session ended"
            );
            self.set_state(&mut core, state);
            core.subscribers.clear();
            (link.map(|link| link.pending).unwrap_or_default(), senders)
        };
        let event = WatchedEvent::session(state.keeper_state());
        for sender in senders {
            sender.send(event.clone());
        }
        for pending in pending {
            if let Some(reply) = pending.reply {
                let _ = reply.send(Err(error.clone()));
            }
        }
        self.stop.cancel();
    }

    // ---- a connection at work ----

    async fn run(self: &Arc<Self>, running: Running) -> LinkEnd {
        let Running {
            reader,
            writer,
            link_id,
            wake,
            drained,
            read_only,
            server,
        } = running;
        let negotiated = self.core.lock().negotiated;
        let read = self.read_loop(link_id, reader, negotiated * 2 / 3);
        let write = self.write_loop(link_id, writer, wake, negotiated / 2);
        tokio::pin!(read, write);
        // A move: the link is paused until the replies of what was sent are in (`draining`),
        // then the new connection is made (`making`) while this one stays, idle but alive; the
        // move completes when the new one is up, and is given up (this one resumes) when no
        // candidate answers.
        let mut draining: Option<Instant> = None;
        let mut making: Option<
            futures::future::BoxFuture<'static, Result<Option<Established>, ConnectError>>,
        > = None;
        let mut probe_every = RW_PROBE_START;
        let mut next_probe = read_only.then(|| Instant::now() + probe_every);
        let mut probing: Option<futures::future::BoxFuture<'static, Option<ServerAddress>>> = None;
        // The old connection's loss while a move's handshake is under way: a server that gets
        // a request (a ping) on it after the session moved away closes it (ZooKeeper tears a
        // moved session's old connection down), so losing it then may be the move's own doing.
        // It counts only if the move fails.
        let mut old_lost: Option<String> = None;
        loop {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return LinkEnd::Stop,
                end = &mut read, if old_lost.is_none() => match end {
                    LinkEnd::Lost(why) if making.is_some() => old_lost = Some(why),
                    end => return end,
                },
                end = &mut write, if old_lost.is_none() => match end {
                    LinkEnd::Lost(why) if making.is_some() => old_lost = Some(why),
                    end => return end,
                },
                () = self.wake_driver.notified(), if draining.is_none() && making.is_none() => {
                    if let Some(drained) = self.begin_move(link_id) {
                        if drained {
                            making = Some(self.make_move());
                        } else {
                            draining = Some(Instant::now() + negotiated * 2 / 3);
                        }
                    }
                }
                () = drained.notified(), if draining.is_some() => {
                    if self.core.lock().link.as_ref().is_some_and(|l| l.id == link_id && l.sent == 0) {
                        draining = None;
                        making = Some(self.make_move());
                    }
                }
                () = sleep_until(draining), if draining.is_some() => {
                    return LinkEnd::Lost("the replies of the requests sent before a move did not come".into());
                }
                made = async { making.as_mut().expect("guarded").await }, if making.is_some() => {
                    making = None;
                    match made {
                        Ok(Some(established)) => return LinkEnd::MovedTo(established),
                        Ok(None) | Err(ConnectError::Retry(_)) if old_lost.is_some() => {
                            return LinkEnd::Lost(old_lost.take().unwrap_or_default());
                        }
                        Ok(None) => {
                            tracing::info!("no server to move to answered; staying on {server}");
                            self.resume_link(link_id);
                            if read_only {
                                probe_every = (probe_every * 2).min(RW_PROBE_MAX);
                                next_probe = Some(Instant::now() + probe_every);
                            }
                        }
                        Err(ConnectError::Terminal(state, error)) => return LinkEnd::Terminal(state, error),
                        Err(ConnectError::Retry(_)) => self.resume_link(link_id),
                    }
                }
                () = sleep_until(next_probe), if probing.is_none() && next_probe.is_some() => {
                    next_probe = None;
                    let target = self.core.lock().hosts.next_other(&server);
                    if let Some(target) = target {
                        probing = Some(Box::pin(probe_read_write(Arc::clone(&self.config.connector), target)));
                    }
                }
                found = async { probing.as_mut().expect("guarded").await }, if probing.is_some() => {
                    probing = None;
                    match found {
                        Some(target) if draining.is_none() && making.is_none() => {
                            tracing::info!(%target, "a read-write server answers; moving there");
                            {
                                let mut core = self.core.lock();
                                core.hosts.prefer(target);
                                core.move_requested = true;
                            }
                            match self.begin_move(link_id) {
                                Some(true) => making = Some(self.make_move()),
                                Some(false) => draining = Some(Instant::now() + negotiated * 2 / 3),
                                None => {}
                            }
                        }
                        _ => {
                            probe_every = (probe_every * 2).min(RW_PROBE_MAX);
                            next_probe = Some(Instant::now() + probe_every);
                        }
                    }
                }
            }
        }
    }

    /// The connection to move to: the first of the chosen servers that takes the session.
    fn make_move(
        self: &Arc<Self>,
    ) -> futures::future::BoxFuture<'static, Result<Option<Established>, ConnectError>> {
        let shared = Arc::clone(self);
        Box::pin(async move {
            let candidates = shared.core.lock().hosts.take_preferred();
            for server in candidates {
                let timeout = shared.attempt_timeout();
                match shared.establish(&server, timeout).await {
                    Ok(established) => return Ok(Some(established)),
                    Err(ConnectError::Retry(why)) => {
                        tracing::debug!(%server, why, "could not move there");
                    }
                    Err(terminal) => return Err(terminal),
                }
            }
            Ok(None)
        })
    }

    /// A move was given up: the paused link goes on over its connection.
    fn resume_link(&self, link_id: u64) {
        let mut core = self.core.lock();
        if let Some(link) = core.link.as_mut().filter(|link| link.id == link_id) {
            link.paused = false;
            if !link.out.is_empty() {
                link.wake.notify_one();
            }
        }
    }

    /// Pauses the link for a requested move: `Some(true)` when nothing sent waits for a reply,
    /// `None` when no move was asked for.
    fn begin_move(&self, link_id: u64) -> Option<bool> {
        let mut core = self.core.lock();
        if !std::mem::take(&mut core.move_requested) {
            return None;
        }
        let link = core.link.as_mut().filter(|link| link.id == link_id)?;
        link.paused = true;
        Some(link.sent == 0)
    }

    async fn read_loop(
        self: &Arc<Self>,
        link_id: u64,
        mut reader: FramedRead<ReadHalf<BoxTransport>, ClientCodec>,
        read_timeout: Duration,
    ) -> LinkEnd {
        let mut last = Instant::now();
        let deadline = tokio::time::sleep_until(last + read_timeout);
        tokio::pin!(deadline);
        loop {
            let frame = tokio::select! {
                frame = reader.next() => frame,
                () = &mut deadline => {
                    if last.elapsed() >= read_timeout {
                        return LinkEnd::Lost(format!("nothing heard for {} ms", read_timeout.as_millis()));
                    }
                    deadline.as_mut().reset(last + read_timeout);
                    continue;
                }
            };
            let reply = match frame {
                Some(Ok(ServerFrame::Reply(reply))) => reply,
                Some(Ok(ServerFrame::Connected(_))) => {
                    return LinkEnd::Lost("a second handshake answer".into());
                }
                Some(Err(error)) => return LinkEnd::Lost(error.to_string()),
                None => return LinkEnd::Lost("the server closed the connection".into()),
            };
            last = Instant::now();
            self.heard();
            match reply.header.xid {
                NOTIFICATION_XID => {
                    if let Err(why) = self.notify(&reply) {
                        return LinkEnd::Lost(why);
                    }
                }
                PING_XID => {
                    let mut core = self.core.lock();
                    let read_write = core.state == SessionState::Connected;
                    let queued = core
                        .link
                        .as_mut()
                        .filter(|link| link.id == link_id)
                        .and_then(|link| link.pings.pop_front());
                    drop(core);
                    if let (Some(queued), true) = (queued, read_write) {
                        self.renewed(queued);
                    }
                }
                AUTH_XID => {
                    if reply.header.err == ErrorCode::AuthFailed {
                        return LinkEnd::Terminal(
                            SessionState::AuthFailed,
                            Error::AuthFailed("the server refused an auth packet".into()),
                        );
                    }
                }
                SET_WATCHES_XID => {
                    if reply.header.err != ErrorCode::Ok {
                        tracing::warn!(err = %reply.header.err, "the server refused to set the session's watches again");
                    }
                }
                _ => {
                    // A server that requires SASL answers anything else with this code and
                    // closes the session.
                    let refused = reply.header.err == ErrorCode::SessionClosedRequireSaslAuth;
                    if let Err(why) = self.answer(link_id, reply) {
                        return LinkEnd::Lost(why);
                    }
                    if refused {
                        return LinkEnd::Terminal(
                            SessionState::AuthFailed,
                            Error::AuthFailed(
                                "the server requires a SASL login and closed the session".into(),
                            ),
                        );
                    }
                }
            }
        }
    }

    /// A reply to the oldest waiting request.
    fn answer(&self, link_id: u64, reply: ReplyFrame) -> std::result::Result<(), String> {
        let (pending, orphan) = {
            let mut core = self.core.lock();
            let Some(link) = core.link.as_mut().filter(|link| link.id == link_id) else {
                return Err("a reply on a connection no longer in use".into());
            };
            let Some(front) = link.pending.front() else {
                return Err(format!("a reply (xid {}) to no request", reply.header.xid));
            };
            if front.xid != reply.header.xid || link.sent == 0 {
                return Err(format!(
                    "a reply with xid {} where xid {} was expected",
                    reply.header.xid, front.xid
                ));
            }
            let pending = link.pending.pop_front().expect("checked");
            link.sent -= 1;
            if link.paused && link.sent == 0 {
                link.drained.notify_one();
            }
            if reply.header.zxid > core.last_zxid {
                core.last_zxid = reply.header.zxid;
            }
            if core.state == SessionState::Connected {
                self.renewed(pending.queued);
            }
            let mut pending = pending;
            let orphan = pending.watch.take().and_then(|watch| {
                let kind = watch.intent.settle(reply.header.err);
                core.watches.answered(watch, kind)
            });
            (pending, orphan)
        };
        if let Some((watcher, mut event)) = orphan {
            tracing::debug!(path = %event.path, "a one-shot watch lost the persistent watch it rode on; it fires now");
            event.path = crate::ops::strip_chroot(self.config.chroot.as_deref(), event.path);
            watcher.send(event);
        }
        if let Some(sender) = pending.reply {
            let _ = sender.send(Ok(reply));
        }
        Ok(())
    }

    /// A watch notification, handed to every watcher it concerns.
    fn notify(&self, reply: &ReplyFrame) -> std::result::Result<(), String> {
        let event = reply
            .decode_event()
            .map_err(|error| format!("a notification that cannot be read: {error}"))?;
        let reached = {
            let mut core = self.core.lock();
            let reached = core.watches.materialize(event.event_type, &event.path);
            if let Some((path, watcher_type)) = &reached.removal {
                Self::submit_unanswered(
                    &mut core,
                    &Request::RemoveWatches(RemoveWatchesRequest {
                        path: path.clone(),
                        watcher_type: *watcher_type,
                    }),
                );
            }
            reached
        };
        if reached.once.is_empty() && reached.streams.is_empty() {
            return Ok(());
        }
        let watched = WatchedEvent {
            event_type: event.event_type,
            state: event.state,
            path: crate::ops::strip_chroot(self.config.chroot.as_deref(), event.path),
            zxid: (reply.header.zxid > 0).then_some(reply.header.zxid),
        };
        for sender in reached.once {
            sender.send(watched.clone());
        }
        for stream in reached.streams {
            let _ = stream.send(watched.clone());
        }
        Ok(())
    }

    async fn write_loop(
        self: &Arc<Self>,
        link_id: u64,
        mut writer: WriteHalf<BoxTransport>,
        wake: Arc<Notify>,
        ping_every: Duration,
    ) -> LinkEnd {
        let mut buf = BytesMut::with_capacity(4096);
        let mut last_send = Instant::now();
        let ping = tokio::time::sleep_until(last_send + ping_every);
        tokio::pin!(ping);
        loop {
            tokio::select! {
                biased;
                () = wake.notified() => {}
                () = &mut ping => {
                    if last_send.elapsed() < ping_every {
                        ping.as_mut().reset(last_send + ping_every);
                        continue;
                    }
                    let paused = {
                        let mut core = self.core.lock();
                        match core.link.as_mut() {
                            Some(link) if link.id == link_id && !link.paused => {
                                put_request(&mut link.out, PING_XID, &Request::Ping);
                                link.pings.push_back(Instant::now());
                                false
                            }
                            Some(link) if link.id == link_id => {
                                link.pings.push_back(Instant::now());
                                true
                            }
                            _ => return LinkEnd::Lost("the connection was replaced".into()),
                        }
                    };
                    if paused {
                        // Held requests wait; the connection is kept alive meanwhile.
                        let mut frame = BytesMut::new();
                        put_request(&mut frame, PING_XID, &Request::Ping);
                        if let Err(error) = write_flush(&mut writer, &frame).await {
                            return LinkEnd::Lost(error.to_string());
                        }
                        last_send = Instant::now();
                        ping.as_mut().reset(last_send + ping_every);
                        continue;
                    }
                }
            }
            {
                let mut core = self.core.lock();
                let Some(link) = core.link.as_mut().filter(|link| link.id == link_id) else {
                    return LinkEnd::Lost("the connection was replaced".into());
                };
                if link.paused {
                    continue;
                }
                std::mem::swap(&mut link.out, &mut buf);
                link.sent = link.pending.len();
            }
            if buf.is_empty() {
                continue;
            }
            if let Err(error) = write_flush(&mut writer, &buf).await {
                return LinkEnd::Lost(error.to_string());
            }
            buf.clear();
            last_send = Instant::now();
            ping.as_mut().reset(last_send + ping_every);
        }
    }

    // ---- the driver ----

    async fn drive(self: Arc<Self>, first: Running) {
        let mut running = Some(first);
        let mut backoff = BACKOFF_START;
        loop {
            let current = match running.take() {
                Some(current) => current,
                None => {
                    let (server, round_done) = self.core.lock().hosts.next();
                    if round_done {
                        let pause = jitter(backoff);
                        backoff = (backoff * 2).min(BACKOFF_MAX);
                        tokio::select! {
                            () = self.stop.cancelled() => break,
                            () = tokio::time::sleep(pause) => {}
                            () = self.wake_driver.notified() => {}
                        }
                    }
                    let timeout = self.attempt_timeout();
                    let attempt = tokio::select! {
                        () = self.stop.cancelled() => break,
                        attempt = self.establish(&server, timeout) => attempt,
                    };
                    match attempt {
                        Ok(established) => {
                            backoff = BACKOFF_START;
                            self.install(established)
                        }
                        Err(ConnectError::Terminal(state, error)) => {
                            self.terminate(state, &error);
                            break;
                        }
                        Err(ConnectError::Retry(why)) => {
                            tracing::debug!(%server, why, "connection attempt failed");
                            continue;
                        }
                    }
                }
            };
            let link_id = current.link_id;
            match self.run(current).await {
                LinkEnd::Stop => break,
                LinkEnd::MovedTo(established) => {
                    tracing::debug!(server = %established.server, "moved");
                    running = Some(self.install(established));
                }
                // A session being closed is not taken anywhere else: the server ends the
                // connection after the close's answer, and a reconnect would only hear that
                // the session is gone (`Expired`) before `close()` has said `Closed`.
                LinkEnd::Lost(_) if self.core.lock().closing => {
                    self.terminate(SessionState::Closed, &Error::Closed);
                    break;
                }
                LinkEnd::Lost(why) => self.lost(link_id, &why),
                LinkEnd::Terminal(state, error) => {
                    self.terminate(state, &error);
                    break;
                }
            }
        }
        self.driver_done.cancel();
    }
}

async fn write_flush<W: AsyncWrite + Unpin>(writer: &mut W, buf: &[u8]) -> std::io::Result<()> {
    writer.write_all(buf).await?;
    writer.flush().await
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

fn jitter(pause: Duration) -> Duration {
    use rand::Rng as _;
    let factor = crate::entropy::with(|rng| rng.random_range(0.5..1.0));
    pause.mul_f64(factor)
}

/// Asks `server` whether it is a read-write server (the `isro` four-letter word, which servers
/// with `readonlymode.enabled` answer); `Some(server)` when it is.
async fn probe_read_write(
    connector: Arc<dyn crate::transport::Connector>,
    server: ServerAddress,
) -> Option<ServerAddress> {
    use tokio::io::AsyncReadExt;
    let ask = async {
        let mut stream = connector.connect(&server).await.ok()?;
        stream.write_all(b"isro").await.ok()?;
        stream.flush().await.ok()?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.ok()?;
        Some(answer)
    };
    match tokio::time::timeout(Duration::from_secs(1), ask).await {
        Ok(Some(answer)) if answer.starts_with(b"rw") => Some(server),
        _ => None,
    }
}

/// setWatches requests for `lists`, each under [`SET_WATCHES_MAX_BYTES`] of paths:
/// setWatches2 when a batch carries persistent watches, the older setWatches otherwise (which
/// servers before 3.6 understand).
fn set_watches(lists: WatchLists, relative_zxid: i64) -> Vec<Request> {
    let mut requests = Vec::new();
    let mut batch = WatchLists::default();
    let mut bytes = 0;
    let kinds = [
        lists.data,
        lists.exist,
        lists.child,
        lists.persistent,
        lists.recursive,
    ];
    for (kind, paths) in kinds.into_iter().enumerate() {
        for path in paths {
            let size = 4 + path.len();
            if bytes + size > SET_WATCHES_MAX_BYTES && !batch.is_empty() {
                requests.push(batch_request(std::mem::take(&mut batch), relative_zxid));
                bytes = 0;
            }
            bytes += size;
            match kind {
                0 => batch.data.push(path),
                1 => batch.exist.push(path),
                2 => batch.child.push(path),
                3 => batch.persistent.push(path),
                _ => batch.recursive.push(path),
            }
        }
    }
    if !batch.is_empty() {
        requests.push(batch_request(batch, relative_zxid));
    }
    requests
}

fn batch_request(batch: WatchLists, relative_zxid: i64) -> Request {
    if batch.persistent.is_empty() && batch.recursive.is_empty() {
        Request::SetWatches(SetWatches {
            relative_zxid,
            data_watches: batch.data,
            exist_watches: batch.exist,
            child_watches: batch.child,
        })
    } else {
        Request::SetWatches2(SetWatches2 {
            relative_zxid,
            data_watches: batch.data,
            exist_watches: batch.exist,
            child_watches: batch.child,
            persistent_watches: batch.persistent,
            persistent_recursive_watches: batch.recursive,
        })
    }
}

/// A ZooKeeper session on the current Tokio runtime: a cheap handle (clone it freely).
///
/// Requests are sent when their method is called (the returned future only waits for the
/// reply), so requests made one after the other reach the server in that order. Dropping the
/// last handle closes the session in the background; [`close`](Self::close) does it and waits.
///
/// ```no_run
/// use curator_session::{Session, SessionConfig};
///
/// # async fn demo() -> curator_session::Result<()> {
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")?).await?;
/// let (path, _stat) = session
///     .create("/hello", b"world", curator_session::open_acl(), curator_wire::proto::CreateMode::Ephemeral, None)
///     .await?;
/// let (data, _stat) = session.get_data(&path).await?;
/// assert_eq!(data, b"world");
/// session.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    pub(crate) shared: Arc<Shared>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shared.fmt(f)
    }
}

/// Closes the session when the last handle goes.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        let shared = Arc::clone(&self.0);
        if shared.core.lock().state.is_terminal() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = shared.close(None).await;
                });
            }
            Err(_) => shared.terminate(SessionState::Closed, &Error::Closed),
        }
    }
}

impl Shared {
    async fn close(self: &Arc<Self>, bound: Option<Duration>) -> Result<()> {
        let (reply, wait) = {
            let mut core = self.core.lock();
            if core.state.is_terminal() || core.closing {
                return Ok(());
            }
            // Watchers learn of the close now, whatever the connection does.
            let senders = core.watches.drain();
            let event = WatchedEvent::session(KeeperState::Closed);
            for sender in senders {
                sender.send(event.clone());
            }
            let reply = if core.state.is_connected() && core.link.is_some() {
                let (reply, receiver) = oneshot::channel();
                let xid = core.next_xid();
                let link = core.link.as_mut().expect("checked");
                put_request(&mut link.out, xid, &Request::CloseSession);
                link.pending.push_back(Pending {
                    xid,
                    reply: Some(reply),
                    watch: None,
                    queued: Instant::now(),
                });
                if !link.paused {
                    link.wake.notify_one();
                }
                Some(receiver)
            } else {
                None
            };
            core.closing = true;
            (reply, bound.unwrap_or(core.negotiated))
        };
        // A closed session ends at the server at once (its ephemeral nodes go); without a
        // connection it is left to expire: closing never waits for the network to return.
        if let Some(reply) = reply {
            let _ = tokio::time::timeout(wait, reply).await;
        }
        self.terminate(SessionState::Closed, &Error::Closed);
        let _ = tokio::time::timeout(wait, self.driver_done.cancelled()).await;
        Ok(())
    }
}

/// Every transition of a session's state, in order (see [`Session::state_changes`]).
#[derive(Debug)]
pub struct StateChanges(mpsc::UnboundedReceiver<SessionState>);

impl StateChanges {
    /// The next state; `None` after a terminal one.
    pub async fn next(&mut self) -> Option<SessionState> {
        self.0.recv().await
    }
}

impl Session {
    /// Opens a session: tries the servers of the list in turn (in the list's shuffled order, each
    /// attempt bounded by the session timeout divided by the number of servers), round after
    /// round with a short pause between rounds, until one takes the session or the connection
    /// timeout passes ([`SessionConfig::one_connect_round`] stops after the first round); then
    /// keeps the session connected in a task of the current runtime.
    ///
    /// # Errors
    /// [`Error::NoServer`] with each server's last reason when none accepted the session;
    /// [`Error::SessionExpired`] when resuming a session the server no longer has;
    /// [`Error::AuthFailed`] when the credentials were refused; [`Error::InvalidArgument`]
    /// for an empty server list or a zero timeout.
    pub async fn connect(config: SessionConfig) -> Result<Session> {
        if config.servers.is_empty() {
            return Err(Error::InvalidArgument("no server to connect to".into()));
        }
        if config.session_timeout.is_zero() || config.connection_timeout.is_zero() {
            return Err(Error::InvalidArgument(
                "the session and connection timeouts must be more than zero".into(),
            ));
        }
        let shared = Arc::new(Shared::new(config));
        let deadline = Instant::now() + shared.config.connection_timeout;
        // The last reason of each server.
        let mut reasons: Vec<(ServerAddress, String)> = Vec::new();
        let servers = shared.core.lock().hosts.len();
        let mut backoff = BACKOFF_START;
        'rounds: loop {
            for _ in 0..servers {
                let (server, _) = shared.core.lock().hosts.next();
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    break 'rounds;
                }
                let full = shared.attempt_timeout();
                let timeout = full.min(remaining);
                match shared.establish(&server, timeout).await {
                    Ok(established) => {
                        let running = shared.install(established);
                        tokio::spawn(Arc::clone(&shared).drive(running));
                        return Ok(Session {
                            _owner: Arc::new(Owner(Arc::clone(&shared))),
                            shared,
                        });
                    }
                    Err(ConnectError::Terminal(state, error)) => {
                        shared.terminate(state, &error);
                        return Err(error);
                    }
                    Err(ConnectError::Retry(why)) => {
                        // An attempt cut short by the deadline says less than the server's
                        // earlier answer (a certificate, a refusal): that one is kept.
                        let clipped = timeout < full;
                        if !(clipped && reasons.iter().any(|(s, _)| *s == server)) {
                            reasons.retain(|(s, _)| *s != server);
                            reasons.push((server, why));
                        }
                    }
                }
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if shared.config.one_connect_round || remaining.is_zero() {
                break;
            }
            tokio::time::sleep(jitter(backoff).min(remaining)).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        let reasons: Vec<String> = reasons
            .into_iter()
            .map(|(server, why)| format!("{server}: {why}"))
            .collect();
        shared.terminate(SessionState::Closed, &Error::Closed);
        Err(Error::NoServer(reasons.join("; ")))
    }

    /// The session's id.
    pub fn session_id(&self) -> i64 {
        self.shared.core.lock().session_id
    }

    /// The session's password (with the id, what takes the session over from another
    /// connection).
    pub fn password(&self) -> Vec<u8> {
        self.shared.core.lock().password.clone()
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Duration {
        self.shared.core.lock().negotiated
    }

    /// The current state.
    pub fn state(&self) -> SessionState {
        self.shared.core.lock().state
    }

    /// The latest state, as a watch channel (intermediate states may be skipped; see
    /// [`state_changes`](Self::state_changes) for every one).
    pub fn state_watch(&self) -> watch::Receiver<SessionState> {
        self.shared.state_tx.subscribe()
    }

    /// Every state transition from now on, in order; ends after a terminal state.
    pub fn state_changes(&self) -> StateChanges {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut core = self.shared.core.lock();
        if !core.state.is_terminal() {
            core.subscribers.push(sender);
        }
        StateChanges(receiver)
    }

    /// The zxid of the last reply that carried one.
    pub fn last_zxid(&self) -> i64 {
        self.shared.core.lock().last_zxid
    }

    /// When anything was last heard from a server (a reply, a notification, a ping's answer).
    pub fn last_heard(&self) -> Instant {
        self.shared.base + Duration::from_micros(self.shared.last_heard.load(Ordering::Relaxed))
    }

    /// The latest instant at which a read-write server is known to have renewed this session:
    /// when the last request it answered (a ping included) or the handshake it accepted was
    /// queued here. The server received it after that, and a server renews a session with
    /// every request it receives, so the session lives at least until this instant plus the
    /// [negotiated timeout](Self::negotiated_timeout), measured on the server's clock (the
    /// leader's): the base of a hold's deadline. `None` before any such answer. Answers from a
    /// read-only server renew nothing (it has no quorum).
    ///
    /// ```no_run
    /// # async fn demo(session: curator_session::Session) {
    /// if let Some(renewed) = session.last_renewed() {
    ///     let alive_until_at_least = renewed + session.negotiated_timeout();
    ///     # let _ = alive_until_at_least;
    /// }
    /// # }
    /// ```
    pub fn last_renewed(&self) -> Option<Instant> {
        match self.shared.last_renewed.load(Ordering::Relaxed) {
            0 => None,
            micros => Some(self.shared.base + Duration::from_micros(micros)),
        }
    }

    /// The server of the current connection; `None` while disconnected, and while the session
    /// moves to another server (a planned move: from the decision until the new connection
    /// serves, or the move is given up and the old one serves again).
    pub fn server(&self) -> Option<ServerAddress> {
        let core = self.shared.core.lock();
        if core.move_requested || core.link.as_ref().is_some_and(|link| link.paused) {
            return None;
        }
        core.server.clone()
    }

    /// The server list (shuffled).
    pub fn servers(&self) -> Vec<ServerAddress> {
        self.shared.core.lock().hosts.servers().to_vec()
    }

    /// The chroot the session's paths are under.
    pub fn chroot(&self) -> Option<&str> {
        self.shared.config.chroot.as_deref()
    }

    /// Replaces the server list (Java's `updateServerList`). Returns whether this client
    /// decided to move (see the crate docs' rebalancing): a connected session then moves to a
    /// server of the new list without a `Disconnected` (held requests wait, none fail); a
    /// disconnected one tries the new list next.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty list.
    pub fn update_server_list(&self, servers: Vec<ServerAddress>) -> Result<bool> {
        if servers.is_empty() {
            return Err(Error::InvalidArgument("an empty server list".into()));
        }
        let mut core = self.shared.core.lock();
        let connected = core.state.is_connected() && core.link.is_some();
        let current = if connected { core.server.clone() } else { None };
        let decision = core.hosts.update(servers, current.as_ref());
        let moving = matches!(decision, Rebalance::Move(_));
        if moving && connected {
            core.move_requested = true;
            drop(core);
            self.shared.wake_driver.notify_one();
        }
        Ok(moving)
    }

    /// Moves the session to another server of the list, keeping it: requests made meanwhile
    /// are held, not failed. Does nothing while disconnected (the session is already looking
    /// for a server) or with a single server.
    pub fn reconnect(&self) {
        let mut core = self.shared.core.lock();
        let Some(current) = core.server.clone() else {
            return;
        };
        let Some(target) = core.hosts.next_other(&current) else {
            return;
        };
        core.hosts.prefer(target);
        core.move_requested = true;
        drop(core);
        self.shared.wake_driver.notify_one();
    }

    /// Ends the session here without telling the server, which keeps it until it expires or
    /// another connection takes it over ([`SessionConfig::resume`]): for handing a session
    /// over to another client. Watchers hear `Closed`; waiting requests fail with
    /// [`Error::Closed`].
    pub fn abandon(&self) {
        self.shared.terminate(SessionState::Closed, &Error::Closed);
    }

    /// Closes the session: watchers hear `Closed` at once and new requests fail with
    /// [`Error::Closed`]; with a connection, the server is asked to end the session (its
    /// ephemeral nodes go) and the answer is awaited up to the session timeout (requests sent
    /// before the close get their replies first); without one, nothing waits for the network
    /// (the session expires at the server). Whatever still waits then fails with
    /// [`Error::Closed`].
    ///
    /// # Errors
    /// None today; the `Result` leaves room for reporting the server's answer.
    ///
    /// # Cancellation safety
    /// Dropping the future after its first poll still ends the session locally.
    pub async fn close(&self) -> Result<()> {
        self.close_bounded(None).await
    }

    /// [`close`](Self::close), waiting for the server's answer (and the driver's end) at most
    /// `bound`: after it, the session ends here whatever the server heard.
    ///
    /// # Errors
    /// As [`close`](Self::close).
    ///
    /// # Cancellation safety
    /// As [`close`](Self::close).
    pub async fn close_within(&self, bound: Duration) -> Result<()> {
        self.close_bounded(Some(bound)).await
    }

    async fn close_bounded(&self, bound: Option<Duration>) -> Result<()> {
        struct EndOnDrop<'a>(&'a Shared);
        impl Drop for EndOnDrop<'_> {
            fn drop(&mut self) {
                self.0.terminate(SessionState::Closed, &Error::Closed);
            }
        }
        let guard = EndOnDrop(&self.shared);
        let result = self.shared.close(bound).await;
        drop(guard);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_watches_batches_stay_under_the_limit() {
        let long = |i: usize| format!("/{}", "x".repeat(1000) + &i.to_string());
        let lists = WatchLists {
            data: (0..200).map(long).collect(),
            exist: vec!["/e".into()],
            child: vec![],
            persistent: vec![],
            recursive: vec!["/r".into()],
        };
        let requests = set_watches(lists, 7);
        assert_eq!(requests.len(), 2);
        let Request::SetWatches(first) = &requests[0] else {
            panic!("no persistent watch in the first batch: the old request");
        };
        assert_eq!(first.relative_zxid, 7);
        let bytes: usize = first.data_watches.iter().map(|p| 4 + p.len()).sum();
        assert!(bytes <= SET_WATCHES_MAX_BYTES);
        let Request::SetWatches2(second) = &requests[1] else {
            panic!("the batch with a recursive watch needs setWatches2");
        };
        assert_eq!(second.persistent_recursive_watches, ["/r"]);
        assert_eq!(second.exist_watches, ["/e"]);
        assert_eq!(first.data_watches.len() + second.data_watches.len(), 200);
    }

    #[test]
    fn xids_wrap_before_the_reserved_ones() {
        let mut core = Shared::new(SessionConfig::new("127.0.0.1:1").unwrap())
            .core
            .into_inner();
        core.xid = i32::MAX - 2;
        assert_eq!(core.next_xid(), i32::MAX - 1);
        assert_eq!(core.next_xid(), 1);
    }

    #[test]
    fn frames_are_length_prefixed() {
        let mut out = BytesMut::new();
        put_request(&mut out, PING_XID, &Request::Ping);
        assert_eq!(&out[..], &[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11]);
    }
}
