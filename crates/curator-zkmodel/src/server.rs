//! The network front: the model behind a lock, served over any `AsyncRead + AsyncWrite`
//! with curator-wire's server codec, and an in-process TCP server on loopback.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use curator_wire::CodecError;
use curator_wire::codec::{ClientFrame, ReplyFrame, RequestFrame, ServerCodec, ServerFrame};
use curator_wire::proto::ErrorCode;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{Connect, ConnectionId, Message, Model, ModelConfig, Outcome, Reply};

/// Why serving a connection ended other than by either side closing it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The stream could not be read or written, or carried a frame that is not ZooKeeper's.
    #[error("connection failed: {0}")]
    Codec(#[from] CodecError),
    /// The client broke the protocol (a second handshake, a request before the handshake).
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
}

/// The model's time: wall-clock milliseconds at creation, advanced by Tokio's clock (so a test
/// with paused time drives session expiry and container reaping).
#[derive(Clone)]
struct Clock {
    wall_at_start: i64,
    started: tokio::time::Instant,
    /// The caller's clock instead of Tokio's (see [`Server::with_clock`]).
    custom: Option<Arc<dyn Fn() -> i64 + Send + Sync>>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("wall_at_start", &self.wall_at_start)
            .field("custom", &self.custom.is_some())
            .finish()
    }
}

impl Clock {
    fn new() -> Clock {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| {
                i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
            });
        Clock {
            wall_at_start: wall,
            started: tokio::time::Instant::now(),
            custom: None,
        }
    }

    fn now(&self) -> i64 {
        match &self.custom {
            Some(now) => now(),
            None => {
                self.wall_at_start
                    + i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX)
            }
        }
    }

    fn instant(&self, at: i64) -> tokio::time::Instant {
        self.started + Duration::from_millis(u64::try_from(at - self.wall_at_start).unwrap_or(0))
    }
}

/// The model and where its messages go.
#[derive(Debug)]
struct State {
    model: Model,
    routes: HashMap<ConnectionId, mpsc::UnboundedSender<Message>>,
}

impl State {
    /// Hands each message to its connection's writer, in order; a closed connection gets
    /// nothing after its `Close`.
    fn route(&mut self, outcome: Outcome) {
        for delivery in outcome.deliveries {
            let close = delivery.message == Message::Close;
            if let Some(route) = self.routes.get(&delivery.connection) {
                let _ = route.send(delivery.message);
            }
            if close {
                self.routes.remove(&delivery.connection);
            }
        }
    }
}

/// A [`Model`] shared by the connections that serve it, on the real clock (Tokio's, so
/// paused time works). A cheap handle (`Clone`).
///
/// [`serve`](Server::serve) runs one client connection over any transport; the caller decides
/// when sessions expire and containers are reaped ([`tick`](Server::tick)), or uses
/// [`InProcessServer`], which does both on a schedule.
///
/// ```
/// use curator_zkmodel::{ModelConfig, Server};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = Server::new(ModelConfig::default());
/// let (client_side, server_side) = tokio::io::duplex(64 * 1024);
/// let serving = tokio::spawn({
///     let server = server.clone();
///     async move { server.serve(server_side, "127.0.0.1").await }
/// });
/// drop(client_side); // a client that leaves before its handshake
/// serving.await.unwrap().unwrap();
/// assert!(server.with_model(|model| model.session_ids().is_empty()));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Server {
    state: Arc<Mutex<State>>,
    clock: Clock,
}

impl Server {
    /// A model server starting now with an empty tree. Must be called inside a Tokio runtime
    /// when its time is paused (the clock is Tokio's).
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::new(ModelConfig::default().tick_time(100));
    /// assert_eq!(server.with_model(|model| model.config().tick()), 100);
    /// # }
    /// ```
    pub fn new(config: ModelConfig) -> Server {
        Self::on(config, Clock::new())
    }

    /// A model server whose time (milliseconds since the Unix epoch) comes from `now`, for a
    /// simulation with a clock of its own (curator-sim gives turmoil's). Nothing runs on a
    /// schedule of its own: call [`tick`](Self::tick) to expire sessions and reap nodes.
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::with_clock(ModelConfig::default(), || 1_700_000_000_000);
    /// assert_eq!(server.now(), 1_700_000_000_000);
    /// server.tick();
    /// # }
    /// ```
    pub fn with_clock(
        config: ModelConfig,
        now: impl Fn() -> i64 + Send + Sync + 'static,
    ) -> Server {
        Self::on(
            config,
            Clock {
                wall_at_start: 0,
                started: tokio::time::Instant::now(),
                custom: Some(Arc::new(now)),
            },
        )
    }

    fn on(config: ModelConfig, clock: Clock) -> Server {
        Server {
            state: Arc::new(Mutex::new(State {
                model: Model::new(config, clock.now()),
                routes: HashMap::new(),
            })),
            clock,
        }
    }

    /// The model's current time (milliseconds since the Unix epoch, moved by Tokio's clock).
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// assert!(Server::new(ModelConfig::default()).now() > 0);
    /// # }
    /// ```
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// Reads the model (its tree, sessions, zxid) under the lock.
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::new(ModelConfig::default());
    /// assert_eq!(server.with_model(|model| model.last_zxid()), 0);
    /// # }
    /// ```
    pub fn with_model<R>(&self, read: impl FnOnce(&Model) -> R) -> R {
        read(&self.state.lock().model)
    }

    /// Expires sessions whose deadline has passed and reaps containers and TTL nodes
    /// ([`Model::tick`]) at the current time.
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// Server::new(ModelConfig::default()).tick();
    /// # }
    /// ```
    pub fn tick(&self) {
        let now = self.now();
        let mut state = self.state.lock();
        let outcome = state.model.tick(now);
        state.route(outcome);
    }

    /// Expires the sessions whose deadline has passed ([`Model::expire_sessions`]).
    fn expire_sessions(&self) {
        let now = self.now();
        let mut state = self.state.lock();
        let outcome = state.model.expire_sessions(now);
        state.route(outcome);
    }

    /// Reaps containers and TTL nodes ([`Model::reap`]).
    fn reap(&self) {
        let now = self.now();
        let mut state = self.state.lock();
        let outcome = state.model.reap(now);
        state.route(outcome);
    }

    /// Expires a session now, as the server does when it stops hearing from one: its
    /// ephemeral nodes are deleted and its connection is closed (its client learns of the
    /// expiry when it reconnects). `false` when there is no such session.
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// assert!(!Server::new(ModelConfig::default()).expire_session(0x42));
    /// # }
    /// ```
    pub fn expire_session(&self, session_id: i64) -> bool {
        let mut state = self.state.lock();
        let (expired, outcome) = state.model.expire_session(session_id);
        state.route(outcome);
        expired
    }

    /// Closes every connection and tracks every session again from now, as a restarted
    /// server that kept its data does ([`Model::restart`]).
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, Server};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let server = Server::with_clock(ModelConfig::default(), || 1_000);
    /// server.restart();
    /// # }
    /// ```
    pub fn restart(&self) {
        let now = self.now();
        let mut state = self.state.lock();
        let outcome = state.model.restart(now);
        state.route(outcome);
    }

    /// Serves one client connection over `io` until either side closes it: the handshake
    /// (a new session, or a resumed one by id and password; a refused one is answered with a
    /// zero timeout and closed), then requests in order, with replies and watch
    /// notifications written in the order the model made them. `peer` is the client's
    /// address, its `ip` identity.
    ///
    /// A request body that cannot be read is answered `MarshallingError`, as a ZooKeeper
    /// server does; a frame that cannot be read at all ends the connection.
    ///
    /// # Errors
    /// [`ServeError`] when the transport fails or the client breaks the protocol. A client
    /// that closes its connection, or one the model closes, ends it with `Ok`.
    ///
    /// # Cancellation safety
    /// Dropping the future closes the connection, as the transport ending would (the
    /// session lives on).
    pub async fn serve<T>(&self, io: T, peer: &str) -> Result<(), ServeError>
    where
        T: AsyncRead + AsyncWrite + Send + Unpin,
    {
        let mut framed = Framed::new(io, ServerCodec::new());
        let hello = match framed.next().await {
            None => return Ok(()),
            Some(Err(error)) => return Err(error.into()),
            Some(Ok(ClientFrame::Connect(hello))) => hello,
            Some(Ok(ClientFrame::Request(_))) => {
                return Err(ServeError::Protocol("a request before the handshake"));
            }
        };
        let (sender, mut messages) = mpsc::unbounded_channel();
        let answer = {
            let now = self.now();
            let mut state = self.state.lock();
            match state.model.connect(now, &hello, peer) {
                Connect::Accepted {
                    connection,
                    response,
                    others,
                } => {
                    state.route(others);
                    state.routes.insert(connection, sender);
                    Ok((connection, response))
                }
                Connect::Refused { response, others } => {
                    state.route(others);
                    Err(Some(response))
                }
                Connect::Dropped => Err(None),
            }
        };
        let (connection, response) = match answer {
            Ok(accepted) => accepted,
            Err(refused) => {
                if let Some(response) = refused {
                    framed.send(ServerFrame::Connected(response)).await?;
                    let _ = framed.close().await;
                }
                return Ok(());
            }
        };
        let _guard = Attached {
            state: &self.state,
            connection,
        };
        tracing::debug!(
            session_id = format_args!("{:#x}", response.session_id),
            timeout_ms = response.timeout,
            "model session connected"
        );
        framed.send(ServerFrame::Connected(response)).await?;
        let (mut sink, mut frames) = framed.split();
        loop {
            tokio::select! {
                biased;
                message = messages.recv() => {
                    let mut next = message;
                    // Write what is queued, then flush once.
                    loop {
                        match next {
                            None | Some(Message::Close) => {
                                let _ = sink.close().await;
                                return Ok(());
                            }
                            Some(message) => {
                                if let Some(frame) = frame_of(message) {
                                    sink.feed(frame).await?;
                                }
                            }
                        }
                        match messages.try_recv() {
                            Ok(message) => next = Some(message),
                            Err(_) => break,
                        }
                    }
                    sink.flush().await?;
                }
                frame = frames.next() => match frame {
                    None => return Ok(()),
                    Some(Err(error)) => return Err(error.into()),
                    Some(Ok(ClientFrame::Connect(_))) => {
                        return Err(ServeError::Protocol("a second handshake"));
                    }
                    Some(Ok(ClientFrame::Request(request))) => self.request(connection, &request),
                }
            }
        }
    }

    /// One request frame of a connection.
    fn request(&self, connection: ConnectionId, frame: &RequestFrame) {
        let now = self.now();
        let mut state = self.state.lock();
        let outcome = match frame.decode() {
            Ok(request) => state
                .model
                .handle(now, connection, frame.header.xid, request),
            Err(error) => {
                tracing::debug!(%error, "a request body the model cannot read");
                let mut outcome = Outcome::default();
                outcome.deliveries.push(crate::Delivery {
                    connection,
                    message: Message::Reply(Reply {
                        xid: frame.header.xid,
                        zxid: state.model.last_zxid(),
                        result: Err(ErrorCode::MarshallingError),
                    }),
                });
                outcome
            }
        };
        state.route(outcome);
    }
}

/// Detaches a served connection from the model when serving ends, however it ends.
struct Attached<'a> {
    state: &'a Mutex<State>,
    connection: ConnectionId,
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        state.routes.remove(&self.connection);
        state.model.disconnect(self.connection);
    }
}

fn frame_of(message: Message) -> Option<ServerFrame> {
    Some(ServerFrame::Reply(match message {
        Message::Reply(Reply { xid, zxid, result }) => match result {
            Ok(response) => ReplyFrame::ok(xid, zxid, &response),
            Err(code) => ReplyFrame::error(xid, zxid, code),
        },
        Message::Notification { zxid, event } => ReplyFrame::notification(zxid, &event),
        Message::Close => return None,
    }))
}

/// Settings of an [`InProcessServer`].
///
/// ```
/// use std::time::Duration;
/// use curator_zkmodel::{InProcessServer, ModelConfig};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = InProcessServer::builder()
///     .config(ModelConfig::default().tick_time(200))
///     .container_check_interval(Duration::from_millis(100))
///     .start()
///     .await?;
/// server.stop().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct InProcessServerBuilder {
    config: ModelConfig,
    container_check_interval: Duration,
    port: u16,
}

impl InProcessServerBuilder {
    /// The model's settings (tick, session timeout bounds, super digest, TTL nodes).
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator_zkmodel::{InProcessServer, ModelConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::builder()
    ///     .config(ModelConfig::default().tick_time(100))
    ///     .container_check_interval(Duration::from_millis(50))
    ///     .start()
    ///     .await?;
    /// assert_eq!(server.server().with_model(|model| model.config().tick()), 100);
    /// # Ok(())
    /// # }
    /// ```
    pub fn config(mut self, config: ModelConfig) -> Self {
        self.config = config;
        self
    }

    /// How often empty containers and expired TTL nodes are reaped
    /// (`znode.container.checkIntervalMs`; 60 s by default, as ZooKeeper).
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator_zkmodel::InProcessServer;
    ///
    /// let builder = InProcessServer::builder().container_check_interval(Duration::from_millis(50));
    /// # drop(builder);
    /// ```
    pub fn container_check_interval(mut self, interval: Duration) -> Self {
        self.container_check_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// The port to listen on (default: any free one).
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// let builder = InProcessServer::builder().port(2181);
    /// # drop(builder);
    /// ```
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Binds `127.0.0.1` on its port (a free one by default) and starts serving on the current
    /// Tokio runtime.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::builder().start().await?;
    /// assert!(server.connect_string().starts_with("127.0.0.1:"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The bind's I/O error.
    ///
    /// # Cancellation safety
    /// Nothing is started until the future completes.
    pub async fn start(self) -> std::io::Result<InProcessServer> {
        let server = Server::new(self.config);
        let listener = bind(self.port)?;
        let port = listener.local_addr()?.port();
        let running = Running::start(&server, listener, self.container_check_interval);
        Ok(InProcessServer {
            server,
            port,
            container_check_interval: self.container_check_interval,
            running: tokio::sync::Mutex::new(Some(running)),
        })
    }
}

/// A ZooKeeper model server on loopback TCP, running on the caller's Tokio runtime: for
/// tests, never for production. Sessions expire on the tick (Tokio's clock, so paused time
/// works) and containers are reaped on their own interval.
///
/// [`stop`](InProcessServer::stop) and [`restart`](InProcessServer::restart) behave as a
/// real server that keeps its data: connections close, the tree and the sessions stay, and a
/// restarted server gives every session its whole timeout again (clients resume their
/// sessions and set their watches again). Dropping the server stops it.
///
/// ```
/// use curator_zkmodel::InProcessServer;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let server = InProcessServer::start().await?;
/// assert!(server.connect_string().starts_with("127.0.0.1:"));
/// server.restart().await?;
/// server.stop().await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct InProcessServer {
    server: Server,
    port: u16,
    container_check_interval: Duration,
    running: tokio::sync::Mutex<Option<Running>>,
}

impl InProcessServer {
    /// A server with the default settings ([`ModelConfig::default`], containers checked every
    /// 60 s).
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// assert!(server.port() > 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The bind's I/O error.
    pub async fn start() -> std::io::Result<InProcessServer> {
        Self::builder().start().await
    }

    /// Settings before starting.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// let builder = InProcessServer::builder();
    /// # drop(builder);
    /// ```
    pub fn builder() -> InProcessServerBuilder {
        InProcessServerBuilder {
            config: ModelConfig::default(),
            container_check_interval: Duration::from_secs(60),
            port: 0,
        }
    }

    /// `127.0.0.1:<port>`, for a client's connect string.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// assert_eq!(server.connect_string(), format!("127.0.0.1:{}", server.port()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The port (the same after a restart).
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// let port = server.port();
    /// server.restart().await?;
    /// assert_eq!(server.port(), port);
    /// # Ok(())
    /// # }
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The shared model, to read it or expire sessions.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// assert!(server.server().with_model(|model| model.session_ids().is_empty()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Expires a session now ([`Server::expire_session`]).
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// assert!(!server.expire_session(0x1234), "no such session");
    /// # Ok(())
    /// # }
    /// ```
    pub fn expire_session(&self, session_id: i64) -> bool {
        self.server.expire_session(session_id)
    }

    /// Stops serving: the listener closes, every connection closes, sessions stop expiring
    /// (the tree and sessions stay for a [`restart`](Self::restart)). Does nothing when
    /// stopped already.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// server.stop().await;
    /// server.stop().await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Cancellation safety
    /// Dropping the future after it began leaves the server stopping or stopped (its tasks are
    /// told to end); call `stop` or `restart` again.
    pub async fn stop(&self) {
        let running = self.running.lock().await.take();
        if let Some(running) = running {
            running.stop().await;
            self.server.restart();
        }
    }

    /// Stops (if running) and serves again on the same port with the same tree and sessions,
    /// each session tracked again with its whole timeout from now.
    ///
    /// ```
    /// use curator_zkmodel::InProcessServer;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let server = InProcessServer::start().await?;
    /// server.stop().await;
    /// server.restart().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The bind's I/O error (the port was taken meanwhile).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the server stopped; call `restart` again.
    pub async fn restart(&self) -> std::io::Result<()> {
        let mut running = self.running.lock().await;
        if let Some(old) = running.take() {
            old.stop().await;
        }
        self.server.restart();
        let listener = bind(self.port)?;
        *running = Some(Running::start(
            &self.server,
            listener,
            self.container_check_interval,
        ));
        Ok(())
    }
}

impl Drop for InProcessServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.get_mut().as_ref() {
            running.cancel.cancel();
        }
    }
}

/// The tasks of a serving server.
#[derive(Debug)]
struct Running {
    cancel: CancellationToken,
    tasks: TaskTracker,
}

impl Running {
    fn start(server: &Server, listener: tokio::net::TcpListener, containers: Duration) -> Running {
        let cancel = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(accept(
            server.clone(),
            listener,
            cancel.clone(),
            tasks.clone(),
        ));
        tasks.spawn(schedule(server.clone(), containers, cancel.clone()));
        Running { cancel, tasks }
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

fn bind(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))?;
    socket.listen(1024)
}

async fn accept(
    server: Server,
    listener: tokio::net::TcpListener,
    cancel: CancellationToken,
    tasks: TaskTracker,
) {
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, peer)) = accepted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let peer = peer.ip().to_string();
            tokio::select! {
                () = cancel.cancelled() => {}
                result = server.serve(stream, &peer) => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "model connection ended");
                    }
                }
            }
        });
    }
}

/// Expires sessions on each tick boundary (where their deadlines fall) and reaps containers
/// on their interval.
async fn schedule(server: Server, containers: Duration, cancel: CancellationToken) {
    let tick = server.with_model(|model| model.config().tick());
    let mut next_reap = tokio::time::Instant::now() + containers;
    loop {
        let now = server.now();
        let next_tick = server.clock.instant((now.div_euclid(tick) + 1) * tick);
        let wake = next_tick.min(next_reap);
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep_until(wake) => {}
        }
        server.expire_sessions();
        if tokio::time::Instant::now() >= next_reap {
            server.reap();
            next_reap = tokio::time::Instant::now() + containers;
        }
    }
}
