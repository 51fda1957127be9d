//! The command line, as clap reads it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use curator_framework::security::{SaslConfig, TlsConfig};

use crate::duration::parse_duration;
use crate::encoding::Encoding;
use crate::exit::{CliError, CliResult};

const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    other failure (missing node, bad version, server error, ...)
  2    bad arguments
  3    no connection to ZooKeeper (within --connection-timeout), or it failed
  4    --timeout passed before the lock, barrier or leadership was had
  5    the lock was lost while CMD ran (CMD was stopped); lease: the lease ended while CMD ran
       (CMD was stopped)
  6    fence: the token was refused (the gate admitted a newer one; it is printed)
  7    lease: the lease is held by someone else (CMD was not run)
  126  CMD could not be executed; 127 CMD was not found
  128+N  interrupted by signal N before CMD ran (130 SIGINT, 143 SIGTERM)
  141  stdout or stderr closed by its reader (CMD, if any, was stopped)
  lock, leader, lease and barrier otherwise exit with CMD's own code (128+N when CMD died of signal N).

Durations: 500ms, 10s, 2m, 1h. --connect defaults to $ZK_CONNECT, then 127.0.0.1:2181.";

/// `curator`: ZooKeeper recipes (locks, leader election, counters, barriers) for shell scripts
/// and operators, on Apache Curator's znode layout.
#[derive(Debug, Parser)]
#[command(name = "curator", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    // The flags of the subcommands, also taken before the subcommand (`curator --json ls /`);
    // the subcommand's own value wins (see `Cli::resolve`).
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) connection: Connection,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// How to reach ZooKeeper.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Connection")]
pub(crate) struct Connection {
    /// ZooKeeper's address: host:port[,host:port...][/chroot] [default: $ZK_CONNECT, then
    /// 127.0.0.1:2181]
    #[arg(long, value_name = "HOSTS", value_parser = parse_connect)]
    pub(crate) connect: Option<String>,
    /// Session timeout asked of the server [default: 30s]
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    pub(crate) session_timeout: Option<Duration>,
    /// How long to wait for a connection before giving up (exit code 3) [default: 10s]
    #[arg(long, value_parser = parse_duration, value_name = "D")]
    pub(crate) connection_timeout: Option<Duration>,
    /// Prefix every path with this namespace (like a chroot)
    #[arg(long, value_name = "NS")]
    pub(crate) namespace: Option<String>,
    /// Connect over TLS, trusting the CA certificates in this PEM file [env: ZK_TLS_CA]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// This client's TLS certificate, PEM (with --tls-key) [env: ZK_TLS_CERT]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// This client's TLS private key, PEM (with --tls-cert) [env: ZK_TLS_KEY]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Log in with SASL DIGEST-MD5 as USER (with --sasl-password-file) [env: ZK_SASL_USER]
    #[arg(long, value_name = "USER", help_heading = "Security")]
    pub(crate) sasl_user: Option<String>,
    /// The SASL password: the first line of FILE [env: ZK_SASL_PASSWORD_FILE]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) sasl_password_file: Option<PathBuf>,
    /// Add the digest identity USER to the session (ZooKeeper's `addauth digest`), for nodes
    /// whose ACL names it and for `ensemble add|remove` as the super user (with
    /// --auth-password-file) [env: ZK_AUTH_USER]
    #[arg(long, value_name = "USER", help_heading = "Security")]
    pub(crate) auth_user: Option<String>,
    /// The digest password: the first line of FILE [env: ZK_AUTH_PASSWORD_FILE]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) auth_password_file: Option<PathBuf>,
    /// Log in with Kerberos (SASL GSSAPI), with the keytab or ticket cache given or of the
    /// environment (KRB5_CLIENT_KTNAME, KRB5CCNAME) [env: ZK_KERBEROS=1]
    #[arg(long, help_heading = "Security")]
    pub(crate) kerberos: bool,
    /// The service of the servers' Kerberos principal [default: zookeeper] [env:
    /// ZK_KERBEROS_SERVICE]
    #[arg(long, value_name = "NAME", help_heading = "Security")]
    pub(crate) kerberos_service: Option<String>,
    /// The client's keytab (sets KRB5_CLIENT_KTNAME; without --kerberos-ccache, tickets go to
    /// a cache of this process's own, so the keytab's principal logs in) [env:
    /// ZK_KERBEROS_KEYTAB]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) kerberos_keytab: Option<PathBuf>,
    /// The client's ticket cache (sets KRB5CCNAME) [env: ZK_KERBEROS_CCACHE]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) kerberos_ccache: Option<PathBuf>,
    /// The Kerberos configuration (sets KRB5_CONFIG) [env: ZK_KERBEROS_CONFIG]
    #[arg(long, value_name = "FILE", help_heading = "Security")]
    pub(crate) kerberos_config: Option<PathBuf>,
    /// Log in only as this principal (`app@REALM`, or `app`): other credentials are refused
    /// before the server is asked [env: ZK_KERBEROS_PRINCIPAL]
    #[arg(long, value_name = "NAME", help_heading = "Security")]
    pub(crate) kerberos_principal: Option<String>,
    /// The settings taken from environment variables rather than flags (see
    /// [`Connection::or_environment`]).
    #[arg(skip)]
    pub(crate) from_environment: FromEnvironment,
}

/// Which flags' values came from their environment variables, so that a message about one
/// names what the user set (`$ZK_SASL_USER`), not a flag never given.
#[derive(Debug, Clone, Default)]
pub(crate) struct FromEnvironment(Vec<(&'static str, &'static str)>);

impl FromEnvironment {
    /// `message` with each flag that came from a variable written as the variable: `--sasl-user
    /// and --sasl-password-file go together` becomes `$ZK_SASL_USER and --sasl-password-file go
    /// together` when `ZK_SASL_USER` was set and `--sasl-user` not given. A flag is replaced
    /// only whole (`--kerberos` not inside `--kerberos-keytab`).
    pub(crate) fn name_variables(&self, message: &str) -> String {
        let mut named = message.to_owned();
        for (flag, variable) in &self.0 {
            let mut out = String::with_capacity(named.len());
            let mut rest = named.as_str();
            while let Some(at) = rest.find(flag) {
                let after = &rest[at + flag.len()..];
                let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
                out.push_str(&rest[..at]);
                if whole {
                    out.push('$');
                    out.push_str(variable);
                } else {
                    out.push_str(flag);
                }
                rest = after;
            }
            out.push_str(rest);
            named = out;
        }
        named
    }

    /// [`name_variables`](Self::name_variables) on an error's message.
    pub(crate) fn name_in(&self, mut error: CliError) -> CliError {
        if let Some(message) = &error.message {
            error.message = Some(self.name_variables(message));
        }
        error
    }
}

impl Connection {
    /// The flags given, by their names (for a subcommand that takes none).
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.connect.is_some() {
            given.push("--connect");
        }
        if self.session_timeout.is_some() {
            given.push("--session-timeout");
        }
        if self.connection_timeout.is_some() {
            given.push("--connection-timeout");
        }
        if self.namespace.is_some() {
            given.push("--namespace");
        }
        for (flag, set) in [
            ("--tls-ca", self.tls_ca.is_some()),
            ("--tls-cert", self.tls_cert.is_some()),
            ("--tls-key", self.tls_key.is_some()),
            ("--sasl-user", self.sasl_user.is_some()),
            ("--sasl-password-file", self.sasl_password_file.is_some()),
            ("--auth-user", self.auth_user.is_some()),
            ("--auth-password-file", self.auth_password_file.is_some()),
            ("--kerberos", self.kerberos),
            ("--kerberos-service", self.kerberos_service.is_some()),
            ("--kerberos-keytab", self.kerberos_keytab.is_some()),
            ("--kerberos-ccache", self.kerberos_ccache.is_some()),
            ("--kerberos-config", self.kerberos_config.is_some()),
            ("--kerberos-principal", self.kerberos_principal.is_some()),
        ] {
            if set {
                given.push(flag);
            }
        }
        given
    }

    /// Each flag from `self`, or else from `outer` (given before the subcommand).
    fn or(self, outer: Connection) -> Connection {
        Connection {
            connect: self.connect.or(outer.connect),
            session_timeout: self.session_timeout.or(outer.session_timeout),
            connection_timeout: self.connection_timeout.or(outer.connection_timeout),
            namespace: self.namespace.or(outer.namespace),
            tls_ca: self.tls_ca.or(outer.tls_ca),
            tls_cert: self.tls_cert.or(outer.tls_cert),
            tls_key: self.tls_key.or(outer.tls_key),
            sasl_user: self.sasl_user.or(outer.sasl_user),
            sasl_password_file: self.sasl_password_file.or(outer.sasl_password_file),
            auth_user: self.auth_user.or(outer.auth_user),
            auth_password_file: self.auth_password_file.or(outer.auth_password_file),
            kerberos: self.kerberos || outer.kerberos,
            kerberos_service: self.kerberos_service.or(outer.kerberos_service),
            kerberos_keytab: self.kerberos_keytab.or(outer.kerberos_keytab),
            kerberos_ccache: self.kerberos_ccache.or(outer.kerberos_ccache),
            kerberos_config: self.kerberos_config.or(outer.kerberos_config),
            kerberos_principal: self.kerberos_principal.or(outer.kerberos_principal),
            from_environment: FromEnvironment::default(),
        }
    }

    /// Each security flag not given, from its environment variable (read here rather than by
    /// clap, so a variable set for other commands never counts as a flag given to `server`).
    /// Which flags were taken from variables is kept in `from_environment`.
    fn or_environment(self) -> Connection {
        let taken = std::cell::RefCell::new(Vec::new());
        // The variable `name`, standing for `flag` (which was not given).
        let var = |flag: &'static str, name: &'static str| {
            let value = std::env::var_os(name).filter(|value| !value.is_empty())?;
            taken.borrow_mut().push((flag, name));
            Some(value)
        };
        let path =
            |own: Option<PathBuf>, flag, name| own.or_else(|| var(flag, name).map(PathBuf::from));
        let text = |own: Option<String>, flag, name| {
            own.or_else(|| var(flag, name).map(|value| value.to_string_lossy().into_owned()))
        };
        let kerberos = self.kerberos || {
            let on = std::env::var_os("ZK_KERBEROS")
                .is_some_and(|value| matches!(value.to_str(), Some("1" | "true")));
            if on {
                taken.borrow_mut().push(("--kerberos", "ZK_KERBEROS"));
            }
            on
        };
        let connection = Connection {
            tls_ca: path(self.tls_ca, "--tls-ca", "ZK_TLS_CA"),
            tls_cert: path(self.tls_cert, "--tls-cert", "ZK_TLS_CERT"),
            tls_key: path(self.tls_key, "--tls-key", "ZK_TLS_KEY"),
            sasl_user: text(self.sasl_user, "--sasl-user", "ZK_SASL_USER"),
            sasl_password_file: path(
                self.sasl_password_file,
                "--sasl-password-file",
                "ZK_SASL_PASSWORD_FILE",
            ),
            auth_user: text(self.auth_user, "--auth-user", "ZK_AUTH_USER"),
            auth_password_file: path(
                self.auth_password_file,
                "--auth-password-file",
                "ZK_AUTH_PASSWORD_FILE",
            ),
            kerberos,
            kerberos_service: text(
                self.kerberos_service,
                "--kerberos-service",
                "ZK_KERBEROS_SERVICE",
            ),
            kerberos_keytab: path(
                self.kerberos_keytab,
                "--kerberos-keytab",
                "ZK_KERBEROS_KEYTAB",
            ),
            kerberos_ccache: path(
                self.kerberos_ccache,
                "--kerberos-ccache",
                "ZK_KERBEROS_CCACHE",
            ),
            kerberos_config: path(
                self.kerberos_config,
                "--kerberos-config",
                "ZK_KERBEROS_CONFIG",
            ),
            kerberos_principal: text(
                self.kerberos_principal,
                "--kerberos-principal",
                "ZK_KERBEROS_PRINCIPAL",
            ),
            ..self
        };
        Connection {
            from_environment: FromEnvironment(taken.into_inner()),
            ..connection
        }
    }

    /// The security settings, checked.
    ///
    /// # Errors
    /// A usage error for flags that need each other, an unreadable or empty password file, or
    /// Kerberos in a build without it.
    fn security(&self) -> CliResult<Security> {
        let tls = match (&self.tls_ca, &self.tls_cert, &self.tls_key) {
            (None, None, None) => None,
            (None, _, _) => {
                return Err(CliError::usage(
                    "--tls-cert and --tls-key need --tls-ca (the CA that signs the servers)",
                ));
            }
            (Some(ca), cert, key) => {
                let tls = TlsConfig::new().ca_file(ca);
                match (cert, key) {
                    (Some(cert), Some(key)) => Some(tls.identity_files(cert, key)),
                    (None, None) => Some(tls),
                    _ => {
                        return Err(CliError::usage("--tls-cert and --tls-key go together"));
                    }
                }
            }
        };
        let kerberos_flag = [
            ("--kerberos-service", self.kerberos_service.is_some()),
            ("--kerberos-keytab", self.kerberos_keytab.is_some()),
            ("--kerberos-ccache", self.kerberos_ccache.is_some()),
            ("--kerberos-config", self.kerberos_config.is_some()),
            ("--kerberos-principal", self.kerberos_principal.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag));
        if let (Some(flag), false) = (kerberos_flag, self.kerberos) {
            return Err(CliError::usage(format!("{flag} needs --kerberos")));
        }
        let sasl = match (&self.sasl_user, &self.sasl_password_file, self.kerberos) {
            (None, None, false) => None,
            (Some(_), _, true) | (_, Some(_), true) => {
                return Err(CliError::usage(
                    "--kerberos and --sasl-user are two logins: choose one",
                ));
            }
            (Some(user), Some(file), false) => Some(
                SaslConfig::digest_md5_password_file(user.clone(), file).map_err(|error| {
                    CliError::usage(match error {
                        // "cannot read the password file ...": no need for the variant's
                        // "invalid argument:" in front.
                        curator_framework::Error::InvalidArgument(reason) => {
                            format!("--sasl-password-file: {reason}")
                        }
                        other => other.to_string(),
                    })
                })?,
            ),
            (_, _, false) => {
                return Err(CliError::usage(
                    "--sasl-user and --sasl-password-file go together",
                ));
            }
            (None, None, true) => Some(kerberos(
                self.kerberos_service.as_deref(),
                self.kerberos_principal.as_deref(),
            )?),
        };
        // Files MIT Kerberos would otherwise find missing only when the login fails, which
        // looks like a server that never answers.
        for (flag, value) in [
            ("--kerberos-keytab", &self.kerberos_keytab),
            ("--kerberos-config", &self.kerberos_config),
        ] {
            if let Some(file) = value.as_deref().and_then(local_file) {
                readable(flag, file)?;
            }
        }
        if self.kerberos_keytab.is_none() {
            // With a keytab, a missing cache is one to fill; without, the login needs it.
            if let Some(file) = self.kerberos_ccache.as_deref().and_then(local_file) {
                readable("--kerberos-ccache", file).map_err(|error| {
                    CliError::usage(format!(
                        "{} (`kinit -c {}` makes one)",
                        error.message.unwrap_or_default(),
                        file.display()
                    ))
                })?;
            }
        }
        let mut environment = Vec::new();
        for (variable, value) in [
            ("KRB5_CLIENT_KTNAME", &self.kerberos_keytab),
            ("KRB5CCNAME", &self.kerberos_ccache),
            ("KRB5_CONFIG", &self.kerberos_config),
        ] {
            if let Some(value) = value {
                environment.push((variable, value.as_os_str().to_owned()));
            }
        }
        if self.kerberos_keytab.is_some() && self.kerberos_ccache.is_none() {
            // MIT Kerberos takes the principal of the ticket cache first, and goes to the
            // keytab only when the cache holds none: with the caller's usual cache (or one of
            // the environment's) holding someone else's ticket, that someone else would log in.
            // A cache of this process's own, empty, makes the keytab's principal the one.
            environment.push(("KRB5CCNAME", PRIVATE_TICKET_CACHE.into()));
        }
        let digest = match (&self.auth_user, &self.auth_password_file) {
            (None, None) => None,
            (Some(user), Some(file)) => Some(DigestAuth::read(user, file)?),
            _ => {
                return Err(CliError::usage(
                    "--auth-user and --auth-password-file go together",
                ));
            }
        };
        Ok(Security {
            tls,
            client_certificate: self.tls_cert.is_some(),
            sasl,
            kerberos: self.kerberos,
            kerberos_environment: environment,
            digest,
        })
    }
}

/// A digest identity to add to every session (`addauth digest USER:PASSWORD`). `Debug` leaves
/// the password out.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DigestAuth {
    pub(crate) user: String,
    password: String,
}

impl DigestAuth {
    /// The user, and the first line of `file` for the password.
    ///
    /// # Errors
    /// A usage error for a user name ZooKeeper would cut short (it splits `user:password` at the
    /// first colon), an unreadable file, or an empty first line.
    fn read(user: &str, file: &std::path::Path) -> CliResult<Self> {
        if user.is_empty() || user.contains(':') {
            return Err(CliError::usage(
                "--auth-user: a digest user name is not empty and has no ':'",
            ));
        }
        let password = curator_framework::security::read_password_file(file).map_err(|error| {
            let why = match error {
                curator_framework::Error::InvalidArgument(why) => why,
                other => other.to_string(),
            };
            CliError::usage(format!("--auth-password-file: {why}"))
        })?;
        Ok(Self {
            user: user.to_owned(),
            password,
        })
    }

    /// The bytes of the `digest` scheme's authentication: `USER:PASSWORD`.
    pub(crate) fn auth_bytes(&self) -> Vec<u8> {
        format!("{}:{}", self.user, self.password).into_bytes()
    }
}

impl std::fmt::Debug for DigestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestAuth")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// The ticket cache of a `--kerberos-keytab` login without `--kerberos-ccache`: in this
/// process's memory, so empty at the start and gone at the end.
pub(crate) const PRIVATE_TICKET_CACHE: &str = "MEMORY:curator";

/// The file a Kerberos keytab, cache or configuration name stands for: the name itself, or what
/// follows `FILE:`; `None` for other kinds (`MEMORY:`, `KEYRING:`, `DIR:`, `KCM:`...), and for a
/// list of configuration files (`a.conf:b.conf`).
fn local_file(value: &std::path::Path) -> Option<&std::path::Path> {
    let text = value.to_str()?;
    match text.split_once(':') {
        None => Some(value),
        Some(("FILE", file)) => Some(std::path::Path::new(file)),
        Some(_) => None,
    }
}

/// A usage error unless `file` (given with `flag`) can be opened for reading.
fn readable(flag: &str, file: &std::path::Path) -> CliResult<()> {
    let opened = std::fs::File::open(file).and_then(|opened| {
        if opened.metadata()?.is_dir() {
            Err(std::io::Error::other("it is a directory"))
        } else {
            Ok(())
        }
    });
    opened.map_err(|error| {
        CliError::usage(format!("{flag}: cannot read {}: {error}", file.display()))
    })
}

/// A Kerberos login, in a build that has Kerberos.
#[cfg(feature = "kerberos")]
fn kerberos(service: Option<&str>, principal: Option<&str>) -> CliResult<SaslConfig> {
    let mut login = SaslConfig::kerberos();
    if let Some(service) = service {
        login = login.with_service(service);
    }
    if let Some(principal) = principal {
        login = login.with_principal(principal);
    }
    Ok(login)
}

/// No Kerberos in this build.
#[cfg(not(feature = "kerberos"))]
fn kerberos(_: Option<&str>, _: Option<&str>) -> CliResult<SaslConfig> {
    Err(CliError::usage(
        "this curator was built without Kerberos (build it with --features kerberos)",
    ))
}

/// How the client proves who it is, and to whom it talks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Security {
    pub(crate) tls: Option<TlsConfig>,
    /// Whether `tls` presents a client certificate.
    pub(crate) client_certificate: bool,
    pub(crate) sasl: Option<SaslConfig>,
    /// Whether `sasl` is a Kerberos login.
    pub(crate) kerberos: bool,
    /// The Kerberos variables the process must run with (see `main`).
    pub(crate) kerberos_environment: Vec<(&'static str, std::ffi::OsString)>,
    /// A digest identity added to the session (`--auth-user`).
    pub(crate) digest: Option<DigestAuth>,
}

/// The output format.
#[derive(Debug, Clone, Copy, Default, Args)]
pub(crate) struct Output {
    /// Machine-readable output: JSON lines on stdout (results) and stderr (status events and
    /// errors)
    #[arg(long)]
    pub(crate) json: bool,
}

/// The flags of a subcommand that talks to ZooKeeper.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct Session {
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

/// Everything a command needs besides its own arguments, defaults applied.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// `--connect`, else `$ZK_CONNECT` (both checked); `None`: [`DEFAULT_CONNECT`].
    pub(crate) connect: Option<String>,
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) namespace: Option<String>,
    pub(crate) json: bool,
    pub(crate) security: Security,
    /// The security settings that came from variables, for messages about them.
    pub(crate) from_environment: FromEnvironment,
}

/// Where `curator` looks for ZooKeeper without `--connect` or `$ZK_CONNECT` (and where
/// `curator server` serves when it can).
pub(crate) const DEFAULT_CONNECT: &str = "127.0.0.1:2181";

impl Settings {
    /// The connect string to use.
    pub(crate) fn connect_string(&self) -> String {
        self.connect
            .clone()
            .unwrap_or_else(|| DEFAULT_CONNECT.to_owned())
    }
}

impl Cli {
    /// Whether `--json` was given anywhere (before or after the subcommand).
    pub(crate) fn json(&self) -> bool {
        self.output.json || self.command.sessions().iter().any(|s| s.output.json)
    }

    /// The command and its settings: the subcommand's flags, else those given before it, else
    /// `$ZK_CONNECT` (for `--connect`), else the defaults.
    ///
    /// # Errors
    /// A usage error for a flag the subcommand does not take, or a bad `$ZK_CONNECT`.
    pub(crate) fn resolve(self) -> CliResult<(Command, Settings)> {
        let Cli {
            output,
            connection,
            command,
        } = self;
        let (output, connection) = match &command {
            Command::Demo { connection: own } => {
                if output.json {
                    return Err(not_for("--json", "demo"));
                }
                (output, own.clone().or(connection))
            }
            Command::Server { output: own, .. } => {
                if let Some(flag) = connection.given().first() {
                    return Err(not_for(flag, "server"));
                }
                (
                    Output {
                        json: own.json || output.json,
                    },
                    connection,
                )
            }
            Command::Sentinel { .. } => (output, connection),
            // The innermost flags win (`counter PATH incr --json`: `incr`'s).
            other => other.sessions().into_iter().fold(
                (output, connection),
                |(output, connection), own| {
                    (
                        Output {
                            json: own.output.json || output.json,
                        },
                        own.connection.clone().or(connection),
                    )
                },
            ),
        };
        if let Command::Ensemble {
            op: Some(op),
            probe_timeout: Some(_),
            ..
        } = &command
        {
            return Err(not_for(
                "--probe-timeout",
                &format!("ensemble {}", op.name()),
            ));
        }
        let connection = connection.or_environment();
        let security = match &command {
            Command::Server { .. } | Command::Sentinel { .. } => Security::default(),
            _ => connection
                .security()
                .map_err(|error| connection.from_environment.name_in(error))?,
        };
        let connect = match connection.connect {
            Some(connect) => Some(connect),
            None => match std::env::var("ZK_CONNECT") {
                Ok(connect) if !connect.trim().is_empty() => Some(
                    parse_connect(&connect)
                        .map_err(|error| CliError::usage(format!("$ZK_CONNECT: {error}")))?,
                ),
                _ => None,
            },
        };
        let settings = Settings {
            connect,
            session_timeout: connection
                .session_timeout
                .unwrap_or(Duration::from_secs(30)),
            connection_timeout: connection
                .connection_timeout
                .unwrap_or(Duration::from_secs(10)),
            namespace: connection.namespace,
            json: output.json,
            security,
            from_environment: connection.from_environment,
        };
        Ok((command, settings))
    }
}

fn not_for(flag: &str, command: &str) -> CliError {
    CliError::usage(format!("{flag} does not apply to `curator {command}`"))
}

/// Checks a connect string, `host:port[,host:port...][/chroot]` with ports 1 to 65535 (IPv6
/// hosts in brackets: `[::1]:2181`), and returns it trimmed.
///
/// # Errors
/// What is wrong with it, in a few words.
pub(crate) fn parse_connect(input: &str) -> Result<String, String> {
    let text = input.trim();
    let example = "expected host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181";
    let (hosts, chroot) = match text.find('/') {
        Some(slash) => (&text[..slash], Some(&text[slash..])),
        None => (text, None),
    };
    if hosts.is_empty() {
        return Err(format!("`{input}` names no host ({example})"));
    }
    for host in hosts.split(',') {
        let host = host.trim();
        let (name, port) = host
            .rsplit_once(':')
            .ok_or_else(|| format!("`{host}` has no port ({example})"))?;
        let name_ok = match name.strip_prefix('[') {
            Some(v6) => v6
                .strip_suffix(']')
                .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok()),
            None => {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            }
        };
        if !name_ok {
            return Err(format!(
                "`{host}` is not a host name or address ({example})"
            ));
        }
        match port.parse::<u16>() {
            Ok(port) if port > 0 => {}
            _ => return Err(format!("`{host}`: the port must be 1 to 65535")),
        }
    }
    if let Some(chroot) = chroot {
        curator_framework::paths::validate(chroot)
            .map_err(|error| format!("chroot `{chroot}`: {error}"))?;
    }
    Ok(text.to_owned())
}

const UI_HELP: &str = "\
Endpoints (GET only):
  /            the dashboard: one self-contained page (no script or style from elsewhere)
  /events      the annotated tree as server-sent events (`tree`), again after each change
  /api/tree    the annotated tree now, as JSON
  /metrics     this process's metrics, Prometheus text format 0.0.4";

/// What to do.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing flattened clap arguments buys nothing"
)]
pub(crate) enum Command {
    /// A short show of the framework against a real server (started here unless --connect)
    Demo {
        #[command(flatten)]
        connection: Connection,
    },
    /// Start a local ZooKeeper server (or ensemble) and print its connect string until interrupted
    Server {
        /// Start an ensemble of N members instead of one server
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=9))]
        cluster: Option<u16>,
        /// Serve on this port [default: 2181 when free, else any free port]
        #[arg(long, value_name = "PORT", conflicts_with = "cluster", value_parser = clap::value_parser!(u16).range(1..))]
        port: Option<u16>,
        #[command(flatten)]
        output: Output,
    },
    /// Run CMD while holding the distributed lock at PATH (Curator's InterProcessMutex)
    ///
    /// CMD gets the lock's fencing token in $CURATOR_FENCING_TOKEN (and the lock node in
    /// $CURATOR_LOCK_NODE). It can hand the token to what it changes, or pass a fencing gate
    /// first: `curator fence /gates/db "$CURATOR_FENCING_TOKEN" && write-to-db` refuses a holder
    /// whose lock was lost and taken by someone newer.
    Lock {
        /// The lock's path
        path: String,
        /// Give up (exit code 4) when the lock is not had within D
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        session: Session,
    },
    /// Run CMD only while this process leads the election at PATH (Curator's LeaderLatch)
    Leader {
        /// The election's path
        path: String,
        /// This participant's id (default: host name and process id)
        #[arg(long, value_parser = parse_id)]
        id: Option<String>,
        /// Give up (exit code 4) when not leader within D the first time
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        session: Session,
    },
    /// Run CMD only if the time-boxed lease at PATH is won: at most one run per interval,
    /// cluster-wide (exit code 7, CMD not run, when someone else holds it)
    ///
    /// The lease is timed by ZooKeeper's clock and is not bound to this session. CMD gets
    /// $CURATOR_LEASE_TOKEN (a fencing token, see `curator fence`) and $CURATOR_LEASE_UNTIL (the
    /// interval's end, milliseconds since the Unix epoch on the server's clock). CMD is stopped
    /// (SIGTERM, then SIGKILL after --grace) so that it is gone by the end of the interval
    /// (exit code 5 then).
    Lease {
        /// The lease's path
        path: String,
        /// How long the lease is held (its interval), e.g. 70m
        #[arg(long = "for", value_parser = parse_duration, value_name = "D")]
        duration: Duration,
        /// This holder's id; the same id renews its own lease (default: host name and process id)
        #[arg(long, value_parser = parse_id)]
        id: Option<String>,
        #[command(flatten)]
        run: RunArgs,
        #[command(flatten)]
        session: Session,
    },
    /// Admit TOKEN through the fencing gate at PATH: exit 0 when it is not older than any token
    /// admitted before (it is stored), exit code 6 when a newer one was (printed)
    ///
    /// The gate's node holds the highest admitted token as decimal text. Tokens are
    /// $CURATOR_FENCING_TOKEN of `curator lock`, or $CURATOR_LEASE_TOKEN of `curator lease`.
    Fence {
        /// The gate's node (created on first use)
        path: String,
        /// The fencing token to admit (0 or more)
        #[arg(allow_negative_numbers = true, value_parser = parse_token)]
        token: i64,
        #[command(flatten)]
        session: Session,
    },
    /// Enter the double barrier at PATH with N members, run CMD (or wait for Enter), then leave
    Barrier {
        /// The barrier's path
        path: String,
        /// How many members the barrier waits for
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        members: u32,
        /// Give up (exit code 4) when the barrier does not open (or close) within D
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        timeout: Option<Duration>,
        /// After SIGTERM, how long CMD gets before SIGKILL
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
        grace: Duration,
        /// The command to run inside the barrier (without one: wait for Enter or end of input)
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
        #[command(flatten)]
        session: Session,
    },
    /// A shared counter (Curator's DistributedAtomicLong: 8 bytes, big-endian)
    Counter {
        /// The counter's path
        path: String,
        #[command(subcommand)]
        op: CounterOp,
        #[command(flatten)]
        session: Session,
    },
    /// List the children of PATH
    Ls {
        /// The node
        path: String,
        #[command(flatten)]
        session: Session,
    },
    /// Print the data of PATH
    Get {
        /// The node
        path: String,
        /// Also print the node's version and sizes
        #[arg(long)]
        stat: bool,
        /// How to print the data: as text (invalid UTF-8 replaced by U+FFFD), or in base64 or
        /// hex
        #[arg(long, value_enum, default_value_t = Encoding::Utf8)]
        encoding: Encoding,
        #[command(flatten)]
        session: Session,
    },
    /// Set the data of PATH (`-` reads it from standard input)
    Set {
        /// The node
        path: String,
        /// The new data
        data: String,
        /// Only if the node is at this version
        #[arg(long)]
        version: Option<i32>,
        #[command(flatten)]
        session: Session,
    },
    /// Create PATH (with DATA, or empty) and print the created path
    Create {
        /// The node
        path: String,
        /// Its data (`-` reads it from standard input)
        data: Option<String>,
        /// Create missing parents too
        #[arg(short, long)]
        parents: bool,
        /// Make it sequential (the server appends a counter to the name)
        #[arg(long)]
        sequential: bool,
        #[command(flatten)]
        session: Session,
    },
    /// Delete PATH
    Rm {
        /// The node
        path: String,
        /// Delete its children too
        #[arg(short, long)]
        recursive: bool,
        /// Only if the node is at this version
        #[arg(long)]
        version: Option<i32>,
        #[command(flatten)]
        session: Session,
    },
    /// Print PATH and everything below it
    Tree {
        /// The root of the tree
        path: String,
        #[command(flatten)]
        session: Session,
    },
    /// Show who holds what at PATH: the recipe recognized there (lock, semaphore, latch,
    /// barrier, queue, counter, group, ...), its holders, waiters in order, leader, queue depth
    /// and members, each with its identity, session and creation time
    Inspect {
        /// The recipe's path
        path: String,
        /// Print the report again after every change under PATH, until interrupted
        #[arg(long)]
        watch: bool,
        #[command(flatten)]
        session: Session,
    },
    /// Serve a live dashboard of the tree under PATH (recipes recognized: holders, waiters,
    /// leaders, queue depths) and this process's metrics, until interrupted
    ///
    /// Prints the page's URL as the first line of stdout. Read-only: the server has no endpoint
    /// that writes to ZooKeeper. It still shows who holds what (host names, process ids, session
    /// ids, paths): it listens on a loopback address only, unless --allow-remote.
    #[command(after_help = UI_HELP)]
    Ui {
        /// The root of the tree to show
        path: String,
        /// The address to serve on (port 0: any free port)
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Allow a --listen address other than loopback (anyone who reaches it sees the tree;
        /// there is no login)
        #[arg(long)]
        allow_remote: bool,
        #[command(flatten)]
        session: Session,
    },
    /// Print the identities the server gives this client's session (ZooKeeper's whoAmI)
    Whoami {
        #[command(flatten)]
        session: Session,
    },
    /// Print PATH's data and children, then every change, until interrupted
    Watch {
        /// The node (it need not exist yet)
        path: String,
        /// Stop after N changes
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        #[command(flatten)]
        session: Session,
    },
    /// Show the ensemble's members and how each is doing; `add` or `remove` members (dynamic
    /// reconfiguration)
    #[command(after_help = ENSEMBLE_HELP)]
    Ensemble {
        #[command(subcommand)]
        op: Option<EnsembleOp>,
        /// How long each member gets to answer `srvr` before it shows as unreachable (without
        /// a subcommand) [default: 2s]
        #[arg(long, value_parser = parse_duration, value_name = "D")]
        probe_timeout: Option<Duration>,
        #[command(flatten)]
        session: Session,
    },
    /// Internal: the helper process of `lock`, `leader` and `barrier` (see the sentinel module)
    #[command(name = "__sentinel", hide = true)]
    Sentinel {
        /// The wrapper's process id
        #[arg(long)]
        wrapper: i32,
        /// After SIGTERM, how long CMD gets before SIGKILL
        #[arg(long, value_parser = parse_duration)]
        grace: Duration,
    },
}

impl Command {
    /// The ZooKeeper path the command works on (`None` for `demo` and `server`).
    pub(crate) fn path(&self) -> Option<&str> {
        match self {
            Command::Demo { .. }
            | Command::Server { .. }
            | Command::Sentinel { .. }
            | Command::Whoami { .. }
            | Command::Ensemble { .. } => None,
            Command::Lock { path, .. }
            | Command::Lease { path, .. }
            | Command::Fence { path, .. }
            | Command::Leader { path, .. }
            | Command::Barrier { path, .. }
            | Command::Counter { path, .. }
            | Command::Ls { path, .. }
            | Command::Get { path, .. }
            | Command::Set { path, .. }
            | Command::Create { path, .. }
            | Command::Rm { path, .. }
            | Command::Tree { path, .. }
            | Command::Inspect { path, .. }
            | Command::Ui { path, .. }
            | Command::Watch { path, .. } => Some(path),
        }
    }

    /// The connection and output flags of a command that talks to ZooKeeper, outermost first
    /// (`counter PATH --json incr` and `counter PATH incr --json` both work).
    fn sessions(&self) -> Vec<&Session> {
        match self {
            Command::Demo { .. } | Command::Server { .. } | Command::Sentinel { .. } => Vec::new(),
            Command::Counter { session, op, .. } => vec![session, op.session()],
            Command::Ensemble { session, op, .. } => {
                let mut sessions = vec![session];
                sessions.extend(op.as_ref().map(EnsembleOp::session));
                sessions
            }
            Command::Lock { session, .. }
            | Command::Lease { session, .. }
            | Command::Fence { session, .. }
            | Command::Leader { session, .. }
            | Command::Barrier { session, .. }
            | Command::Ls { session, .. }
            | Command::Get { session, .. }
            | Command::Set { session, .. }
            | Command::Create { session, .. }
            | Command::Rm { session, .. }
            | Command::Tree { session, .. }
            | Command::Inspect { session, .. }
            | Command::Ui { session, .. }
            | Command::Whoami { session }
            | Command::Watch { session, .. } => vec![session],
        }
    }
}

/// How `lock` and `leader` run their command.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// After SIGTERM, how long CMD gets before SIGKILL
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
    pub(crate) grace: Duration,
    /// The command to run, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// What `curator counter` does.
#[derive(Debug, Subcommand)]
#[command(args_conflicts_with_subcommands = false)]
pub(crate) enum CounterOp {
    /// Print the value (0 when the node does not exist)
    Get {
        #[command(flatten)]
        session: Session,
    },
    /// Set the value
    Set {
        /// The new value
        #[arg(allow_negative_numbers = true)]
        value: i64,
        #[command(flatten)]
        session: Session,
    },
    /// Add N (default 1) and print the new value
    Incr {
        /// How much to add
        #[arg(allow_negative_numbers = true, default_value_t = 1)]
        by: i64,
        #[command(flatten)]
        session: Session,
    },
}

impl CounterOp {
    fn session(&self) -> &Session {
        match self {
            CounterOp::Get { session }
            | CounterOp::Set { session, .. }
            | CounterOp::Incr { session, .. } => session,
        }
    }
}

const ENSEMBLE_HELP: &str = "\
Without a subcommand: the configuration's version (hexadecimal, as ZooKeeper writes it) and one
row per member: id, role, quorum:election address, client address, and what the member says of
itself to `srvr` (mode, zxid, connections, average latency), asked of every member at once over
plain TCP on its client address; a member that does not answer shows as unreachable, and the
command still succeeds.

`add` and `remove` need servers with reconfigEnabled=true and a session that may write
/zookeeper/config: the super user or an identity its ACL lets write (--auth-user with
--auth-password-file). Start a new member before adding it.

Examples:
  curator ensemble --json
  curator ensemble add 'server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181' \\
      --auth-user super --auth-password-file /etc/zookeeper/super.password
  curator ensemble remove 4 --from-version 100000003 --auth-user super --auth-password-file F";

/// What `curator ensemble` changes.
#[derive(Debug, Subcommand)]
#[command(args_conflicts_with_subcommands = false)]
pub(crate) enum EnsembleOp {
    /// Add members (or change them: the same id with other addresses or role), then print the
    /// new configuration
    Add {
        /// A member, as ZooKeeper writes it:
        /// server.ID=HOST:QUORUM_PORT:ELECTION_PORT[:participant|observer][;[HOST:]CLIENT_PORT]
        #[arg(required = true, value_name = "SPEC", value_parser = parse_member)]
        specs: Vec<String>,
        #[command(flatten)]
        change: Change,
    },
    /// Remove members by id, then print the new configuration
    Remove {
        /// A member's id (the N of server.N)
        #[arg(required = true, value_name = "ID")]
        ids: Vec<u64>,
        #[command(flatten)]
        change: Change,
    },
}

impl EnsembleOp {
    fn session(&self) -> &Session {
        match self {
            EnsembleOp::Add { change, .. } | EnsembleOp::Remove { change, .. } => &change.session,
        }
    }

    /// The name of the subcommand, for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            EnsembleOp::Add { .. } => "add",
            EnsembleOp::Remove { .. } => "remove",
        }
    }
}

/// The flags of `ensemble add` and `ensemble remove`.
#[derive(Debug, Args)]
pub(crate) struct Change {
    /// Change the ensemble only if its configuration is still version V (hexadecimal, as
    /// `curator ensemble` prints it; `0x` optional); otherwise nothing changes (exit code 1)
    #[arg(long, value_name = "V", value_parser = parse_config_version)]
    pub(crate) from_version: Option<i64>,
    #[command(flatten)]
    pub(crate) session: Session,
}

/// An id of `leader` or `lease`: not empty (nor only blanks), since the node would then name
/// nobody.
///
/// # Errors
/// For an empty id.
fn parse_id(input: &str) -> Result<String, String> {
    if input.trim().is_empty() {
        return Err("an id is not empty (without --id: host name and process id)".to_owned());
    }
    Ok(input.to_owned())
}

/// A fencing token: a zxid (`$CURATOR_FENCING_TOKEN`, `$CURATOR_LEASE_TOKEN`), so never
/// negative.
///
/// # Errors
/// When it is not a whole number, or is negative.
fn parse_token(input: &str) -> Result<i64, String> {
    match input.trim().parse::<i64>() {
        Ok(token) if token >= 0 => Ok(token),
        Ok(_) => Err(
            "a fencing token is not negative (tokens are zxids: $CURATOR_FENCING_TOKEN of `curator \
             lock`, $CURATOR_LEASE_TOKEN of `curator lease`)"
                .to_owned(),
        ),
        Err(error) => Err(format!("not a fencing token: {error}")),
    }
}

/// Checks a member spec (`server.N=...`) before anything is sent; returns it trimmed.
///
/// # Errors
/// What is wrong with it.
fn parse_member(input: &str) -> Result<String, String> {
    match input.parse::<curator_framework::ensemble::EnsembleMember>() {
        Ok(_) => Ok(input.trim().to_owned()),
        // "ensemble member ...: why", without the variant's "invalid argument:" in front.
        Err(curator_framework::Error::InvalidArgument(reason)) => Err(reason),
        Err(other) => Err(other.to_string()),
    }
}

/// Reads a configuration version: hexadecimal, as ZooKeeper writes it (`version=100000003`),
/// with or without `0x`.
///
/// # Errors
/// When it is not a hexadecimal number that fits in an `i64`.
pub(crate) fn parse_config_version(input: &str) -> Result<i64, String> {
    let text = input.trim();
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "`{input}` is not a configuration version (hexadecimal, as `curator ensemble` prints \
             it: 100000003 or 0x100000003)"
        ));
    }
    i64::from_str_radix(digits, 16)
        .map_err(|_| format!("`{input}` is too large for a configuration version"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn lock_takes_a_command_after_the_separator() {
        let cli = Cli::try_parse_from([
            "curator",
            "lock",
            "/l",
            "--timeout",
            "2s",
            "--",
            "echo",
            "-n",
            "hi",
        ])
        .unwrap();
        let Command::Lock {
            path, timeout, run, ..
        } = cli.command
        else {
            panic!("not a lock command");
        };
        assert_eq!(path, "/l");
        assert_eq!(timeout, Some(Duration::from_secs(2)));
        assert_eq!(run.command, ["echo", "-n", "hi"]);
        assert!(Cli::try_parse_from(["curator", "lock", "/l"]).is_err());
    }

    #[test]
    fn lease_and_fence_parse() {
        let cli = Cli::try_parse_from([
            "curator", "lease", "/l", "--for", "70m", "--id", "job", "--", "true",
        ])
        .unwrap();
        let Command::Lease {
            path,
            duration,
            id,
            run,
            ..
        } = cli.command
        else {
            panic!("not a lease command");
        };
        assert_eq!(path, "/l");
        assert_eq!(duration, Duration::from_secs(70 * 60));
        assert_eq!(id.as_deref(), Some("job"));
        assert_eq!(run.command, ["true"]);
        assert!(Cli::try_parse_from(["curator", "lease", "/l", "--", "true"]).is_err());

        let cli = Cli::try_parse_from(["curator", "fence", "/g", "12884901890"]).unwrap();
        let Command::Fence { path, token, .. } = cli.command else {
            panic!("not a fence command");
        };
        assert_eq!((path.as_str(), token), ("/g", 12_884_901_890));
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "x"]).is_err());
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "-1"]).is_err());
        assert!(Cli::try_parse_from(["curator", "fence", "/g", "0"]).is_ok());
    }

    fn settings(args: &[&str]) -> CliResult<Settings> {
        Cli::try_parse_from(args)
            .unwrap()
            .resolve()
            .map(|(_, settings)| settings)
    }

    #[test]
    fn security_flags_are_checked_together() {
        let usage = |args: &[&str]| match settings(args) {
            Err(error) => error.message.unwrap_or_default(),
            Ok(_) => panic!("{args:?} should be refused"),
        };
        assert!(
            usage(&[
                "curator",
                "ls",
                "/",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem"
            ])
            .contains("need --tls-ca")
        );
        assert!(
            usage(&[
                "curator",
                "ls",
                "/",
                "--tls-ca",
                "ca.pem",
                "--tls-cert",
                "c.pem"
            ])
            .contains("go together")
        );
        assert!(usage(&["curator", "ls", "/", "--sasl-user", "app"]).contains("go together"));
        assert!(
            usage(&["curator", "ls", "/", "--kerberos-keytab", "k"])
                .contains("--kerberos-keytab needs --kerberos")
        );
        assert!(usage(&["curator", "--tls-ca", "ca.pem", "server"]).contains("does not apply"));
        // Flags before the subcommand count too, and the TLS files are read when connecting.
        let tls = settings(&["curator", "--tls-ca", "ca.pem", "ls", "/"]).unwrap();
        assert!(tls.security.tls.is_some());
        assert!(tls.security.sasl.is_none());
    }

    #[test]
    fn digest_auth_flags_are_checked_and_the_password_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret:with-colon\nsecond line\n").unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let (file, empty) = (file.to_str().unwrap(), empty.to_str().unwrap());
        let usage = |args: &[&str]| match settings(args) {
            Err(error) => {
                assert_eq!(error.code, crate::exit::codes::USAGE);
                error.message.unwrap_or_default()
            }
            Ok(_) => panic!("{args:?} should be refused"),
        };
        let auth = settings(&[
            "curator",
            "--auth-user",
            "super",
            "whoami",
            "--auth-password-file",
            file,
        ])
        .unwrap()
        .security
        .digest
        .unwrap();
        assert_eq!(auth.auth_bytes(), b"super:s3cret:with-colon");
        assert!(!format!("{auth:?}").contains("s3cret"));
        assert!(usage(&["curator", "ls", "/", "--auth-user", "u"]).contains("go together"));
        assert!(
            usage(&["curator", "ls", "/", "--auth-password-file", file]).contains("go together")
        );
        for user in ["", "a:b"] {
            let args = ["curator", "whoami", "--auth-user", user];
            let message = usage(&[&args[..], &["--auth-password-file", file]].concat());
            assert!(message.contains("has no ':'"), "{message}");
        }
        let message = usage(&[
            "curator",
            "whoami",
            "--auth-user",
            "u",
            "--auth-password-file",
            empty,
        ]);
        assert!(message.ends_with("is empty"), "{message}");
        let message = usage(&[
            "curator",
            "whoami",
            "--auth-user",
            "u",
            "--auth-password-file",
            "/no/such/file",
        ]);
        assert!(
            message
                .starts_with("--auth-password-file: cannot read the password file /no/such/file"),
            "{message}"
        );
        assert!(usage(&["curator", "--auth-user", "u", "server"]).contains("does not apply"));
    }

    #[test]
    fn ensemble_takes_specs_ids_and_hex_versions() {
        let cli = Cli::try_parse_from([
            "curator",
            "ensemble",
            "--json",
            "add",
            "server.4=10.0.0.4:2888:3888;2181",
            "server.5=10.0.0.5:2888:3888:observer;10.0.0.5:2181",
            "--from-version",
            "0x10000000A",
            "--connect",
            "h:1",
        ])
        .unwrap();
        assert!(cli.json());
        let (command, resolved) = cli.resolve().unwrap();
        assert_eq!(resolved.connect.as_deref(), Some("h:1"));
        let Command::Ensemble {
            op: Some(EnsembleOp::Add { specs, change }),
            ..
        } = command
        else {
            panic!("not ensemble add");
        };
        assert_eq!(specs.len(), 2);
        assert_eq!(change.from_version, Some(0x1_0000_000a));
        for bad in [
            &["curator", "ensemble", "add", "4=h:1:2"][..],
            &["curator", "ensemble", "add", "server.4=h:1:2:leader"],
            &["curator", "ensemble", "add"],
            &["curator", "ensemble", "remove"],
            &["curator", "ensemble", "remove", "x"],
            &["curator", "ensemble", "remove", "-1"],
            &["curator", "ensemble", "remove", "1", "--from-version", "1g"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse_config_version("100000003"), Ok(0x1_0000_0003));
        assert_eq!(parse_config_version("0X0"), Ok(0));
        for bad in ["", "0x", "-1", "ffffffffffffffffff", "12 34"] {
            assert!(parse_config_version(bad).is_err(), "{bad:?} parsed");
        }
        let refused = settings(&[
            "curator",
            "ensemble",
            "--probe-timeout",
            "1s",
            "remove",
            "3",
        ])
        .unwrap_err();
        assert!(refused.message.unwrap().contains("ensemble remove"));
        let status = Cli::try_parse_from(["curator", "ensemble", "--probe-timeout", "500ms"])
            .unwrap()
            .command;
        assert!(matches!(
            status,
            Command::Ensemble {
                op: None,
                probe_timeout: Some(timeout),
                ..
            } if timeout == Duration::from_millis(500)
        ));
    }

    #[test]
    fn kerberos_names_of_files_are_checked_and_others_left_to_kerberos() {
        use std::path::Path;
        assert_eq!(
            local_file(Path::new("/k/a.keytab")),
            Some(Path::new("/k/a.keytab"))
        );
        assert_eq!(local_file(Path::new("FILE:/k/a")), Some(Path::new("/k/a")));
        for other in [
            "MEMORY:x",
            "KEYRING:persistent:0",
            "DIR:/d",
            "/a.conf:/b.conf",
        ] {
            assert_eq!(local_file(Path::new(other)), None, "{other}");
        }
        let missing = readable("--kerberos-keytab", Path::new("/no/such/keytab")).unwrap_err();
        assert_eq!(missing.code, crate::exit::codes::USAGE);
        assert!(
            missing
                .message
                .unwrap()
                .starts_with("--kerberos-keytab: cannot read /no/such/keytab: ")
        );
        let directory = readable("--kerberos-config", Path::new("/")).unwrap_err();
        assert!(directory.message.unwrap().contains("directory"));
    }

    #[cfg(feature = "kerberos")]
    #[test]
    fn a_keytab_login_gets_a_ticket_cache_of_its_own() {
        // Any readable file passes for a keytab here.
        let keytab = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let environment = |args: &[&str]| {
            let mut all = vec![
                "curator",
                "whoami",
                "--kerberos",
                "--kerberos-keytab",
                keytab,
            ];
            all.extend_from_slice(args);
            settings(&all).unwrap().security.kerberos_environment
        };
        let cache = |environment: &[(&str, std::ffi::OsString)]| {
            environment
                .iter()
                .find(|(name, _)| *name == "KRB5CCNAME")
                .map(|(_, value)| value.clone())
        };
        let alone = environment(&[]);
        assert_eq!(cache(&alone), Some(PRIVATE_TICKET_CACHE.into()));
        assert!(alone.contains(&("KRB5_CLIENT_KTNAME", keytab.into())));
        // A cache asked for is the cache used (a missing one is made, from the keytab).
        let given = environment(&["--kerberos-ccache", "/no/such/cache"]);
        assert_eq!(cache(&given), Some("/no/such/cache".into()));
        // Without a keytab, the cache must hold the ticket already.
        let refused = settings(&[
            "curator",
            "whoami",
            "--kerberos",
            "--kerberos-ccache",
            "/no/cc",
        ])
        .unwrap_err();
        assert!(refused.message.unwrap().contains("kinit -c /no/cc"));
    }

    #[test]
    fn session_flags_go_before_or_after_the_subcommand_and_after_wins() {
        let after = settings(&["curator", "ls", "/", "--json", "--connect", "h:1"]).unwrap();
        assert!(after.json);
        assert_eq!(after.connect.as_deref(), Some("h:1"));
        let before = settings(&["curator", "--json", "--connect", "h:1", "ls", "/"]).unwrap();
        assert!(before.json);
        assert_eq!(before.connect.as_deref(), Some("h:1"));
        let both = settings(&[
            "curator",
            "--connect",
            "h:1",
            "--session-timeout",
            "5s",
            "ls",
            "/",
            "--connect",
            "h:2",
        ])
        .unwrap();
        assert_eq!(both.connect.as_deref(), Some("h:2"));
        assert_eq!(both.session_timeout, Duration::from_secs(5));
        assert_eq!(both.connection_timeout, Duration::from_secs(10));
    }

    #[test]
    fn flags_a_subcommand_does_not_take_are_usage_errors() {
        let server = settings(&["curator", "--namespace", "x", "server"]).unwrap_err();
        assert_eq!(server.code, crate::exit::codes::USAGE);
        assert!(Cli::try_parse_from(["curator", "server", "--connect", "h:1"]).is_err());
        assert!(settings(&["curator", "--json", "demo"]).is_err());
        assert!(Cli::try_parse_from(["curator", "demo", "--json"]).is_err());
        assert!(settings(&["curator", "--json", "server"]).unwrap().json);
    }

    #[test]
    fn counter_operations_take_the_session_flags_too() {
        let inner = settings(&[
            "curator",
            "counter",
            "/c",
            "--connect",
            "h:1",
            "incr",
            "-2",
            "--json",
            "--connect",
            "h:2",
        ])
        .unwrap();
        assert!(inner.json);
        assert_eq!(inner.connect.as_deref(), Some("h:2"));
    }

    #[test]
    fn connect_strings_are_checked() {
        for good in [
            "127.0.0.1:2181",
            "a:1,b.example.com:65535",
            " zk-1:2181,zk_2:2182/app/env ",
            "[::1]:2181",
        ] {
            assert_eq!(parse_connect(good), Ok(good.trim().to_owned()), "{good}");
        }
        for bad in [
            "garbage",
            "",
            "/chroot",
            "h:0",
            "h:65536",
            "h:port",
            ":2181",
            "a:1,,b:2",
            "h:1/bad//chroot",
            "[zz]:1",
            "h 1:2",
        ] {
            assert!(parse_connect(bad).is_err(), "{bad:?} passed");
        }
    }
}
