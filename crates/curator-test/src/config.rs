//! Writing ZooKeeper configuration files and waiting for a started server to serve.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::{ServerMode, server_mode};
use crate::java::JavaProcess;
use crate::reconfig::{DynamicConfig, SuperCredentials};
use crate::sasl::{Mechanism, ServerSasl, jaas_quoted};
use crate::tls::ServerTls;
use crate::version::ZooKeeperVersion;

/// Settings shared by standalone servers and ensemble members.
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    pub(crate) tick_time: Duration,
    pub(crate) max_session_timeout: Duration,
    pub(crate) jvm_args: Vec<String>,
    /// Ensemble members serve reads without a quorum (with local sessions, which a read-only
    /// member needs to create sessions).
    pub(crate) read_only_mode: bool,
    /// TLS on a second client port.
    pub(crate) tls: Option<ServerTls>,
    /// SASL authentication (DIGEST-MD5 or Kerberos).
    pub(crate) sasl: Option<ServerSasl>,
    /// Ensemble members run with dynamic reconfiguration, and this super user may reconfigure.
    pub(crate) super_user: Option<SuperCredentials>,
    /// Ensemble members name each other `zk-<id>` and reach each other through fault proxies
    /// (see `crate::partition`).
    pub(crate) partitionable: bool,
    /// The release to start; `None` follows `ZOOKEEPER_CLASSPATH` or `CURATOR_TEST_ZK_VERSION`.
    pub(crate) version: Option<ZooKeeperVersion>,
}

impl ServerSettings {
    /// The first invalid security option, if any.
    pub(crate) fn validate(&self) -> Result<()> {
        match self.sasl.as_ref().and_then(|sasl| sasl.invalid.clone()) {
            Some(message) => Err(Error::InvalidArgument(message)),
            None => Ok(()),
        }
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            tick_time: Duration::from_millis(200),
            max_session_timeout: Duration::from_secs(60),
            jvm_args: Vec::new(),
            read_only_mode: false,
            tls: None,
            sasl: None,
            super_user: None,
            partitionable: false,
            version: None,
        }
    }
}

/// One ensemble member's ports, for the `server.N` lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerPorts {
    pub(crate) client: u16,
    pub(crate) quorum: u16,
    pub(crate) election: u16,
    /// The TLS client port, for a server with TLS.
    pub(crate) secure: Option<u16>,
}

impl PeerPorts {
    pub(crate) fn client_ports(&self) -> ClientPorts {
        ClientPorts {
            plain: self.client,
            secure: self.secure,
        }
    }
}

/// A server's client ports: the plaintext one (which four-letter words and the harness's
/// readiness checks use) and, with TLS, the secure one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientPorts {
    pub(crate) plain: u16,
    pub(crate) secure: Option<u16>,
}

/// What a server needs besides its data: its `zoo.cfg` and the JVM options its security needs.
#[derive(Debug, Clone)]
pub(crate) struct ServerFiles {
    pub(crate) config: PathBuf,
    pub(crate) jvm_args: Vec<String>,
}

/// Where a server's `server.<id>=` lines come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Peers<'a> {
    /// A standalone server: none.
    Standalone,
    /// Ensemble member `index + 1` for each entry, listed in `zoo.cfg`; reconfiguration off.
    Static(&'a [PeerPorts]),
    /// The lines of a dynamic configuration file that `zoo.cfg` links to (`dynamicConfigFile`);
    /// reconfiguration on. The client port is only in these lines, as ZooKeeper's
    /// reconfiguration guide asks (and as ZooKeeper rewrites `zoo.cfg` itself otherwise).
    Dynamic(&'a DynamicConfig),
}

impl Peers<'_> {
    fn is_ensemble(&self) -> bool {
        !matches!(self, Peers::Standalone)
    }
}

/// Writes `zoo.cfg` (and, for [`Peers::Dynamic`], its dynamic configuration file) into `dir`
/// for a server whose data lives in `dir/data`, and the files its security needs into
/// `dir/security`.
pub(crate) fn write_config(
    dir: &Path,
    ports: ClientPorts,
    settings: &ServerSettings,
    peers: Peers<'_>,
) -> Result<ServerFiles> {
    let client_port = ports.plain;
    let data = dir.join("data");
    std::fs::create_dir_all(&data).map_err(Error::io(format!("creating {}", data.display())))?;
    let tick = settings.tick_time.as_millis().max(1);
    let mut cfg = String::new();
    let _ = writeln!(cfg, "tickTime={tick}");
    let _ = writeln!(cfg, "dataDir={}", data.display());
    if !matches!(peers, Peers::Dynamic(_)) {
        let _ = writeln!(cfg, "clientPort={client_port}");
        let _ = writeln!(cfg, "clientPortAddress=127.0.0.1");
    }
    let _ = writeln!(cfg, "maxClientCnxns=0");
    let _ = writeln!(cfg, "minSessionTimeout={}", 2 * tick);
    let _ = writeln!(
        cfg,
        "maxSessionTimeout={}",
        settings.max_session_timeout.as_millis()
    );
    let _ = writeln!(cfg, "admin.enableServer=false");
    let _ = writeln!(cfg, "4lw.commands.whitelist=*");
    if peers.is_ensemble() {
        // Generous quorum limits, counted in ticks: a loaded 2-core machine must not break the
        // ensemble by itself.
        let _ = writeln!(cfg, "initLimit={}", (10_000 / tick).max(10));
        let _ = writeln!(cfg, "syncLimit={}", (5_000 / tick).max(5));
        let dynamic = matches!(peers, Peers::Dynamic(_));
        let _ = writeln!(cfg, "reconfigEnabled={dynamic}");
        let _ = writeln!(cfg, "standaloneEnabled=false");
        if settings.read_only_mode {
            let _ = writeln!(cfg, "localSessionsEnabled=true");
            let _ = writeln!(cfg, "localSessionsUpgradingEnabled=true");
        }
    }
    match peers {
        Peers::Standalone => {}
        Peers::Static(peers) => {
            for (id, peer) in (1..).zip(peers) {
                let host = if settings.partitionable {
                    crate::partition::peer_host(id)
                } else {
                    "127.0.0.1".to_owned()
                };
                let _ = writeln!(
                    cfg,
                    "server.{id}={host}:{}:{};127.0.0.1:{}",
                    peer.quorum, peer.election, peer.client
                );
            }
        }
        Peers::Dynamic(config) => {
            // A proposal this member saw before it stopped would otherwise come back at start.
            let next = dir.join("zoo.cfg.dynamic.next");
            if next.exists() {
                std::fs::remove_file(&next)
                    .map_err(Error::io(format!("removing {}", next.display())))?;
            }
            let path = dir.join(config.file_name());
            std::fs::write(&path, config.file_contents())
                .map_err(Error::io(format!("writing {}", path.display())))?;
            let _ = writeln!(cfg, "dynamicConfigFile={}", path.display());
        }
    }
    let mut jvm_args = write_security(dir, ports, settings, &mut cfg)?;
    if let (Peers::Dynamic(_), Some(credentials)) = (peers, &settings.super_user) {
        jvm_args.push(credentials.jvm_arg());
    }
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, cfg).map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(ServerFiles {
        config: path,
        jvm_args,
    })
}

const NETTY_FACTORY: &str = "org.apache.zookeeper.server.NettyServerCnxnFactory";
const X509_PROVIDER: &str = "org.apache.zookeeper.server.auth.X509AuthenticationProvider";
const SASL_PROVIDER: &str = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";
const DIGEST_LOGIN: &str = "org.apache.zookeeper.server.auth.DigestLoginModule";
const KERBEROS_LOGIN: &str = "com.sun.security.auth.module.Krb5LoginModule";

/// Adds the TLS and SASL lines to `cfg`, writes the key and trust stores, the JAAS file and the
/// Kerberos files into `dir/security`, and returns the JVM options they need. (ZooKeeper turns
/// every `zoo.cfg` key it does not know, such as `ssl.*` or `authProvider.*`, into the system
/// property `zookeeper.<key>`; the JAAS and Kerberos locations must be real JVM options.)
fn write_security(
    dir: &Path,
    ports: ClientPorts,
    settings: &ServerSettings,
    cfg: &mut String,
) -> Result<Vec<String>> {
    let mut jvm_args = Vec::new();
    if settings.tls.is_none() && settings.sasl.is_none() {
        return Ok(jvm_args);
    }
    let security = dir.join("security");
    std::fs::create_dir_all(&security)
        .map_err(Error::io(format!("creating {}", security.display())))?;
    let write = |name: &str, contents: &[u8]| -> Result<PathBuf> {
        let path = security.join(name);
        std::fs::write(&path, contents)
            .map_err(Error::io(format!("writing {}", path.display())))?;
        Ok(path)
    };
    if let Some(tls) = &settings.tls {
        let secure = ports.secure.ok_or_else(|| {
            Error::InvalidArgument("a TLS server needs a secure client port".into())
        })?;
        let key_store = write(
            "server-keystore.pem",
            tls.certificate.key_store_pem().as_bytes(),
        )?;
        let trust_store = write("truststore.pem", tls.trusted_ca_pem.as_bytes())?;
        let _ = writeln!(cfg, "secureClientPort={secure}");
        let _ = writeln!(cfg, "secureClientPortAddress=127.0.0.1");
        let _ = writeln!(cfg, "serverCnxnFactory={NETTY_FACTORY}");
        let _ = writeln!(cfg, "ssl.keyStore.location={}", key_store.display());
        let _ = writeln!(cfg, "ssl.keyStore.type=PEM");
        let _ = writeln!(cfg, "ssl.trustStore.location={}", trust_store.display());
        let _ = writeln!(cfg, "ssl.trustStore.type=PEM");
        let _ = writeln!(cfg, "ssl.clientAuth={}", tls.client_auth.zookeeper_value());
        // The Netty factory authenticates every client certificate it asks for through the
        // `x509` provider, and closes connections when none is registered.
        let _ = writeln!(cfg, "authProvider.x509={X509_PROVIDER}");
    }
    if let Some(sasl) = &settings.sasl {
        let mut jaas = String::from("Server {\n");
        match &sasl.mechanism {
            Mechanism::DigestMd5 { users } => {
                let _ = write!(jaas, "  {DIGEST_LOGIN} required");
                for (name, password) in users {
                    let _ = write!(jaas, "\n  user_{name}={}", jaas_quoted(password));
                }
                jaas.push_str(";\n");
            }
            Mechanism::Kerberos {
                principal,
                keytab,
                krb5_conf,
            } => {
                let keytab_bytes = std::fs::read(keytab)
                    .map_err(Error::io(format!("reading {}", keytab.display())))?;
                let keytab = write("zookeeper.keytab", &keytab_bytes)?;
                let krb5_bytes = std::fs::read(krb5_conf)
                    .map_err(Error::io(format!("reading {}", krb5_conf.display())))?;
                let krb5_conf = write("krb5.conf", &krb5_bytes)?;
                let _ = writeln!(jaas, "  {KERBEROS_LOGIN} required");
                let _ = writeln!(jaas, "  useKeyTab=true");
                let _ = writeln!(
                    jaas,
                    "  keyTab={}",
                    jaas_quoted(&keytab.display().to_string())
                );
                let _ = writeln!(jaas, "  storeKey=true");
                let _ = writeln!(jaas, "  useTicketCache=false");
                let _ = writeln!(jaas, "  principal={};", jaas_quoted(principal));
                jvm_args.push(format!("-Djava.security.krb5.conf={}", krb5_conf.display()));
                if sasl.remove_host {
                    let _ = writeln!(cfg, "kerberos.removeHostFromPrincipal=true");
                }
                if sasl.remove_realm {
                    let _ = writeln!(cfg, "kerberos.removeRealmFromPrincipal=true");
                }
            }
        }
        jaas.push_str("};\n");
        let jaas_file = write("jaas.conf", jaas.as_bytes())?;
        jvm_args.push(format!(
            "-Djava.security.auth.login.config={}",
            jaas_file.display()
        ));
        let _ = writeln!(cfg, "authProvider.sasl={SASL_PROVIDER}");
        if sasl.enforced {
            let _ = writeln!(cfg, "enforce.auth.enabled=true");
            let _ = writeln!(cfg, "enforce.auth.schemes=sasl");
        }
    }
    Ok(jvm_args)
}

/// `count` distinct free loopback ports. They are held open together while chosen, so they
/// differ; a start-up that still loses a race to another process is retried by the caller.
pub(crate) fn free_ports(count: usize) -> Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").map_err(Error::io("choosing a free port")))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(Error::io("reading a bound port"))
        })
        .collect()
}

/// Polls until `address` accepts a TCP connection, the process exits, or `deadline` passes: a
/// server's TLS port opens a moment after its plaintext port answers `srvr`.
pub(crate) async fn await_accepting(
    address: &str,
    process: &mut JavaProcess,
    deadline: Duration,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::Exited {
                status: status.to_string(),
                log_tail: process.log_tail(),
            });
        }
        if tokio::net::TcpStream::connect(address).await.is_ok() {
            return Ok(());
        }
        if start.elapsed() > deadline {
            return Err(Error::StartTimeout {
                address: address.to_owned(),
                seconds: deadline.as_secs(),
                log_tail: process.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether a failed start-up was a port taken by someone else (worth a retry on other ports).
pub(crate) fn is_port_conflict(error: &Error) -> bool {
    match error {
        Error::Exited { log_tail, .. } | Error::StartTimeout { log_tail, .. } => {
            log_tail.contains("Address already in use") || log_tail.contains("BindException")
        }
        _ => false,
    }
}

/// Polls `address` with `srvr` until it reports one of `modes`, the process exits, or `deadline`
/// passes. Polling every 50 ms is the wait: a JVM announces nothing else.
pub(crate) async fn await_serving(
    address: &str,
    process: &mut JavaProcess,
    modes: &[ServerMode],
    deadline: Duration,
) -> Result<ServerMode> {
    let start = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::Exited {
                status: status.to_string(),
                log_tail: process.log_tail(),
            });
        }
        if let Some(mode) = server_mode(address, Duration::from_secs(2)).await {
            if modes.contains(&mode) {
                return Ok(mode);
            }
        }
        if start.elapsed() > deadline {
            return Err(Error::StartTimeout {
                address: address.to_owned(),
                seconds: deadline.as_secs(),
                log_tail: process.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
