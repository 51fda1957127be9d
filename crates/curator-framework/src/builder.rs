//! `CuratorFrameworkBuilder`: every setting of a client, validated by `build()`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::acl::{AclProvider, DefaultAclProvider};
use crate::client::CuratorFramework;
use crate::ensemble::{EnsembleProvider, FixedEnsembleProvider, validate_connect_string};
use crate::error::{Error, Result};
use crate::paths;
use crate::retry::{ExponentialBackoffRetry, RetryPolicy, SharedRetryPolicy};
use crate::security::{SaslConfig, TlsConfig};
use crate::state::ConnectionStateErrorPolicy;
use crate::wire::WireTls;

/// See [`CuratorFrameworkBuilder::clock_drift_bound`].
const DEFAULT_CLOCK_DRIFT_BOUND: f64 = 0.01;

/// The validated settings a client runs with.
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) ensemble: Arc<dyn EnsembleProvider>,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) max_close_wait: Duration,
    pub(crate) retry_policy: SharedRetryPolicy,
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) auth: Vec<(String, Vec<u8>)>,
    pub(crate) acl_provider: Arc<dyn AclProvider>,
    pub(crate) can_be_read_only: bool,
    /// Listings whose encoded names exceed this fail with `Error::ResponseTooLarge`.
    pub(crate) max_listing_bytes: Option<usize>,
    pub(crate) error_policy: ConnectionStateErrorPolicy,
    /// Circuit breaking of what connection-state listeners hear.
    pub(crate) circuit_breaker: Option<SharedRetryPolicy>,
    pub(crate) simulated_expiration_percent: u8,
    /// See `CuratorFrameworkBuilder::clock_drift_bound`.
    pub(crate) clock_drift_bound: f64,
    pub(crate) default_data: Vec<u8>,
    pub(crate) use_container_parents: bool,
    pub(crate) tls: Option<WireTls>,
    pub(crate) sasl: Option<SaslConfig>,
    /// See `CuratorFrameworkBuilder::connector`.
    pub(crate) connector: Option<Arc<dyn crate::transport::Connector>>,
    /// Follow the ensemble's dynamic configuration.
    pub(crate) ensemble_tracking: bool,
    /// The servers come from a fixed connect string (so a followed configuration may replace
    /// them).
    pub(crate) fixed_ensemble: bool,
    /// How node data is compressed (see `compression`; nothing without the feature).
    pub(crate) compression: crate::compression::Settings,
    /// Checked by operations before they are sent.
    pub(crate) schema_set: Option<Arc<crate::schema::SchemaSet>>,
    pub(crate) identity: Arc<crate::identity::Identity>,
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("ensemble", &self.ensemble)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("max_close_wait", &self.max_close_wait)
            .field("retry_policy", &self.retry_policy)
            .field("namespace", &self.namespace)
            .field(
                "auth_schemes",
                &self
                    .auth
                    .iter()
                    .map(|(s, _)| s.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("acl_provider", &self.acl_provider)
            .field("can_be_read_only", &self.can_be_read_only)
            .field("max_listing_bytes", &self.max_listing_bytes)
            .field("error_policy", &self.error_policy)
            .field("circuit_breaker", &self.circuit_breaker)
            .field(
                "simulated_expiration_percent",
                &self.simulated_expiration_percent,
            )
            .field("clock_drift_bound", &self.clock_drift_bound)
            .field("default_data_len", &self.default_data.len())
            .field("use_container_parents", &self.use_container_parents)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("compression", &self.compression)
            .finish()
    }
}

/// Builds a [`CuratorFramework`]. Setters never fail; `build()` reports the first bad setting.
///
/// Defaults: session timeout 60 s, connection timeout 15 s, max close wait 1 s,
/// [`ExponentialBackoffRetry`] from 100 ms for 5 retries (each sleep at most 5 s), no namespace,
/// Curator's open ACL, the standard connection-state error policy, `Lost` after `Suspended` has
/// lasted 100% of the negotiated session timeout, empty default data, container parents.
///
/// ```
/// use std::time::Duration;
/// use curator_framework::CuratorFramework;
/// use curator_framework::retry::ExponentialBackoffRetry;
/// let client = CuratorFramework::builder()
///     .connect_string("127.0.0.1:2181,127.0.0.1:2182")
///     .session_timeout(Duration::from_secs(30))
///     .connection_timeout(Duration::from_secs(10))
///     .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
///     .namespace("app1")
///     .build()
///     .unwrap();
/// # drop(client);
/// let err = CuratorFramework::builder().connect_string("localhost:2181")
///     .session_timeout(Duration::ZERO).build().unwrap_err();
/// assert!(err.to_string().contains("session timeout"));
/// ```
#[must_use = "a builder does nothing until build() is called"]
pub struct CuratorFrameworkBuilder {
    ensemble: Option<Arc<dyn EnsembleProvider>>,
    session_timeout: Duration,
    connection_timeout: Duration,
    max_close_wait: Duration,
    retry_policy: SharedRetryPolicy,
    namespace: Option<String>,
    auth: Vec<(String, Vec<u8>)>,
    acl_provider: Arc<dyn AclProvider>,
    can_be_read_only: bool,
    max_listing_bytes: Option<usize>,
    error_policy: ConnectionStateErrorPolicy,
    circuit_breaker: Option<SharedRetryPolicy>,
    simulated_expiration_percent: u8,
    clock_drift_bound: f64,
    default_data: Vec<u8>,
    use_container_parents: bool,
    tls: Option<TlsConfig>,
    sasl: Option<SaslConfig>,
    connector: Option<Arc<dyn crate::transport::Connector>>,
    ensemble_tracking: bool,
    fixed_ensemble: bool,
    compression: crate::compression::Settings,
    schema_set: Option<Arc<crate::schema::SchemaSet>>,
    identity: Option<String>,
    error: Option<Error>,
}

impl fmt::Debug for CuratorFrameworkBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuratorFrameworkBuilder")
            .field("ensemble", &self.ensemble)
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("namespace", &self.namespace)
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .field("connector", &self.connector)
            .field("compression", &self.compression)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Default for CuratorFrameworkBuilder {
    fn default() -> Self {
        Self {
            ensemble: None,
            session_timeout: Duration::from_secs(60),
            connection_timeout: Duration::from_secs(15),
            max_close_wait: Duration::from_secs(1),
            retry_policy: SharedRetryPolicy::new(
                ExponentialBackoffRetry::new(Duration::from_millis(100), 5)
                    .with_max_sleep(Duration::from_secs(5)),
            ),
            namespace: None,
            auth: Vec::new(),
            acl_provider: Arc::new(DefaultAclProvider),
            can_be_read_only: false,
            max_listing_bytes: None,
            error_policy: ConnectionStateErrorPolicy::Standard,
            circuit_breaker: None,
            simulated_expiration_percent: 100,
            clock_drift_bound: DEFAULT_CLOCK_DRIFT_BOUND,
            default_data: Vec::new(),
            use_container_parents: true,
            tls: None,
            sasl: None,
            connector: None,
            ensemble_tracking: true,
            fixed_ensemble: false,
            compression: Default::default(),
            schema_set: None,
            identity: None,
            error: None,
        }
    }
}

impl CuratorFrameworkBuilder {
    fn fail(mut self, error: Error) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// The servers: `host:port[,host:port...][/chroot]`.
    pub fn connect_string(mut self, connect_string: impl Into<String>) -> Self {
        self.ensemble = Some(Arc::new(FixedEnsembleProvider::new(connect_string)));
        self.fixed_ensemble = true;
        self
    }

    /// Whether to follow the ensemble's dynamic configuration (`/zookeeper/config`); on by
    /// default. While on, the client watches the configuration through every session and
    /// reports it ([`ensemble`](crate::CuratorFramework::ensemble),
    /// [`ensemble_listenable`](crate::CuratorFramework::ensemble_listenable)); and, with a
    /// fixed [`connect_string`](Self::connect_string) and no TLS, later connections use the
    /// members' client addresses from it (with the chroot kept), and a session whose servers
    /// all left the ensemble moves to the members it names, keeping the session. A connection
    /// that is down asks the members it learned for the configuration (after 0.5 s, then every
    /// 2 s, each through a short session of its own), so a member that moved to a new address
    /// while the connection was down is followed too.
    ///
    /// Turn it off when clients must reach the servers through addresses other than those the
    /// servers configure (a virtual IP, a load balancer, a proxy, NAT): the configuration's
    /// addresses would bypass them. With TLS the configuration is reported but never used for
    /// connecting: it names only the plaintext client port. With an
    /// [`ensemble_provider`](Self::ensemble_provider) the provider decides the servers; the
    /// configuration is only reported.
    ///
    /// ```
    /// # use curator_framework::CuratorFramework;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("zk-vip.example.com:2181")
    ///     .ensemble_tracking(false)
    ///     .build()?;
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn ensemble_tracking(mut self, follow: bool) -> Self {
        self.ensemble_tracking = follow;
        self
    }

    /// Asks `provider` for the servers each time a session is made (instead of a fixed
    /// connect string).
    pub fn ensemble_provider(mut self, provider: impl EnsembleProvider + 'static) -> Self {
        self.ensemble = Some(Arc::new(provider));
        self.fixed_ensemble = false;
        self
    }

    /// The session timeout to ask for (the server bounds it to 2–20 ticks by default).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// How long an operation waits for a connection before its attempt fails with
    /// [`Error::NotConnected`] (which goes to the retry policy, like a connection loss); also the
    /// timeout of one connection attempt.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long `close()` waits for background work to finish.
    pub fn max_close_wait(mut self, wait: Duration) -> Self {
        self.max_close_wait = wait;
        self
    }

    /// The retry policy of every operation.
    pub fn retry_policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.retry_policy = SharedRetryPolicy::new(policy);
        self
    }

    /// Prefixes every path with `/<namespace>`. Its nodes are created, as containers, before the
    /// first write; reads never create them (under a namespace that does not exist yet, a read
    /// finds no node).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        match paths::validate_namespace(&namespace) {
            Ok(()) => {
                self.namespace = Some(namespace);
                self
            }
            Err(error) => self.fail(error),
        }
    }

    /// Authenticates every session with `scheme` and `auth` (for digest: `b"user:password"`).
    /// May be called several times. Credentials are never printed.
    pub fn authorization(mut self, scheme: impl Into<String>, auth: impl Into<Vec<u8>>) -> Self {
        let scheme = scheme.into();
        if scheme.is_empty() {
            return self.fail(Error::InvalidArgument(
                "authorization scheme must not be empty".into(),
            ));
        }
        self.auth.push((scheme, auth.into()));
        self
    }

    /// The ACL of nodes created without one.
    pub fn acl_provider(mut self, provider: impl AclProvider + 'static) -> Self {
        self.acl_provider = Arc::new(provider);
        self
    }

    /// Allows connecting to servers in read-only mode (reported as
    /// [`ConnectionState::ReadOnly`](crate::ConnectionState::ReadOnly)).
    pub fn can_be_read_only(mut self, allowed: bool) -> Self {
        self.can_be_read_only = allowed;
        self
    }

    /// Fails every listing of children (`get_children()`, watched or not, and the children
    /// reads of `multi_read()`) whose names take more than `bytes` in ZooKeeper's encoding (four
    /// bytes per name plus the name) with [`Error::ResponseTooLarge`](crate::Error::ResponseTooLarge),
    /// which is not retried. Unlimited by default.
    ///
    /// Why a limit, and why none by default: the Java client refuses any reply longer than its
    /// `jute.maxbuffer` (1 MiB by default: about 20,000 names of 50 bytes) and then drops the
    /// connection and retries the same listing forever. This framework's wire layer reads
    /// replies up to 128 MiB and the server (3.5–3.9) sends them, so a listing past 1 MiB just
    /// works here (100,000 names of 50 bytes, about 5 MB, list in well under a second). Set
    /// the limit (for example to [`JAVA_MAX_BUFFER`](crate::JAVA_MAX_BUFFER)) to fail where
    /// Java clients sharing the directories would, or to stop recipes from working through
    /// directories larger than a service is sized for. The reply has been received when it is
    /// checked, so the limit does not bound the memory of one reply.
    ///
    /// ```
    /// let client = curator_framework::CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .max_listing_bytes(curator_framework::JAVA_MAX_BUFFER)
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn max_listing_bytes(mut self, bytes: usize) -> Self {
        self.max_listing_bytes = Some(bytes);
        self
    }

    /// Which connection states recipes treat as errors.
    pub fn connection_state_error_policy(mut self, policy: ConnectionStateErrorPolicy) -> Self {
        self.error_policy = policy;
        self
    }

    /// Smooths what connection-state listeners hear when the connection flaps, as Curator's
    /// `ConnectionStateListenerManagerFactory.circuitBreaking(retryPolicy)` does: every listener
    /// of the client (those of [`connection_state_listenable`](crate::CuratorFramework::connection_state_listenable),
    /// [`connection_state_stream`](crate::CuratorFramework::connection_state_stream), and so every
    /// recipe's) hears the transitions through a circuit breaker of its own, driven by `policy`.
    /// Off by default.
    ///
    /// - Closed, the breaker passes every transition. The first `Suspended` or `Lost` passes and
    ///   opens the circuit for the sleep `policy` gives for retry 0.
    /// - While open, transitions are absorbed; only the latest is kept. `Lost` is never held
    ///   back: it passes at once unless the listener's last state is that same `Lost`; a session
    ///   that was made and lost again while the circuit was open passes as `Reconnected` then
    ///   `Lost`, so a recipe always learns that a session it could have used is gone.
    /// - When the period ends, a connection that is still not connected keeps the circuit open
    ///   for the next retry's sleep while `policy` allows; then the circuit closes and the latest
    ///   state passes if it differs from the last one passed (after a passed `Lost`, a
    ///   not-connected latest state passes as `Reconnected` then that state).
    ///
    /// So a listener's last state always ends up equal to the real one once the connection has
    /// been steady for a period. Only delivery to listeners changes:
    /// [`connection_state`](crate::CuratorFramework::connection_state),
    /// [`is_connected`](crate::CuratorFramework::is_connected) and operations follow the real
    /// connection, and so does every hold ([`Hold`](crate::recipe::Hold): a lock's, a
    /// semaphore lease's, a leader's), lost at the first error state published, which no breaker
    /// holds back: a leader steps down at the same moment a lock holder learns its lock may be
    /// lost. A listener added while others' circuits are open starts with a closed circuit of
    /// its own.
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::retry::RetryNTimes;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     // Open for 2 s after a Suspended, up to 5 × 2 s while the connection stays down.
    ///     .connection_state_circuit_breaker(RetryNTimes::new(5, Duration::from_secs(2)))
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn connection_state_circuit_breaker(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.circuit_breaker = Some(SharedRetryPolicy::new(policy));
        self
    }

    /// Reports `Lost` (and abandons the session) once `Suspended` has lasted this percentage of
    /// the negotiated session timeout (1–100, default 100).
    ///
    /// 0 turns the framework's own clock off and leaves the decision to the server, as Curator
    /// does with 0: `Lost` comes when a connection comes back and the server says the session
    /// expired. During a partition that lasts, the state stays `Suspended`.
    pub fn simulated_session_expiration_percent(mut self, percent: u8) -> Self {
        if percent > 100 {
            return self.fail(Error::InvalidArgument(format!(
                "simulated session expiration percent must be 0..=100, not {percent}"
            )));
        }
        self.simulated_expiration_percent = percent;
        self
    }

    /// The bound on how much faster the ZooKeeper leader's clock may run than this machine's,
    /// as a fraction (default 0.01: 1 %, a hundred times a common quartz clock's error), which
    /// [`Hold::valid_until`](crate::recipe::Hold::valid_until) takes off the session timeout.
    /// From 0 (clocks trusted to run at the same rate) to below 1.
    ///
    /// ```
    /// let builder = curator_framework::CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .clock_drift_bound(0.001);
    /// assert!(builder.build().is_ok());
    /// assert!(curator_framework::CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .clock_drift_bound(1.5)
    ///     .build()
    ///     .is_err());
    /// ```
    pub fn clock_drift_bound(mut self, fraction: f64) -> Self {
        if !(0.0..1.0).contains(&fraction) {
            return self.fail(Error::InvalidArgument(format!(
                "the clock drift bound must be a fraction from 0 to below 1, not {fraction}"
            )));
        }
        self.clock_drift_bound = fraction;
        self
    }

    /// Makes every connection with `connector` instead of plain TCP (or TLS): an in-memory pipe
    /// to a test's server, a simulated network's socket (curator-sim runs clients on turmoil's
    /// network this way), a proxy of your own. The connector gets each server of the connect
    /// string by name and port, at every connection attempt. It cannot be combined with
    /// [`tls`](Self::tls) (`build()` says so): a connector that wants TLS does it itself.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::transport::{BoxTransport, Connector, ServerAddress};
    ///
    /// /// Plain TCP, with a log line per connection.
    /// #[derive(Debug)]
    /// struct Logged;
    ///
    /// impl Connector for Logged {
    ///     fn connect<'a>(&'a self, server: &'a ServerAddress) -> futures::future::BoxFuture<'a, std::io::Result<BoxTransport>> {
    ///         Box::pin(async move {
    ///             println!("connecting to {}:{}", server.host, server.port);
    ///             let stream = tokio::net::TcpStream::connect((server.host.as_str(), server.port)).await?;
    ///             Ok(Box::new(stream) as BoxTransport)
    ///         })
    ///     }
    /// }
    ///
    /// let client = CuratorFramework::builder()
    ///     .connect_string("zk1:2181")
    ///     .connector(Arc::new(Logged))
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn connector(mut self, connector: Arc<dyn crate::transport::Connector>) -> Self {
        self.connector = Some(connector);
        self
    }

    /// Connects over TLS (see [`security`](crate::security)): every server of the connect string
    /// is reached over TLS, its certificate checked against `config`'s CA and the host name
    /// connected to; `config`'s client certificate, if any, is presented.
    ///
    /// ```no_run
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::security::TlsConfig;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("zk1.example.com:2281")
    ///     .tls(TlsConfig::new().ca_file("/etc/zookeeper/ca.pem"))
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn tls(mut self, config: TlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Logs in with SASL when a session is made, and again for every new session (see
    /// [`security`](crate::security)).
    ///
    /// ```no_run
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::security::SaslConfig;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("zk1.example.com:2181")
    ///     .sasl(SaslConfig::digest_md5("app", "s3cret"))
    ///     .build()
    ///     .unwrap();
    /// # drop(client);
    /// ```
    pub fn sasl(mut self, config: SaslConfig) -> Self {
        self.sasl = Some(config);
        self
    }

    /// The application-chosen name in this client's [`Identity`](crate::identity::Identity)
    /// (default: the executable's file name), which recipes write into the nodes they make
    /// (lock nodes, semaphore leases, barrier and double-barrier member nodes) beside the host
    /// name and process id, so `curator inspect` can tell who holds what.
    ///
    /// ```no_run
    /// # fn demo() -> curator_framework::Result<()> {
    /// let client = curator_framework::CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .identity("report-writer")
    ///     .build()?;
    /// assert_eq!(client.identity().name(), "report-writer");
    /// # Ok(()) }
    /// ```
    pub fn identity(mut self, name: impl Into<String>) -> Self {
        self.identity = Some(name.into());
        self
    }

    /// Data written by creates that give none (default: empty; Java Curator writes the local IP
    /// address).
    pub fn default_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.default_data = data.into();
        self
    }

    /// Creates parents made by `creating_parent_containers_if_needed` as persistent nodes instead
    /// of containers.
    pub fn dont_use_container_parents(mut self) -> Self {
        self.use_container_parents = false;
        self
    }

    /// The provider that compresses and decompresses node data (default
    /// [`GzipCompressionProvider`](crate::compression::GzipCompressionProvider), Curator's format). It is used by operations that ask for it
    /// (`create().compressed()`, `set_data().compressed()`, `get_data().decompressed()`,
    /// [`TransactionOp::compressed`](crate::ops::transaction::TransactionOp::compressed)), and by
    /// every one once [`enable_compression`](Self::enable_compression) is set.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::compression::GzipCompressionProvider;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .compression_provider(Arc::new(GzipCompressionProvider::new()))
    ///     .build()?;
    /// assert!(!client.compression_enabled());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    #[cfg(feature = "compression")]
    pub fn compression_provider(
        mut self,
        provider: Arc<dyn crate::compression::CompressionProvider>,
    ) -> Self {
        self.compression.provider = provider;
        self
    }

    /// Compresses the data of every `create()`, `set_data()` and transaction write, and
    /// decompresses the data of every `get_data()`, as Curator 5.8's `enableCompression()`.
    /// An operation opts out with `.uncompressed()` (writes) or `.undecompressed()` (reads).
    ///
    /// Every node the client reads with `get_data()` must then hold compressed data: a node
    /// written uncompressed (by another client, or a parent made by
    /// `creating_parents_if_needed`, whose empty data is not compressed) fails with
    /// [`Error::Decompression`]. `multi_read()` and recipes that read through their own paths
    /// return the stored bytes.
    ///
    /// ```
    /// use curator_framework::CuratorFramework;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .enable_compression()
    ///     .build()?;
    /// assert!(client.compression_enabled());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    #[cfg(feature = "compression")]
    pub fn enable_compression(mut self) -> Self {
        self.compression.enabled = true;
        self
    }

    /// Checks every `create()`, `set_data()`, `delete()`, watched or unwatched read and
    /// `add_watch()` (and the create, set-data and delete steps of transactions) against `set`
    /// before sending it; a refused one fails with
    /// [`Error::SchemaViolation`] (see [`schema`](crate::schema)). Curator's `schemaSet`.
    ///
    /// ```
    /// use curator_framework::CuratorFramework;
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/config").name("config").build()?])?;
    /// let client = CuratorFramework::builder()
    ///     .connect_string("127.0.0.1:2181")
    ///     .schema_set(set)
    ///     .build()?;
    /// assert!(client.schema_set().is_some());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    #[cfg(feature = "schema")]
    pub fn schema_set(mut self, set: crate::schema::SchemaSet) -> Self {
        self.schema_set = Some(Arc::new(set));
        self
    }

    /// Validates the settings and builds the client (not started).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad setting: no connect string, a zero
    /// timeout, a bad namespace, a bad expiration percent, an empty authorization scheme;
    /// [`Error::Tls`] with [`TlsFailure::Config`](crate::security::TlsFailure::Config) for TLS
    /// settings without a CA, with an unreadable file or with PEM that holds no certificate or
    /// key.
    pub fn build(self) -> Result<CuratorFramework> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let Some(ensemble) = self.ensemble else {
            return Err(Error::InvalidArgument(
                "no connect string or ensemble provider".into(),
            ));
        };
        validate_connect_string(&ensemble.connect_string())?;
        for (name, value) in [
            ("session timeout", self.session_timeout),
            ("connection timeout", self.connection_timeout),
        ] {
            if value.is_zero() {
                return Err(Error::InvalidArgument(format!("{name} must be positive")));
            }
            if value > Duration::from_millis(i32::MAX as u64) {
                return Err(Error::InvalidArgument(format!(
                    "{name} {value:?} is too long"
                )));
            }
        }
        let settings = Settings {
            ensemble,
            session_timeout: self.session_timeout,
            connection_timeout: self.connection_timeout,
            max_close_wait: self.max_close_wait,
            retry_policy: self.retry_policy,
            namespace: self.namespace.map(Arc::from),
            auth: self.auth,
            acl_provider: self.acl_provider,
            can_be_read_only: self.can_be_read_only,
            max_listing_bytes: self.max_listing_bytes,
            error_policy: self.error_policy,
            circuit_breaker: self.circuit_breaker,
            simulated_expiration_percent: self.simulated_expiration_percent,
            clock_drift_bound: self.clock_drift_bound,
            default_data: self.default_data,
            use_container_parents: self.use_container_parents,
            tls: match (self.tls, &self.connector) {
                (Some(_), Some(_)) => {
                    return Err(Error::InvalidArgument(
                        "a client takes TLS settings or a connector, not both: a connector that wants TLS makes it itself".into(),
                    ));
                }
                (tls, _) => tls.map(WireTls::new).transpose()?,
            },
            sasl: self.sasl,
            connector: self.connector,
            ensemble_tracking: self.ensemble_tracking,
            fixed_ensemble: self.fixed_ensemble,
            compression: self.compression,
            schema_set: self.schema_set,
            identity: Arc::new(match self.identity {
                Some(name) => crate::identity::Identity::this_process(name),
                None => crate::identity::Identity::default_for_process(),
            }),
        };
        Ok(CuratorFramework::from_settings(settings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> CuratorFrameworkBuilder {
        CuratorFrameworkBuilder::default().connect_string("127.0.0.1:2181")
    }

    #[test]
    fn bad_settings_are_reported_by_build() {
        let cases: Vec<(CuratorFrameworkBuilder, &str)> = vec![
            (CuratorFrameworkBuilder::default(), "no connect string"),
            (
                CuratorFrameworkBuilder::default().connect_string(""),
                "names no server",
            ),
            (
                CuratorFrameworkBuilder::default().connect_string("host:port"),
                "bad port",
            ),
            (
                builder().session_timeout(Duration::ZERO),
                "session timeout must be positive",
            ),
            (
                builder().connection_timeout(Duration::ZERO),
                "connection timeout must be positive",
            ),
            (builder().namespace("/abs"), "must not start or end"),
            (builder().namespace("a//b"), "empty node name"),
            (
                builder().simulated_session_expiration_percent(101),
                "0..=100",
            ),
            (builder().authorization("", b"x".to_vec()), "scheme"),
        ];
        for (builder, expected) in cases {
            let error = builder.build().expect_err(expected);
            assert!(
                error.to_string().contains(expected),
                "{expected:?} not in {error}"
            );
        }
    }

    #[test]
    fn the_first_bad_setting_wins_and_secrets_stay_out_of_debug() {
        let error = builder()
            .namespace("/x")
            .simulated_session_expiration_percent(200)
            .build()
            .unwrap_err();
        assert!(error.to_string().contains("namespace"), "{error}");
        let text = format!(
            "{:?}",
            builder().authorization("digest", b"user:secret".to_vec())
        );
        assert!(!text.contains("secret"), "{text}");
    }
}
