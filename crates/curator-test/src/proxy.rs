//! `FaultProxy`: a loopback TCP proxy that can black-hole or cut the links it carries.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::error::{Error, Result};
use crate::session::{SessionCredentials, parse_connect_response};

/// A loopback TCP proxy in front of one server, for partition tests.
///
/// Point a client at [`connect_string`](Self::connect_string) instead of the server. Then:
/// - [`pause`](Self::pause) black-holes every link, current and new: bytes stop flowing in both
///   directions, but no connection is reset, as when a network partition drops packets. The
///   client's own timeouts must notice.
/// - [`resume`](Self::resume) lets bytes flow again, including those held while paused.
/// - [`drop_connections`](Self::drop_connections) closes every current link at once, as when a
///   connection is cut; the client reconnects through the proxy.
///
/// The proxy also reads the first answer the server sends on each link, which carries the session
/// id and password, so [`sessions`](Self::sessions) can hand them to [`crate::expire_session`]
/// for any client, whatever its language.
///
/// It runs on the Tokio runtime that starts it and stops when dropped.
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// let server = curator_test::TestingServer::start().await?;
/// let proxy = curator_test::FaultProxy::start(&server.connect_string()).await?;
/// // connect a client to proxy.connect_string() ...
/// proxy.pause();            // the client is partitioned from the server
/// proxy.resume();           // and rejoins
/// proxy.drop_connections(); // its connection is cut; it reconnects
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    address: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    /// Where new links go ([`FaultProxy::retarget`] changes it).
    upstream: Mutex<String>,
    /// Client-to-server bytes held.
    paused: watch::Sender<bool>,
    /// Server-to-client bytes held.
    replies_paused: watch::Sender<bool>,
    links: Mutex<JoinSet<()>>,
    sessions: Mutex<Vec<SessionCredentials>>,
    /// New links are closed at once ([`FaultProxy::cut`]).
    refusing: AtomicBool,
    /// For a link between ensemble members' election ports: the election address written into
    /// the connecting member's first message instead of its own (see [`FaultProxy::start_peer`]).
    advertise: Option<String>,
    /// How long a new link waits for its upstream to accept (a member's proxy; see
    /// [`FaultProxy::start_peer`]); zero: one try.
    upstream_patience: std::time::Duration,
    /// Upstream connection attempts refused so far.
    refused: watch::Sender<u64>,
}

/// How long a member's proxy keeps trying to reach the member behind it for a new link.
const PEER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

impl FaultProxy {
    /// Starts a proxy on a free `127.0.0.1` port that forwards to `upstream` (`host:port`; of a
    /// connect string with several hosts, the first).
    ///
    /// # Errors
    /// [`Error::Io`] when no port can be bound.
    pub async fn start(upstream: &str) -> Result<Self> {
        Self::start_on(
            "127.0.0.1:0".parse().expect("a socket address"),
            upstream,
            None,
            std::time::Duration::ZERO,
        )
        .await
    }

    /// A proxy on `bind` (a loopback address and port) in front of an ensemble member's quorum
    /// or election port, for [`TestingCluster`](crate::TestingCluster)'s member partitions.
    ///
    /// With `advertise`, the proxy carries election traffic: the connecting member's first
    /// message (ZooKeeper's `InitialMessage`: protocol version, server id, its own election
    /// address) names `advertise` as its election address instead. A member that receives a
    /// connection from a member with a lower id closes it and connects back to the address in
    /// that message, which is the connecting member's real port: without the rewrite that
    /// connection would bypass every proxy.
    ///
    /// A new link waits up to 5 s for the member behind it to accept, trying every 20 ms. The
    /// proxy has already accepted the connecting member's connection, so giving up at once
    /// would close a connection that had succeeded: ZooKeeper retries a refused connection to
    /// its leader, but takes one closed after it was made for a failed leader and starts a new
    /// election, which then waits `initLimit` for the leader it abandoned. A new leader's
    /// quorum port opens a moment after it is elected, so without the wait every leader kill
    /// cost the ensemble about `initLimit` (10 s) instead of half a second.
    pub(crate) async fn start_peer(
        bind: SocketAddr,
        upstream: &str,
        advertise: Option<String>,
    ) -> Result<Self> {
        Self::start_on(bind, upstream, advertise, PEER_PATIENCE).await
    }

    async fn start_on(
        bind: SocketAddr,
        upstream: &str,
        advertise: Option<String>,
        upstream_patience: std::time::Duration,
    ) -> Result<Self> {
        let upstream = upstream
            .split(',')
            .next()
            .unwrap_or(upstream)
            .trim()
            .to_owned();
        let listener = TcpListener::bind(bind)
            .await
            .map_err(Error::io(format!("binding the fault proxy on {bind}")))?;
        let address = listener
            .local_addr()
            .map_err(Error::io("reading the proxy's address"))?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            paused: watch::Sender::new(false),
            replies_paused: watch::Sender::new(false),
            links: Mutex::new(JoinSet::new()),
            sessions: Mutex::new(Vec::new()),
            refusing: AtomicBool::new(false),
            advertise,
            upstream_patience,
            refused: watch::Sender::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(Self {
            address,
            shared,
            accept,
        })
    }

    /// `127.0.0.1:port` of the proxy, for a client's connect string.
    pub fn connect_string(&self) -> String {
        self.address.to_string()
    }

    /// Stops every byte on every link, current and future, without closing anything.
    pub fn pause(&self) {
        self.shared.paused.send_replace(true);
        self.shared.replies_paused.send_replace(true);
    }

    /// Holds only what the server sends: requests still reach the server and are applied, but
    /// their replies do not come back. Followed by
    /// [`drop_connections`](Self::drop_connections), this loses the replies for good: the way to
    /// test what a client does when it cannot know whether a request was applied.
    pub fn pause_replies(&self) {
        self.shared.replies_paused.send_replace(true);
    }

    /// Lets bytes flow again, in both directions.
    pub fn resume(&self) {
        self.shared.paused.send_replace(false);
        self.shared.replies_paused.send_replace(false);
    }

    /// Whether the proxy holds client-to-server bytes.
    pub fn is_paused(&self) -> bool {
        *self.shared.paused.borrow()
    }

    /// Cuts the proxy off: closes every current link and, until [`mend`](Self::mend), closes
    /// new ones as soon as they are accepted (as a firewall's reject rule would).
    pub(crate) fn cut(&self) {
        self.shared.refusing.store(true, Ordering::SeqCst);
        self.drop_connections();
    }

    /// Accepts new links again after [`cut`](Self::cut).
    pub(crate) fn mend(&self) {
        self.shared.refusing.store(false, Ordering::SeqCst);
    }

    /// Whether the proxy is [`cut`](Self::cut).
    pub(crate) fn is_cut(&self) -> bool {
        self.shared.refusing.load(Ordering::SeqCst)
    }

    /// Closes every current link (new ones are accepted as usual).
    pub fn drop_connections(&self) {
        self.shared
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .abort_all();
    }

    /// Sends new links to `upstream` (`host:port`) from now on and closes the current ones, as
    /// when the server behind a stable address (a DNS name, a service IP) is replaced: clients
    /// keep the proxy's address and reconnect to the new server.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// let old = curator_test::TestingServer::start().await?;
    /// let new = curator_test::TestingServer::start().await?;
    /// let proxy = curator_test::FaultProxy::start(&old.connect_string()).await?;
    /// proxy.retarget(&new.connect_string()); // clients of the proxy now reach `new`
    /// # Ok(()) }
    /// ```
    pub fn retarget(&self, upstream: &str) {
        let upstream = upstream.split(',').next().unwrap_or(upstream).trim();
        *self
            .shared
            .upstream
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = upstream.to_owned();
        self.drop_connections();
    }

    /// The number of links open now.
    pub fn open_connections(&self) -> usize {
        let mut links = self
            .shared
            .links
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while links.try_join_next().is_some() {}
        links.len()
    }

    /// The sessions the server granted through this proxy, oldest first (a reconnect to the same
    /// session appears again).
    pub fn sessions(&self) -> Vec<SessionCredentials> {
        self.shared
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The credentials of session `id`, if it was seen through this proxy (see
    /// [`sessions`](Self::sessions)).
    pub fn session(&self, id: i64) -> Option<SessionCredentials> {
        self.sessions().into_iter().find(|s| s.id == id)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.drop_connections();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if shared.refusing.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        let mut links = shared.links.lock().unwrap_or_else(PoisonError::into_inner);
        while links.try_join_next().is_some() {}
        links.spawn(link(client, Arc::clone(&shared)));
    }
}

async fn link(client: TcpStream, shared: Arc<Shared>) {
    let mut paused = shared.paused.subscribe();
    if paused.wait_for(|p| !*p).await.is_err() {
        return;
    }
    let upstream = shared
        .upstream
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let Some(mut server) = connect_upstream(&upstream, &shared).await else {
        tracing::debug!(%upstream, "fault proxy: upstream refused");
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut client = client;
    if let Some(advertise) = &shared.advertise {
        if rewrite_initial_message(&mut client, &mut server, advertise)
            .await
            .is_err()
        {
            return;
        }
    }
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, shared.paused.subscribe(), None);
    let down = pump(
        server_read,
        client_write,
        shared.replies_paused.subscribe(),
        Some(&shared),
    );
    // Either side closing ends the link; dropping the halves closes the other side too.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

/// A connection to `upstream`, tried for as long as the proxy's patience allows (and while the
/// proxy is not cut).
async fn connect_upstream(upstream: &str, shared: &Shared) -> Option<TcpStream> {
    let deadline = tokio::time::Instant::now() + shared.upstream_patience;
    loop {
        if let Ok(server) = TcpStream::connect(upstream).await {
            return Some(server);
        }
        shared.refused.send_modify(|count| *count += 1);
        if tokio::time::Instant::now() >= deadline || shared.refusing.load(Ordering::SeqCst) {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut paused: watch::Receiver<bool>,
    mut sniff: Option<&Shared>,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut first_frame = Vec::new();
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // Bytes read while paused are held here, not lost, as a network would hold them.
        if paused.wait_for(|p| !*p).await.is_err() {
            return;
        }
        if let Some(shared) = sniff {
            first_frame.extend_from_slice(&buffer[..n]);
            if let Some(done) = sniff_session(&first_frame, shared) {
                if done {
                    sniff = None;
                    first_frame = Vec::new();
                }
            }
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}

/// ZooKeeper's election protocol versions whose first message carries the sender's election
/// address (`QuorumCnxManager.PROTOCOL_VERSION_V1`, `_V2`).
const ELECTION_PROTOCOLS: [i64; 2] = [-65_536, -65_535];

/// Copies the first message of an election connection from `from` to `to` with `advertise` as
/// the sender's election address: `long version, long sid, int length, address bytes`. A first
/// message of another protocol passes unchanged.
async fn rewrite_initial_message(
    from: &mut TcpStream,
    to: &mut TcpStream,
    advertise: &str,
) -> std::io::Result<()> {
    let version = from.read_i64().await?;
    to.write_i64(version).await?;
    if !ELECTION_PROTOCOLS.contains(&version) {
        return Ok(());
    }
    let sid = from.read_i64().await?;
    let len = from.read_i32().await?;
    let len = usize::try_from(len)
        .ok()
        .filter(|l| *l <= 4096)
        .ok_or_else(|| std::io::Error::other("an election address length out of range"))?;
    let mut address = vec![0; len];
    from.read_exact(&mut address).await?;
    let advertised = advertise.as_bytes();
    let mut message = Vec::with_capacity(12 + advertised.len());
    message.extend_from_slice(&sid.to_be_bytes());
    message.extend_from_slice(&(advertised.len() as i32).to_be_bytes());
    message.extend_from_slice(advertised);
    to.write_all(&message).await
}

/// Reads the server's connect response from the start of a link. `None` while incomplete;
/// `Some(true)` once handled (recorded, or not a connect response).
fn sniff_session(bytes: &[u8], shared: &Shared) -> Option<bool> {
    let len = i32::from_be_bytes(bytes.get(..4)?.try_into().ok()?);
    let len = usize::try_from(len).ok().filter(|l| *l <= 4096);
    let Some(len) = len else { return Some(true) };
    let body = bytes.get(4..4 + len)?;
    if let Ok(session) = parse_connect_response(body) {
        if session.id != 0 {
            shared
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(session);
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_member_proxy_waits_for_its_member_to_listen() {
        let port = crate::config::free_ports(1).unwrap()[0];
        let upstream = format!("127.0.0.1:{port}");
        let proxy = FaultProxy::start_peer("127.0.0.1:0".parse().unwrap(), &upstream, None)
            .await
            .unwrap();
        let mut member = TcpStream::connect(proxy.address).await.unwrap();
        member.write_all(b"hello").await.unwrap();
        // The member behind the proxy is not listening yet: the proxy is refused, and keeps the
        // connection it accepted.
        proxy
            .shared
            .refused
            .subscribe()
            .wait_for(|refused| *refused > 0)
            .await
            .unwrap();
        let listener = TcpListener::bind(&upstream).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut received = [0u8; 5];
        server.read_exact(&mut received).await.unwrap();
        assert_eq!(&received, b"hello");
    }

    #[tokio::test]
    async fn a_client_proxy_closes_a_link_its_server_refuses() {
        let port = crate::config::free_ports(1).unwrap()[0];
        let proxy = FaultProxy::start(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        let mut client = TcpStream::connect(proxy.address).await.unwrap();
        let mut buffer = [0u8; 1];
        assert_eq!(client.read(&mut buffer).await.unwrap_or(0), 0, "closed");
    }
}
