//! `TestingServer`: one real ZooKeeper process on a loopback port.

use std::path::Path;
use std::time::Duration;

use tempfile::TempDir;

use crate::config::{self, ClientPorts, Peers, ServerFiles, ServerSettings};
use crate::error::{Error, Result};
use crate::four_letter::ServerMode;
use crate::java::{JavaProcess, server_jvm_args, spawn_java};
use crate::sasl::ServerSasl;
use crate::timing::Timing;
use crate::tls::ServerTls;
use crate::version::{ServerVersion, ZooKeeperVersion, server_version};

const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
const PORT_ATTEMPTS: usize = 5;

/// A real ZooKeeper server, started from Debian's jars on a free `127.0.0.1` port with its own
/// temporary data directory: ZooKeeper 3.8.0 by default, 3.9.3 when asked for (see
/// [`ZooKeeperVersion`]), or what `ZOOKEEPER_CLASSPATH` names.
///
/// The server uses a 200 ms `tickTime`, so a client asking for a short session (400 ms at least)
/// can see it expire within seconds; it allows sessions up to 60 s, enables TTL and container
/// nodes and every four-letter word. Dropping it kills the process and removes the directory.
///
/// When `CURATOR_TEST_ZK=host:port` is set, [`TestingServer::start`] hands out that running server
/// instead of starting one, so a whole test run can share one JVM; such a shared server refuses
/// [`stop`](TestingServer::stop) and [`restart`](TestingServer::restart). Tests that inject
/// server faults use [`TestingServer::start_dedicated`].
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// let mut server = curator_test::TestingServer::start_dedicated().await?;
/// println!("connect to {}", server.connect_string());
/// server.restart().await?; // same port and data: open sessions survive
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingServer {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Shared { connect_string: String },
    Dedicated(Box<Dedicated>),
}

#[derive(Debug)]
struct Dedicated {
    // Declared before `dir` so the process dies before its directory is removed.
    process: Option<JavaProcess>,
    ports: ClientPorts,
    files: ServerFiles,
    settings: ServerSettings,
    timing: Timing,
    dir: TempDir,
}

/// Options for a dedicated [`TestingServer`].
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// use std::time::Duration;
/// let server = curator_test::TestingServer::builder()
///     .tick_time(Duration::from_millis(100))
///     .max_session_timeout(Duration::from_secs(10))
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct TestingServerBuilder {
    settings: ServerSettings,
    port: Option<u16>,
    timing: Option<Timing>,
}

impl TestingServerBuilder {
    /// ZooKeeper's `tickTime` (default 200 ms); sessions may be as short as two ticks.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.settings.tick_time = tick;
        self
    }

    /// The longest session the server grants (default 60 s).
    pub fn max_session_timeout(mut self, timeout: Duration) -> Self {
        self.settings.max_session_timeout = timeout;
        self
    }

    /// A fixed client port instead of a free one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// An extra JVM option (for example `-XX:TieredStopAtLevel=1`, or a larger heap for
    /// benchmarks).
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
        self.settings.jvm_args.push(arg.into());
        self
    }

    /// The deadlines used while starting (default [`Timing::new`]).
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = Some(timing);
        self
    }

    /// Starts this ZooKeeper release, whatever `ZOOKEEPER_CLASSPATH` and
    /// `CURATOR_TEST_ZK_VERSION` say (see [`ZooKeeperVersion`]).
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// use curator_test::{ServerVersion, TestingServer, ZooKeeperVersion};
    /// let server = TestingServer::builder().version(ZooKeeperVersion::V3_9).start().await?;
    /// assert_eq!(server.server_version().await?, ServerVersion::new(3, 9, 3));
    /// # Ok(()) }
    /// ```
    pub fn version(mut self, version: ZooKeeperVersion) -> Self {
        self.settings.version = Some(version);
        self
    }

    /// Serves TLS on a second client port ([`TestingServer::secure_connect_string`]), with the
    /// certificate and client authentication of `tls`. The plaintext port stays open (for
    /// four-letter words and the harness's readiness checks); a test that must prove plaintext
    /// clients are refused needs SASL [`enforced`](ServerSasl::enforced) instead.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// use curator_test::{ClientAuth, TestCertificates, TestingServer};
    /// let certs = TestCertificates::generate()?;
    /// let server = TestingServer::builder()
    ///     .tls(certs.server_tls().with_client_auth(ClientAuth::Need))
    ///     .start()
    ///     .await?;
    /// let tls_address = server.secure_connect_string().unwrap(); // "localhost:<port>"
    /// # Ok(()) }
    /// ```
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.settings.tls = Some(tls);
        self
    }

    /// Authenticates clients with SASL: DIGEST-MD5 users or Kerberos (see [`ServerSasl`]).
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// use curator_test::{ServerSasl, TestingServer};
    /// let server = TestingServer::builder()
    ///     .sasl(ServerSasl::digest_md5().with_user("alice", "alice-secret"))
    ///     .start()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn sasl(mut self, sasl: ServerSasl) -> Self {
        self.settings.sasl = Some(sasl);
        self
    }

    /// Starts the server and waits until it serves requests (and, with TLS, until its TLS
    /// port accepts connections).
    ///
    /// # Errors
    /// [`Error::JavaNotFound`] or [`Error::JarNotFound`] when `just setup` has not run;
    /// [`Error::InvalidArgument`] for an invalid [`ServerSasl`] option;
    /// [`Error::Exited`] or [`Error::StartTimeout`] (with the end of the server's log) when the
    /// server does not come up.
    pub async fn start(self) -> Result<TestingServer> {
        self.settings.validate()?;
        let timing = self.timing.unwrap_or_default();
        let tls = self.settings.tls.is_some();
        let mut dir = tempfile::Builder::new()
            .prefix("curator-test-zk-")
            .tempdir()
            .map_err(Error::io("creating a temporary data directory"))?;
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let free = config::free_ports(usize::from(self.port.is_none()) + usize::from(tls))?;
            let mut free = free.into_iter();
            let ports = ClientPorts {
                plain: self.port.or_else(|| free.next()).unwrap_or_default(),
                secure: free.next(),
            };
            let files = config::write_config(dir.path(), ports, &self.settings, Peers::Standalone)?;
            let mut server = Dedicated {
                process: None,
                ports,
                files,
                settings: self.settings.clone(),
                timing,
                dir,
            };
            match server.launch().await {
                Ok(()) => {
                    return Ok(TestingServer {
                        kind: Kind::Dedicated(Box::new(server)),
                    });
                }
                Err(error) if self.port.is_none() && config::is_port_conflict(&error) => {
                    tracing::debug!(?ports, "port taken during start-up; trying another");
                    last_error = Some(error);
                    drop(server.process.take());
                    dir = server.dir;
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidArgument("no start attempt".into())))
    }
}

impl Dedicated {
    async fn launch(&mut self) -> Result<()> {
        let log = self.dir.path().join("zookeeper.log");
        let args = vec![self.files.config.display().to_string()];
        let mut jvm_args = self.settings.jvm_args.clone();
        jvm_args.extend(self.files.jvm_args.iter().cloned());
        let mut process = spawn_java(
            self.settings.version,
            &server_jvm_args(&jvm_args),
            STANDALONE_MAIN,
            &args,
            &log,
        )?;
        let address = format!("127.0.0.1:{}", self.ports.plain);
        config::await_serving(
            &address,
            &mut process,
            &[ServerMode::Standalone],
            self.timing.forever(),
        )
        .await?;
        if let Some(secure) = self.ports.secure {
            let secure_address = format!("127.0.0.1:{secure}");
            config::await_accepting(&secure_address, &mut process, self.timing.forever()).await?;
        }
        tracing::debug!(%address, "ZooKeeper server serving");
        self.process = Some(process);
        Ok(())
    }
}

impl TestingServer {
    /// A server for one test: the shared one named by `CURATOR_TEST_ZK` if set, otherwise a new
    /// dedicated server (see [`TestingServer::start_dedicated`]).
    ///
    /// # Errors
    /// As [`TestingServerBuilder::start`].
    pub async fn start() -> Result<Self> {
        Self::start_or_share(std::env::var("CURATOR_TEST_ZK").ok()).await
    }

    async fn start_or_share(shared: Option<String>) -> Result<Self> {
        match shared {
            Some(shared) if !shared.trim().is_empty() => {
                let connect_string = shared.trim().to_owned();
                tracing::debug!(
                    connect_string,
                    "sharing the server named by CURATOR_TEST_ZK (it cannot be stopped or restarted)"
                );
                Ok(Self {
                    kind: Kind::Shared { connect_string },
                })
            }
            _ => Self::start_dedicated().await,
        }
    }

    /// A new server owned by this handle, whatever `CURATOR_TEST_ZK` says: the one to use for
    /// [`stop`](Self::stop) and [`restart`](Self::restart).
    ///
    /// # Errors
    /// As [`TestingServerBuilder::start`].
    pub async fn start_dedicated() -> Result<Self> {
        Self::builder().start().await
    }

    /// Options for a dedicated server.
    pub fn builder() -> TestingServerBuilder {
        TestingServerBuilder::default()
    }

    /// `host:port` to give a client: the plaintext client port on `127.0.0.1`.
    ///
    /// A server with TLS also serves TLS on [`secure_connect_string`](Self::secure_connect_string);
    /// a Kerberos client needs [`localhost_connect_string`](Self::localhost_connect_string).
    pub fn connect_string(&self) -> String {
        match &self.kind {
            Kind::Shared { connect_string } => connect_string.clone(),
            Kind::Dedicated(server) => format!("127.0.0.1:{}", server.ports.plain),
        }
    }

    /// The plaintext client port as `localhost:<port>`: the address a Kerberos (SASL GSSAPI)
    /// client connects to, because a client asks for a ticket to `zookeeper/<host it connects
    /// to>`, and the server's principal is `zookeeper/localhost`. `None` for a shared server.
    pub fn localhost_connect_string(&self) -> Option<String> {
        match &self.kind {
            Kind::Shared { .. } => None,
            Kind::Dedicated(server) => Some(format!("localhost:{}", server.ports.plain)),
        }
    }

    /// The TLS client port as `localhost:<port>`, for a server started with
    /// [`TestingServerBuilder::tls`]; `None` otherwise. The host name is `localhost` because the
    /// server certificates of [`TestCertificates`](crate::TestCertificates) name `localhost`
    /// (and `127.0.0.1`), so a client that verifies host names accepts them.
    ///
    /// With curator-session: `SessionConfig::new(&address)?.connector(..)` with a
    /// `TlsConnector` that trusts [`TestCertificates::ca`](crate::TestCertificates::ca).
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_port().map(|port| format!("localhost:{port}"))
    }

    /// The TLS client port, for a server started with [`TestingServerBuilder::tls`].
    pub fn secure_port(&self) -> Option<u16> {
        match &self.kind {
            Kind::Shared { .. } => None,
            Kind::Dedicated(server) => server.ports.secure,
        }
    }

    /// The client port (of the first host, for a shared server).
    pub fn port(&self) -> u16 {
        match &self.kind {
            Kind::Shared { connect_string } => connect_string
                .split(',')
                .next()
                .and_then(|host| host.rsplit(':').next())
                .and_then(|port| port.split('/').next())
                .and_then(|port| port.parse().ok())
                .unwrap_or(2181),
            Kind::Dedicated(server) => server.ports.plain,
        }
    }

    /// The version the server reports (`srvr`), for a shared server too.
    ///
    /// # Errors
    /// As [`server_version`].
    pub async fn server_version(&self) -> Result<ServerVersion> {
        server_version(&self.connect_string()).await
    }

    /// Whether this handle shares a server named by `CURATOR_TEST_ZK`.
    pub fn is_shared(&self) -> bool {
        matches!(self.kind, Kind::Shared { .. })
    }

    /// Whether the server process is running (always true for a shared server).
    pub fn is_running(&self) -> bool {
        match &self.kind {
            Kind::Shared { .. } => true,
            Kind::Dedicated(server) => server.process.is_some(),
        }
    }

    /// The server's data directory (`None` for a shared server).
    pub fn data_dir(&self) -> Option<&Path> {
        match &self.kind {
            Kind::Shared { .. } => None,
            Kind::Dedicated(server) => Some(server.dir.path()),
        }
    }

    /// Kills the server process, as a crash would; its data stays for [`restart`](Self::restart).
    /// Clients see their connection drop.
    ///
    /// # Errors
    /// [`Error::SharedServer`] for a shared server.
    pub fn stop(&mut self) -> Result<()> {
        let server = self.dedicated("stop")?;
        if let Some(mut process) = server.process.take() {
            process.kill();
        }
        Ok(())
    }

    /// Stops the server if it runs, then starts it again on the same ports with the same data
    /// and the same TLS and SASL settings, and waits until it serves. Sessions whose timeout has
    /// not passed survive: their clients reconnect to the same session.
    ///
    /// # Errors
    /// [`Error::SharedServer`] for a shared server; start-up errors as
    /// [`TestingServerBuilder::start`].
    pub async fn restart(&mut self) -> Result<()> {
        self.stop()?;
        let server = self.dedicated("restart")?;
        // The port was ours a moment ago; a lingering socket may hold it briefly.
        let mut attempts = 0;
        loop {
            match server.launch().await {
                Ok(()) => return Ok(()),
                Err(error) if config::is_port_conflict(&error) && attempts < PORT_ATTEMPTS => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    fn dedicated(&mut self, operation: &'static str) -> Result<&mut Dedicated> {
        match &mut self.kind {
            Kind::Shared { connect_string } => Err(Error::SharedServer {
                operation,
                connect_string: connect_string.clone(),
            }),
            Kind::Dedicated(server) => Ok(server.as_mut()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_shared_server_is_handed_out_and_refuses_faults() {
        let mut server = TestingServer::start_or_share(Some(" 127.0.0.1:2999 ".into()))
            .await
            .unwrap();
        assert!(server.is_shared());
        assert!(server.is_running());
        assert_eq!(server.connect_string(), "127.0.0.1:2999");
        assert_eq!(server.port(), 2999);
        assert!(server.data_dir().is_none());
        let refused = server.stop().unwrap_err();
        assert!(matches!(
            refused,
            Error::SharedServer {
                operation: "stop",
                ..
            }
        ));
        let message = refused.to_string();
        for hint in ["127.0.0.1:2999", "CURATOR_TEST_ZK", "start_dedicated"] {
            assert!(message.contains(hint), "{message}");
        }
        assert!(matches!(
            server.restart().await,
            Err(Error::SharedServer {
                operation: "stop" | "restart",
                ..
            })
        ));
    }
}
