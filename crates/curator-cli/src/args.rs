//! The command line, as clap reads it: the top-level parser, and the flags commands share
//! (`--json`, the connection and security flags of [`connection`]) resolved into one
//! [`Settings`]. Each command's own arguments live in its module under `cmd/`.

mod connection;
mod security;

use std::time::Duration;

use clap::{Args, Parser};

pub(crate) use self::connection::Connection;
pub(crate) use self::security::Security;
use crate::cmd::Command;
use crate::duration::parse_duration;
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

impl Session {
    /// What a command with these flags (and no subcommand with flags of its own) takes.
    pub(crate) fn takes(&self) -> Takes<'_> {
        Takes::Session(vec![self])
    }
}

/// The shared flags a command takes after its name, for [`Cli::resolve`].
pub(crate) enum Takes<'a> {
    /// `--json` and the connection flags, at each level of the command, outermost first
    /// (`counter PATH --json incr` and `counter PATH incr --json` both work; the innermost
    /// wins).
    Session(Vec<&'a Session>),
    /// `--json` only (`server`): a connection flag before the command is a usage error, and
    /// no variable is read for the security settings.
    #[cfg_attr(
        not(feature = "server"),
        expect(dead_code, reason = "only `server` takes it")
    )]
    Output(&'a Output),
    /// The connection flags only (`demo`): `--json` before the command is a usage error.
    #[cfg_attr(
        not(feature = "server"),
        expect(dead_code, reason = "only `demo` takes it")
    )]
    Connection(&'a Connection),
    /// None (`__sentinel`, which `main` runs before anything is resolved).
    Nothing,
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
    pub(crate) from_environment: connection::FromEnvironment,
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
    /// Whether `--json` was given before the subcommand or among its session flags (a usage
    /// error met before the flags are resolved is reported as JSON then).
    pub(crate) fn json(&self) -> bool {
        self.output.json
            || match self.command.takes() {
                Takes::Session(sessions) => sessions.iter().any(|session| session.output.json),
                // `server --json` counts once resolved (see `Cli::resolve`).
                Takes::Output(_) | Takes::Connection(_) | Takes::Nothing => false,
            }
    }

    /// The command and its settings: the subcommand's flags, else those given before it, else
    /// their environment variables (`$ZK_CONNECT` for `--connect`), else the defaults.
    ///
    /// # Errors
    /// A usage error for a flag the subcommand does not take, for security flags that do not
    /// go together, or for a bad `$ZK_CONNECT`.
    pub(crate) fn resolve(self) -> CliResult<(Command, Settings)> {
        let Cli {
            output,
            connection,
            command,
        } = self;
        let name = command.name();
        // `secured`: whether the command uses the security settings.
        let (output, connection, secured) = match command.takes() {
            Takes::Session(sessions) => {
                let (output, connection) =
                    sessions
                        .into_iter()
                        .fold((output, connection), |(output, connection), own| {
                            (
                                Output {
                                    json: own.output.json || output.json,
                                },
                                own.connection.clone().or(connection),
                            )
                        });
                (output, connection, true)
            }
            Takes::Output(own) => {
                if let Some(flag) = connection.given().first() {
                    return Err(not_for(flag, name));
                }
                let output = Output {
                    json: own.json || output.json,
                };
                (output, connection, false)
            }
            Takes::Connection(own) => {
                if output.json {
                    return Err(not_for("--json", name));
                }
                (output, own.clone().or(connection), true)
            }
            Takes::Nothing => (output, connection, false),
        };
        command.check()?;
        let connection = connection.or_environment();
        let security = if secured {
            connection
                .security()
                .map_err(|error| connection.from_environment.name_in(error))?
        } else {
            Security::default()
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

/// The usage error for `flag` given to `curator command`, which does not take it.
pub(crate) fn not_for(flag: &str, command: &str) -> CliError {
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

/// How `lock`, `leader` and `lease` run their command.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// After SIGTERM, how long CMD gets before SIGKILL
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "D")]
    pub(crate) grace: Duration,
    /// The command to run, after `--`
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// An id of `leader` or `lease`: not empty (nor only blanks), since the node would then name
/// nobody.
///
/// # Errors
/// For an empty id.
pub(crate) fn parse_id(input: &str) -> Result<String, String> {
    if input.trim().is_empty() {
        return Err("an id is not empty (without --id: host name and process id)".to_owned());
    }
    Ok(input.to_owned())
}

/// `args` parsed and resolved, for tests.
#[cfg(test)]
pub(crate) fn settings(args: &[&str]) -> CliResult<Settings> {
    Cli::try_parse_from(args)
        .unwrap()
        .resolve()
        .map(|(_, settings)| settings)
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

    #[cfg(feature = "server")]
    #[test]
    fn flags_a_subcommand_does_not_take_are_usage_errors() {
        let server = settings(&["curator", "--namespace", "x", "server"]).unwrap_err();
        assert_eq!(server.code, crate::exit::codes::USAGE);
        assert!(Cli::try_parse_from(["curator", "server", "--connect", "h:1"]).is_err());
        assert!(settings(&["curator", "--json", "demo"]).is_err());
        assert!(Cli::try_parse_from(["curator", "demo", "--json"]).is_err());
        assert!(settings(&["curator", "--json", "server"]).unwrap().json);
        let refused = |args: &[&str]| settings(args).unwrap_err().message.unwrap();
        assert!(refused(&["curator", "--tls-ca", "ca.pem", "server"]).contains("does not apply"));
        assert!(refused(&["curator", "--auth-user", "u", "server"]).contains("does not apply"));
    }

    #[cfg(not(feature = "server"))]
    #[test]
    fn without_the_server_feature_there_is_no_server_nor_demo() {
        for name in ["server", "demo"] {
            let error = Cli::try_parse_from(["curator", name]).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::InvalidSubcommand);
        }
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

    #[test]
    fn ids_are_not_empty() {
        assert_eq!(parse_id("job"), Ok("job".to_owned()));
        assert!(parse_id(" ").is_err());
    }
}
