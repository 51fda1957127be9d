//! `TestingKdc`: a real MIT Kerberos KDC with its own realm, for Kerberos (SASL GSSAPI) tests.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::config;
use crate::error::{Error, Result};
use crate::guard::GuardedProcess;
use crate::timing::Timing;

/// The realm a [`TestingKdc`] serves unless told otherwise.
pub const DEFAULT_REALM: &str = "EXAMPLE.COM";

const START_ATTEMPTS: usize = 5;
const SBIN_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/local/sbin"];

/// A real MIT Kerberos KDC (`krb5kdc`) for one test: a new realm (default [`DEFAULT_REALM`])
/// whose database, configuration and keytabs live in a temporary directory, served on a free
/// `127.0.0.1` port (TCP and UDP).
///
/// Dropping it kills the KDC and removes the directory; like the ZooKeeper JVMs, the KDC runs
/// under a guard that kills it when the test process dies, however it dies.
///
/// Principals are added with `kadmin.local` ([`add_principal`](Self::add_principal)), each
/// with its own keytab. A Kerberos client runs in a **child process** started with the
/// environment of [`client_env`](Self::client_env) (`KRB5_CONFIG`, `KRB5CCNAME`,
/// `KRB5_CLIENT_KTNAME`): MIT Kerberos reads its configuration from the environment, and a test
/// process cannot change its own environment safely.
///
/// Needs Debian's `krb5-kdc`, `krb5-admin-server` and `krb5-user` (`just setup`).
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use curator_test::TestingKdc;
/// let kdc = TestingKdc::start().await?;
/// let alice = kdc.add_principal("alice")?;
/// assert_eq!(alice.name(), "alice@EXAMPLE.COM");
/// let status = std::process::Command::new("klist")
///     .envs(kdc.client_env(&alice)?) // a ticket for alice, already in a cache of her own
///     .status()?;
/// assert!(status.success());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingKdc {
    // Declared before `dir` so the KDC dies before its directory is removed.
    process: GuardedProcess,
    realm: String,
    port: u16,
    krb5_conf: PathBuf,
    kdc_conf: PathBuf,
    principals: Mutex<HashMap<String, KerberosPrincipal>>,
    dir: TempDir,
}

/// Options for a [`TestingKdc`].
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// let kdc = curator_test::TestingKdc::builder().realm("CURATOR.TEST").start().await?;
/// assert_eq!(kdc.realm(), "CURATOR.TEST");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TestingKdcBuilder {
    realm: String,
    timing: Option<Timing>,
}

impl TestingKdcBuilder {
    /// The realm (default [`DEFAULT_REALM`]); upper-case letters, digits, dots and dashes.
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }

    /// The deadlines used while starting (default [`Timing::new`]).
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = Some(timing);
        self
    }

    /// Creates the realm's database and starts the KDC, then waits until it accepts
    /// connections.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad realm name; [`Error::Kerberos`] when the MIT tools
    /// are missing (`just setup`) or `kdb5_util` fails; [`Error::Exited`] or
    /// [`Error::StartTimeout`] (with the end of the KDC's log) when the KDC does not come up.
    pub async fn start(self) -> Result<TestingKdc> {
        let realm = self.realm;
        if realm.is_empty()
            || !realm
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '.' || c == '-')
        {
            return Err(Error::InvalidArgument(format!(
                "`{realm}` is not a realm name this KDC accepts (upper-case letters, digits, `.`, `-`)"
            )));
        }
        let timing = self.timing.unwrap_or_default();
        let krb5kdc = sbin_tool("krb5kdc")?;
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let dir = tempfile::Builder::new()
                .prefix("curator-test-kdc-")
                .tempdir()
                .map_err(Error::io("creating a KDC directory"))?;
            let port = config::free_ports(1)?[0];
            let (krb5_conf, kdc_conf) = write_configs(dir.path(), &realm, port)?;
            let password = uuid::Uuid::new_v4().simple().to_string();
            let env = [
                ("KRB5_CONFIG", krb5_conf.as_path()),
                ("KRB5_KDC_PROFILE", kdc_conf.as_path()),
            ];
            run_tool(
                "kdb5_util",
                &["-r", &realm, "create", "-s", "-P", &password],
                &env,
            )?;
            let log = dir.path().join("krb5kdc.log");
            let args: Vec<OsString> = vec!["-n".into(), "-r".into(), realm.clone().into()];
            let mut process = GuardedProcess::spawn(&krb5kdc, &args, &env, &log)?;
            match await_listening(port, &mut process, timing.forever()).await {
                Ok(()) => {
                    tracing::debug!(port, realm, "Kerberos KDC serving");
                    return Ok(TestingKdc {
                        process,
                        realm,
                        port,
                        krb5_conf,
                        kdc_conf,
                        principals: Mutex::new(HashMap::new()),
                        dir,
                    });
                }
                Err(error) if is_port_conflict(&error, dir.path()) => {
                    tracing::debug!(port, "KDC port taken during start-up; trying another");
                    last_error = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidArgument("no start attempt".into())))
    }
}

impl TestingKdc {
    /// Starts a KDC for [`DEFAULT_REALM`].
    ///
    /// # Errors
    /// As [`TestingKdcBuilder::start`].
    pub async fn start() -> Result<Self> {
        Self::builder().start().await
    }

    /// Options for a KDC.
    pub fn builder() -> TestingKdcBuilder {
        TestingKdcBuilder {
            realm: DEFAULT_REALM.to_owned(),
            timing: None,
        }
    }

    /// The realm, such as `EXAMPLE.COM`.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// The KDC's port on `127.0.0.1` (TCP and UDP).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `krb5.conf` that names this realm and KDC, for `KRB5_CONFIG` (MIT clients) or
    /// `-Djava.security.krb5.conf` (Java). It makes clients use TCP, and neither DNS nor
    /// reverse lookups canonicalize host names, so `zookeeper/localhost` stays what it is.
    pub fn krb5_conf(&self) -> &Path {
        &self.krb5_conf
    }

    /// The KDC's temporary directory (configuration, database, keytabs, ticket caches, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the KDC process still runs.
    pub fn is_running(&mut self) -> bool {
        self.process.exited().is_none()
    }

    /// The end of the KDC's log (`krb5kdc.log`: every ticket it issued or refused), for
    /// diagnosing a failed login.
    pub fn log_tail(&self) -> String {
        crate::java::log_tail(&self.dir.path().join("kdc.log"), 30)
    }

    /// Adds the principal `name` to the realm with a random key, and writes its keytab. `name`
    /// is the principal without its realm (`alice`, or `zookeeper/localhost` for a service);
    /// a realm suffix, if given, must be this KDC's. Adding a name again returns the principal
    /// already made (its keytab stays valid).
    ///
    /// Runs `kadmin.local` twice; it blocks for a few tens of milliseconds.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name with characters other than letters, digits and
    /// `._-/`, or another realm; [`Error::Kerberos`] when `kadmin.local` fails.
    pub fn add_principal(&self, name: &str) -> Result<KerberosPrincipal> {
        let primary = match name.split_once('@') {
            Some((primary, realm)) if realm == self.realm => primary,
            Some(_) => {
                return Err(Error::InvalidArgument(format!(
                    "principal `{name}` is not in this KDC's realm {}",
                    self.realm
                )));
            }
            None => name,
        };
        if primary.is_empty()
            || !primary
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        {
            return Err(Error::InvalidArgument(format!(
                "`{name}` is not a principal name this KDC accepts (letters, digits, `._-/`)"
            )));
        }
        let mut principals = self
            .principals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(existing) = principals.get(primary) {
            return Ok(existing.clone());
        }
        let full = format!("{primary}@{}", self.realm);
        let keytabs = self.dir.path().join("keytabs");
        std::fs::create_dir_all(&keytabs)
            .map_err(Error::io(format!("creating {}", keytabs.display())))?;
        let keytab = keytabs.join(format!("{}.keytab", primary.replace('/', "_")));
        let added = self.kadmin(&format!("addprinc -randkey {full}"))?;
        if !added.contains("created") {
            return Err(Error::Kerberos(format!(
                "kadmin.local did not create {full}:\n{added}"
            )));
        }
        let exported = self.kadmin(&format!("ktadd -k {} {full}", keytab.display()))?;
        if !exported.contains("added to keytab") || !keytab.is_file() {
            return Err(Error::Kerberos(format!(
                "kadmin.local wrote no keytab for {full}:\n{exported}"
            )));
        }
        let principal = KerberosPrincipal { name: full, keytab };
        principals.insert(primary.to_owned(), principal.clone());
        Ok(principal)
    }

    /// The environment a Kerberos client process needs to log in as `principal`:
    ///
    /// - `KRB5_CONFIG`: this realm's [`krb5_conf`](Self::krb5_conf);
    /// - `KRB5CCNAME`: `FILE:<path>`, a ticket cache of the principal's own, which this call
    ///   fills with a ticket-granting ticket (`kinit -kt <keytab>`), so the client holds a ticket
    ///   before it starts;
    /// - `KRB5_CLIENT_KTNAME`: `FILE:<keytab>`, the principal's keytab, from which MIT Kerberos
    ///   fetches a new ticket if the cached one expires.
    ///
    /// Give it to [`std::process::Command::envs`] (or `tokio::process::Command::envs`).
    ///
    /// # Errors
    /// [`Error::Kerberos`] when `kinit` is missing or the KDC refuses the keytab.
    pub fn client_env(&self, principal: &KerberosPrincipal) -> Result<Vec<(String, String)>> {
        let caches = self.dir.path().join("ccaches");
        std::fs::create_dir_all(&caches)
            .map_err(Error::io(format!("creating {}", caches.display())))?;
        let cache = format!(
            "FILE:{}",
            caches
                .join(principal.name.replace(['/', '@'], "_"))
                .display()
        );
        let keytab = principal.keytab.display().to_string();
        run_tool(
            "kinit",
            &["-kt", &keytab, "-c", &cache, &principal.name],
            &[("KRB5_CONFIG", self.krb5_conf.as_path())],
        )?;
        Ok(vec![
            (
                "KRB5_CONFIG".to_owned(),
                self.krb5_conf.display().to_string(),
            ),
            ("KRB5CCNAME".to_owned(), cache),
            ("KRB5_CLIENT_KTNAME".to_owned(), format!("FILE:{keytab}")),
        ])
    }

    fn kadmin(&self, query: &str) -> Result<String> {
        run_tool(
            "kadmin.local",
            &["-r", &self.realm, "-q", query],
            &[
                ("KRB5_CONFIG", self.krb5_conf.as_path()),
                ("KRB5_KDC_PROFILE", self.kdc_conf.as_path()),
            ],
        )
    }
}

/// A principal of a [`TestingKdc`] with its keytab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosPrincipal {
    name: String,
    keytab: PathBuf,
}

impl KerberosPrincipal {
    /// The full name, such as `alice@EXAMPLE.COM` or `zookeeper/localhost@EXAMPLE.COM`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The keytab holding the principal's keys (in the KDC's directory).
    pub fn keytab(&self) -> &Path {
        &self.keytab
    }

    /// The part before the realm, such as `alice` or `zookeeper/localhost`.
    pub fn primary_and_instance(&self) -> &str {
        self.name.split('@').next().unwrap_or(&self.name)
    }
}

/// Finds an MIT Kerberos tool on `PATH` or in the `sbin` directories, where Debian installs the
/// administrative ones (often not on a user's `PATH`).
fn sbin_tool(name: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            Error::Kerberos(format!(
                "`{name}` not found on PATH or in /usr/sbin; run `just setup` to install MIT \
                 Kerberos (krb5-kdc, krb5-admin-server, krb5-user)"
            ))
        })
}

/// Runs a Kerberos tool to completion; its standard output on success.
fn run_tool(name: &str, args: &[&str], env: &[(&str, &Path)]) -> Result<String> {
    let program = sbin_tool(name)?;
    let output = Command::new(&program)
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(Error::io(format!("running {}", program.display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(Error::Kerberos(format!(
            "{name} failed ({}):\n{stdout}{stderr}",
            output.status
        )));
    }
    // `kadmin.local` reports a failed query on standard error and still exits 0.
    Ok(format!("{stdout}{stderr}"))
}

fn write_configs(dir: &Path, realm: &str, port: u16) -> Result<(PathBuf, PathBuf)> {
    let d = dir.display();
    let mut kdc = String::new();
    let _ = writeln!(kdc, "[kdcdefaults]");
    let _ = writeln!(kdc, " kdc_listen = 127.0.0.1:{port}");
    let _ = writeln!(kdc, " kdc_tcp_listen = 127.0.0.1:{port}");
    let _ = writeln!(kdc, "[realms]");
    let _ = writeln!(kdc, " {realm} = {{");
    let _ = writeln!(kdc, "  database_name = {d}/principal");
    let _ = writeln!(kdc, "  key_stash_file = {d}/stash");
    let _ = writeln!(kdc, "  acl_file = {d}/kadm5.acl");
    let _ = writeln!(kdc, "  kdc_listen = 127.0.0.1:{port}");
    let _ = writeln!(kdc, "  kdc_tcp_listen = 127.0.0.1:{port}");
    let _ = writeln!(kdc, "  max_life = 1h");
    let _ = writeln!(kdc, " }}");
    let _ = writeln!(kdc, "[logging]");
    let _ = writeln!(kdc, " kdc = FILE:{d}/kdc.log");
    let _ = writeln!(kdc, " admin_server = FILE:{d}/kadmin.log");
    let _ = writeln!(kdc, " default = FILE:{d}/krb5lib.log");
    let kdc_conf = dir.join("kdc.conf");
    std::fs::write(&kdc_conf, kdc).map_err(Error::io(format!("writing {}", kdc_conf.display())))?;

    let mut krb5 = String::new();
    let _ = writeln!(krb5, "[libdefaults]");
    let _ = writeln!(krb5, " default_realm = {realm}");
    let _ = writeln!(krb5, " dns_lookup_realm = false");
    let _ = writeln!(krb5, " dns_lookup_kdc = false");
    // `localhost` must stay `localhost`: the service principal is zookeeper/localhost.
    let _ = writeln!(krb5, " dns_canonicalize_hostname = false");
    let _ = writeln!(krb5, " rdns = false");
    // TCP only: no lost datagrams on a loaded machine, and Java and MIT agree.
    let _ = writeln!(krb5, " udp_preference_limit = 1");
    let _ = writeln!(krb5, " ticket_lifetime = 1h");
    let _ = writeln!(krb5, " forwardable = false");
    let _ = writeln!(krb5, "[realms]");
    let _ = writeln!(krb5, " {realm} = {{");
    let _ = writeln!(krb5, "  kdc = 127.0.0.1:{port}");
    let _ = writeln!(krb5, " }}");
    let _ = writeln!(krb5, "[domain_realm]");
    let _ = writeln!(krb5, " localhost = {realm}");
    let _ = writeln!(krb5, " 127.0.0.1 = {realm}");
    let krb5_conf = dir.join("krb5.conf");
    std::fs::write(&krb5_conf, krb5)
        .map_err(Error::io(format!("writing {}", krb5_conf.display())))?;
    Ok((krb5_conf, kdc_conf))
}

/// Polls the KDC's TCP port until it accepts a connection, the KDC exits, or `deadline` passes.
/// Polling every 20 ms is the wait: `krb5kdc -n` announces nothing else.
async fn await_listening(
    port: u16,
    process: &mut GuardedProcess,
    deadline: Duration,
) -> Result<()> {
    let start = Instant::now();
    let address = format!("127.0.0.1:{port}");
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::Exited {
                status: status.to_string(),
                log_tail: process.log_tail(),
            });
        }
        if tokio::net::TcpStream::connect(&address).await.is_ok() {
            return Ok(());
        }
        if start.elapsed() > deadline {
            return Err(Error::StartTimeout {
                address,
                seconds: deadline.as_secs(),
                log_tail: process.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is_port_conflict(error: &Error, dir: &Path) -> bool {
    let kdc_log = crate::java::log_tail(&dir.join("kdc.log"), 30);
    match error {
        Error::Exited { log_tail, .. } | Error::StartTimeout { log_tail, .. } => {
            [log_tail.as_str(), kdc_log.as_str()]
                .iter()
                .any(|log| log.contains("Address already in use"))
        }
        _ => false,
    }
}
