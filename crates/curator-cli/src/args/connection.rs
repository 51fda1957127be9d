//! The connection flags: declared once as clap arguments ([`Connection`]), and listed once with
//! their environment variables ([`FLAGS`]) for everything done to all of them alike.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::duration::parse_duration;
use crate::exit::CliError;

use super::parse_connect;

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

/// One connection flag: its name, the environment variable read when it is not given, and
/// where its value lives.
pub(crate) struct Flag {
    pub(crate) name: &'static str,
    /// `None`: no variable (`--connect`'s `$ZK_CONNECT` is a connect string, checked and
    /// reported as such by `Cli::resolve`).
    variable: Option<&'static str>,
    field: Field,
}

/// A field of [`Connection`], read and written by the same name.
#[derive(Clone, Copy)]
enum Field {
    Text(
        fn(&Connection) -> &Option<String>,
        fn(&mut Connection) -> &mut Option<String>,
    ),
    File(
        fn(&Connection) -> &Option<PathBuf>,
        fn(&mut Connection) -> &mut Option<PathBuf>,
    ),
    Duration(
        fn(&Connection) -> &Option<Duration>,
        fn(&mut Connection) -> &mut Option<Duration>,
    ),
    /// A flag without a value; its variable turns it on with `1` or `true`.
    Switch(fn(&Connection) -> &bool, fn(&mut Connection) -> &mut bool),
}

/// `field!(Kind, name)`: the field `name` of [`Connection`] as a `Field::Kind`.
macro_rules! field {
    ($kind:ident, $name:ident) => {
        Field::$kind(|c| &c.$name, |c| &mut c.$name)
    };
}

/// Every flag of [`Connection`], in its order.
pub(crate) const FLAGS: [Flag; 17] = [
    flag("--connect", None, field!(Text, connect)),
    flag("--session-timeout", None, field!(Duration, session_timeout)),
    flag(
        "--connection-timeout",
        None,
        field!(Duration, connection_timeout),
    ),
    flag("--namespace", None, field!(Text, namespace)),
    flag("--tls-ca", Some("ZK_TLS_CA"), field!(File, tls_ca)),
    flag("--tls-cert", Some("ZK_TLS_CERT"), field!(File, tls_cert)),
    flag("--tls-key", Some("ZK_TLS_KEY"), field!(File, tls_key)),
    flag("--sasl-user", Some("ZK_SASL_USER"), field!(Text, sasl_user)),
    flag(
        "--sasl-password-file",
        Some("ZK_SASL_PASSWORD_FILE"),
        field!(File, sasl_password_file),
    ),
    flag("--auth-user", Some("ZK_AUTH_USER"), field!(Text, auth_user)),
    flag(
        "--auth-password-file",
        Some("ZK_AUTH_PASSWORD_FILE"),
        field!(File, auth_password_file),
    ),
    flag("--kerberos", Some("ZK_KERBEROS"), field!(Switch, kerberos)),
    flag(
        "--kerberos-service",
        Some("ZK_KERBEROS_SERVICE"),
        field!(Text, kerberos_service),
    ),
    flag(
        "--kerberos-keytab",
        Some("ZK_KERBEROS_KEYTAB"),
        field!(File, kerberos_keytab),
    ),
    flag(
        "--kerberos-ccache",
        Some("ZK_KERBEROS_CCACHE"),
        field!(File, kerberos_ccache),
    ),
    flag(
        "--kerberos-config",
        Some("ZK_KERBEROS_CONFIG"),
        field!(File, kerberos_config),
    ),
    flag(
        "--kerberos-principal",
        Some("ZK_KERBEROS_PRINCIPAL"),
        field!(Text, kerberos_principal),
    ),
];

const fn flag(name: &'static str, variable: Option<&'static str>, field: Field) -> Flag {
    Flag {
        name,
        variable,
        field,
    }
}

impl Flag {
    /// Whether `connection` has this flag.
    pub(crate) fn is_set(&self, connection: &Connection) -> bool {
        match self.field {
            Field::Text(get, _) => get(connection).is_some(),
            Field::File(get, _) => get(connection).is_some(),
            Field::Duration(get, _) => get(connection).is_some(),
            Field::Switch(get, _) => *get(connection),
        }
    }

    /// Gives `own` the flag's value from `outer` when it has none itself.
    fn fill(&self, own: &mut Connection, outer: &mut Connection) {
        fn or<T>(own: &mut Option<T>, outer: &mut Option<T>) {
            if own.is_none() {
                *own = outer.take();
            }
        }
        match self.field {
            Field::Text(_, get) => or(get(own), get(outer)),
            Field::File(_, get) => or(get(own), get(outer)),
            Field::Duration(_, get) => or(get(own), get(outer)),
            Field::Switch(_, get) => *get(own) |= *get(outer),
        }
    }

    /// Sets the flag in `connection` (which does not have it) from its variable's `value`
    /// (not empty); whether the value set it.
    fn set_from(&self, connection: &mut Connection, value: OsString) -> bool {
        match self.field {
            Field::Text(_, get) => *get(connection) = Some(value.to_string_lossy().into_owned()),
            Field::File(_, get) => *get(connection) = Some(PathBuf::from(value)),
            // No duration has a variable.
            Field::Duration(..) => return false,
            Field::Switch(_, get) => {
                let on = matches!(value.to_str(), Some("1" | "true"));
                *get(connection) = on;
                return on;
            }
        }
        true
    }
}

impl Connection {
    /// The flags given, by their names (for a subcommand that takes none).
    pub(crate) fn given(&self) -> Vec<&'static str> {
        FLAGS
            .iter()
            .filter(|flag| flag.is_set(self))
            .map(|flag| flag.name)
            .collect()
    }

    /// Each flag from `self`, or else from `outer` (given before the subcommand).
    pub(crate) fn or(mut self, mut outer: Connection) -> Connection {
        for flag in &FLAGS {
            flag.fill(&mut self, &mut outer);
        }
        self.from_environment = FromEnvironment::default();
        self
    }

    /// Each flag not given, from its environment variable, if it has one that is set and not
    /// empty (read here rather than by clap, so a variable set for other commands never counts
    /// as a flag given to `server`). Which flags were taken from variables is kept in
    /// `from_environment`.
    pub(crate) fn or_environment(mut self) -> Connection {
        let mut taken = Vec::new();
        for flag in &FLAGS {
            let Some(variable) = flag.variable else {
                continue;
            };
            if flag.is_set(&self) {
                continue;
            }
            let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
                continue;
            };
            if flag.set_from(&mut self, value) {
                taken.push((flag.name, variable));
            }
        }
        self.from_environment = FromEnvironment(taken);
        self
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A parser of the connection flags alone.
    #[derive(Debug, clap::Parser)]
    struct Flags {
        #[command(flatten)]
        connection: Connection,
    }

    #[test]
    fn the_table_lists_every_flag_in_order() {
        let declared: Vec<String> = Flags::command()
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .filter(|long| *long != "help")
            .map(|long| format!("--{long}"))
            .collect();
        let listed: Vec<&str> = FLAGS.iter().map(|flag| flag.name).collect();
        assert_eq!(declared, listed);
        // Each flag's field is its own: a flag set from a variable shows as that flag alone.
        for flag in &FLAGS {
            let mut connection = Connection::default();
            if flag.set_from(&mut connection, "1".into()) {
                assert_eq!(connection.given(), [flag.name]);
            }
        }
    }

    #[test]
    fn given_flags_win_over_outer_ones_and_switches_add_up() {
        let own = Connection {
            connect: Some("a:1".into()),
            ..Connection::default()
        };
        let outer = Connection {
            connect: Some("b:1".into()),
            namespace: Some("ns".into()),
            kerberos: true,
            ..Connection::default()
        };
        let both = own.or(outer);
        assert_eq!(both.connect.as_deref(), Some("a:1"));
        assert_eq!(both.namespace.as_deref(), Some("ns"));
        assert!(both.kerberos);
        assert_eq!(both.given(), ["--connect", "--namespace", "--kerberos"]);
    }

    #[test]
    fn variables_are_named_whole() {
        let from = FromEnvironment(vec![("--kerberos", "ZK_KERBEROS")]);
        assert_eq!(
            from.name_variables("--kerberos-keytab needs --kerberos"),
            "--kerberos-keytab needs $ZK_KERBEROS"
        );
    }
}
