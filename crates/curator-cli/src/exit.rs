//! Exit codes and the one-line error that carries one.

use std::process::ExitCode;

use curator_framework::Error;

use crate::output::{self, WriteError};
use crate::report::Reporter;

/// The exit codes of `curator` (also listed in `curator --help`).
///
/// `lock`, `leader` and `barrier` pass their CMD's own exit code through instead (128 + the
/// signal number when CMD died of a signal), except when the lock or leadership is lost.
pub mod codes {
    /// Success.
    pub const OK: u8 = 0;
    /// Any other failure (a missing node, a bad version, a server error, ...).
    pub const OTHER: u8 = 1;
    /// Bad arguments.
    pub const USAGE: u8 = 2;
    /// No connection to ZooKeeper (within `--connection-timeout`), or the connection failed.
    pub const CONNECTION: u8 = 3;
    /// `--timeout` passed before the lock, barrier or leadership was had.
    pub const TIMEOUT: u8 = 4;
    /// The lock was lost while CMD ran (`curator lock`), or the lease's interval ended while
    /// CMD ran (`curator lease`); CMD was stopped.
    pub const LOST: u8 = 5;
    /// `curator fence`: the gate refused the token (it admitted a newer one, which is printed).
    pub const REFUSED: u8 = 6;
    /// `curator lease`: someone else holds the lease; CMD was not run.
    pub const NOT_WON: u8 = 7;
    /// CMD could not be run (not executable).
    pub const CANNOT_EXECUTE: u8 = 126;
    /// CMD was not found.
    pub const NOT_FOUND: u8 = 127;
    /// Interrupted by a signal before CMD ran: 128 + the signal number (130 for SIGINT, 143 for
    /// SIGTERM).
    pub const SIGNAL_BASE: u8 = 128;
    /// Standard output or standard error was closed by its reader (128 + SIGPIPE, as a shell
    /// reports a process killed by SIGPIPE): a read command stops quietly; `lock`, `leader` and
    /// `barrier` stop CMD, release, and exit with it.
    pub const OUTPUT_CLOSED: u8 = 141;
}

/// A failure to report: one line of text and an exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) code: u8,
    /// `None`: exit with `code` without a word (the output is gone).
    pub(crate) message: Option<String>,
    /// A node's ACL refused the session: the message is to say who the session is (the
    /// command's runner asks the server, see `cmd::run`).
    pub(crate) not_authorized: bool,
}

impl CliError {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: Some(message.into()),
            not_authorized: false,
        }
    }

    /// Exit with [`codes::OUTPUT_CLOSED`] and no message: the reader of our output went away.
    pub(crate) fn output_closed() -> Self {
        Self {
            code: codes::OUTPUT_CLOSED,
            message: None,
            not_authorized: false,
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(codes::USAGE, message)
    }

    pub(crate) fn timeout(message: impl Into<String>) -> Self {
        Self::new(codes::TIMEOUT, message)
    }

    /// A framework error met while doing `what` (for example "reading /a").
    pub(crate) fn zk(what: &str, error: Error) -> Self {
        let code = match &error {
            Error::ConnectionLoss
            | Error::SessionExpired
            | Error::SessionMoved
            | Error::OperationTimeout
            | Error::Closed
            | Error::NotConnected { .. }
            | Error::Tls(_)
            | Error::SaslLogin { .. }
            | Error::IdentityNotGranted { .. }
            | Error::AuthFailed => codes::CONNECTION,
            Error::InvalidPath { .. } | Error::InvalidArgument(_) => codes::USAGE,
            _ => codes::OTHER,
        };
        let detail = match &error {
            Error::NoNode => "no such node".to_owned(),
            // A server that requires a login accepts the connection and refuses the first
            // request of a client without one (or with one it does not accept).
            Error::AuthFailed => "the server refused this client: it requires a login \
                                  (--sasl-user and --sasl-password-file, or --kerberos), or \
                                  refused the one given"
                .to_owned(),
            other => other.to_string(),
        };
        Self {
            not_authorized: error == Error::NoAuth,
            ..Self::new(code, format!("{what}: {detail}"))
        }
    }
}

impl From<WriteError> for CliError {
    /// A closed stream ends the command quietly; any other failed write is reported (on standard
    /// error, if that still works).
    fn from(error: WriteError) -> Self {
        if error.is_closed() {
            Self::output_closed()
        } else {
            Self::new(
                codes::OTHER,
                format!("writing to {}: {}", error.stream.name(), error.error),
            )
        }
    }
}

pub(crate) type CliResult<T = u8> = Result<T, CliError>;

/// Reports `error` on stderr, as one line (`curator: <message>`) or, with `json`, as one JSON
/// object (`{"event":"error","code":N,"message":"..."}`); returns its exit code. Says nothing for
/// an error without a message (the output is gone).
pub(crate) fn report(error: &CliError, json: bool) -> u8 {
    if let Some(message) = &error.message {
        // Nowhere to say it if standard error is gone.
        let _ = if json {
            output::err(Reporter::object(
                "error",
                serde_json::json!({ "code": error.code, "message": message }),
            ))
        } else {
            output::err(format_args!("curator: {message}"))
        };
    }
    error.code
}

/// Whether `--json` is among the arguments (before a `--`), for errors met before they parse.
pub(crate) fn json_in_args() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}

/// Whether an option `--long` of `command` or of one of its subcommands takes a value.
fn takes_value(command: &clap::Command, long: &str) -> bool {
    command
        .get_arguments()
        .any(|arg| arg.get_long() == Some(long) && arg.get_action().takes_values())
        || command
            .get_subcommands()
            .any(|subcommand| takes_value(subcommand, long))
}

/// Reports a clap error in one line (help and version go to stdout with code 0).
pub(crate) fn usage_error(error: &clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // clap writes help itself (with colours on a terminal); it returns errors, never
            // panics.
            if let Err(failed) = error.print() {
                if failed.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::from(codes::OUTPUT_CLOSED);
                }
            }
            let code = if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                codes::USAGE
            } else {
                codes::OK
            };
            ExitCode::from(code)
        }
        _ => {
            let args: Vec<String> = std::env::args_os()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            let rendered = error.render().to_string();
            let gist = hyphen_value(error, &args).unwrap_or_else(|| first_line(&rendered));
            let message = format!("{gist} (see `curator --help`)");
            ExitCode::from(report(&CliError::usage(message), json))
        }
    }
}

/// What to say instead of clap for an argument that starts with '-' and is taken for an unknown
/// option, where clap's tip (`to pass '-5' as a value, use '-- -5'`) is wrong:
/// - after an option that takes a value (`--grace -5`): `-- -5` would not give it to the option.
///   With `=` it would (`--grace=-5`): when the option refuses that value, its reason is the
///   message; when it takes it, the tip says to write it so.
/// - in a command whose `--` starts CMD (`lock /l -5 -- job`, `lock /l --timout 5s -- job`):
///   `-- -5` would make `-5` the command to run. clap's other tips (a similar option's name)
///   stay; without one, the message says that what follows `--` is CMD.
/// - where `-- -5` is refused too (`ui /a --port 8080`: every positional is given): the usage
///   line instead.
///
/// `None` where clap's tip is right (a positional value of a command without CMD, `set /x -1`),
/// or for other errors. `args` are the process's arguments, the program first.
fn hyphen_value(error: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(found)) = error.get(ContextKind::InvalidArg) else {
        return None;
    };
    if !found.starts_with('-') {
        return None;
    }
    // Before any `--` (what follows it is CMD); clap names `-5` of `-5s`.
    let end = args
        .iter()
        .position(|arg| arg == "--")
        .unwrap_or(args.len());
    let index = (1..end).find(|&i| args[i].starts_with(found.as_str()))?;
    let value = &args[index];
    let option = &args[index - 1];
    let takes_value = !found.starts_with("--")
        && option
            .strip_prefix("--")
            .filter(|long| !long.is_empty() && !long.contains('='))
            .is_some_and(|long| {
                takes_value(&<crate::args::Cli as clap::CommandFactory>::command(), long)
            });
    if takes_value {
        let mut joined = args.to_vec();
        joined.splice(index - 1..=index, [format!("{option}={value}")]);
        return Some(
            match <crate::args::Cli as clap::Parser>::try_parse_from(&joined) {
                Err(refused)
                    if matches!(
                        refused.kind(),
                        ErrorKind::ValueValidation | ErrorKind::InvalidValue
                    ) =>
                {
                    first_line(&refused.render().to_string())
                }
                _ => format!(
                    "unexpected argument '{value}' found (tip: a value that starts with '-' goes \
                 after '=': {option}={value})"
                ),
            },
        );
    }
    let rendered = error.render().to_string();
    let usage = rendered
        .lines()
        .find_map(|line| line.trim().strip_prefix("Usage: "))?;
    let gist = first_line(&rendered);
    let dash_tip = format!(" (tip: to pass '{found}' as a value, use '-- {found}')");
    if usage.contains("-- <CMD>") {
        let gist = gist.replace(&dash_tip, "");
        if gist.contains("(tip: ") {
            return Some(gist);
        }
        return Some(format!(
            "unexpected argument '{value}' found (tip: no option is named '{value}', and what \
             comes after `--` is CMD, the command to run: {usage})"
        ));
    }
    if !gist.contains(&dash_tip) {
        return None;
    }
    // The tip applied: right when it parses (`set /x -- -1` sets "-1").
    let mut tipped = args[..end].to_vec();
    tipped.insert(index, "--".to_owned());
    tipped.extend_from_slice(&args[end..]);
    if <crate::args::Cli as clap::Parser>::try_parse_from(&tipped).is_ok() {
        return None;
    }
    let gist = gist.replace(&dash_tip, "");
    if gist.contains("(tip: ") {
        return Some(gist);
    }
    Some(format!(
        "{gist} (tip: no option is named '{found}': {usage})"
    ))
}

/// The gist of a clap message in one line: its first line, with the list that a trailing colon
/// announces folded in, and clap's tips (`tip: to pass 'echo' as a value, use '-- echo'`) kept.
fn first_line(rendered: &str) -> String {
    let mut lines = rendered
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .take_while(|line| {
            !line.starts_with("Usage:") && !line.starts_with("For more information")
        });
    let first = lines
        .next()
        .unwrap_or("bad arguments")
        .trim_start_matches("error: ");
    let (items, tips): (Vec<&str>, Vec<&str>) = lines.partition(|line| !line.starts_with("tip:"));
    let mut message = match first.strip_suffix(':') {
        Some(head) if !items.is_empty() => format!("{head}: {}", items.join(", ")),
        _ => first.to_owned(),
    };
    for tip in &tips {
        message.push_str(&format!(" ({tip})"));
    }
    // clap has a tip for `lock /l -x` but not for `lock /l echo hi`: CMD goes after `--`.
    let usage = rendered
        .lines()
        .find_map(|line| line.trim().strip_prefix("Usage: "));
    if let Some(usage) = usage {
        if tips.is_empty() && first.starts_with("unexpected argument") && usage.contains(" -- ") {
            message.push_str(&format!(
                " (tip: CMD and its arguments go after `--`: {usage})"
            ));
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `curator ARGS...` says instead of clap, if anything.
    fn said(args: &[&str]) -> Option<String> {
        let args: Vec<String> = std::iter::once("curator")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect();
        let error = <crate::args::Cli as clap::Parser>::try_parse_from(&args).unwrap_err();
        hyphen_value(&error, &args)
    }

    #[test]
    fn hyphen_values_get_a_true_word() {
        // An option's value it refuses: the option's reason.
        let grace = said(&["lock", "/l", "--grace", "-5", "--", "true"]).unwrap();
        assert!(
            grace.starts_with("invalid value '-5' for '--grace <D>'"),
            "{grace}"
        );
        let members = said(&["barrier", "/b", "--members", "-1"]).unwrap();
        assert!(members.contains("-1 is not in 1.."), "{members}");
        // An option's value it takes: written with '='.
        let id = said(&["leader", "/e", "--id", "-x", "--", "true"]).unwrap();
        assert!(id.ends_with("goes after '=': --id=-x)"), "{id}");
        // Where `--` starts CMD, `-- -5` would run -5.
        let cmd = said(&["lock", "/l", "-5", "--", "true"]).unwrap();
        assert!(cmd.contains("what comes after `--` is CMD"), "{cmd}");
        assert!(!cmd.contains("'-- -5'"), "{cmd}");
        // A flag takes no value: not the '=' tip.
        let flag = said(&["lock", "/l", "--json", "-5", "--", "true"]).unwrap();
        assert!(flag.contains("is CMD"), "{flag}");
        // An unknown long option where `--` starts CMD: clap's similar name, not `-- --timout`.
        let similar = said(&["lock", "/l", "--timout", "5s", "--", "true"]).unwrap();
        assert!(
            similar.contains("similar argument exists: '--timeout'"),
            "{similar}"
        );
        assert!(!similar.contains("'-- --timout'"), "{similar}");
        // Where `-- --port` would be refused too (every positional is given): the usage.
        let port = said(&["ui", "/a", "--port", "1"]).unwrap();
        assert!(
            port.contains("no option is named '--port': curator ui"),
            "{port}"
        );
        assert!(!port.contains("'-- --port'"), "{port}");
        // Where clap's tip is right (a positional of a command without CMD), it stays.
        assert_eq!(said(&["set", "/x", "-1"]), None);
        assert_eq!(said(&["set", "/x", "--y"]), None);
        assert_eq!(said(&["bogus"]), None);
    }

    #[test]
    fn clap_messages_fold_into_one_line() {
        let rendered = "error: the following required arguments were not provided:\n  <CMD>...\n\nUsage: curator lock <PATH> -- <CMD>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            first_line(rendered),
            "the following required arguments were not provided: <CMD>..."
        );
        assert_eq!(
            first_line("error: unexpected argument 'x' found\n\nUsage: curator"),
            "unexpected argument 'x' found"
        );
        let rendered = "error: unexpected argument 'echo' found\n\n  tip: to pass 'echo' as a value, use '-- echo'\n\nUsage: curator lock <PATH> -- <CMD>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            first_line(rendered),
            "unexpected argument 'echo' found (tip: to pass 'echo' as a value, use '-- echo')"
        );
        let rendered = "error: unexpected argument 'echo' found\n\nUsage: curator lock [OPTIONS] <PATH> -- <CMD>...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            first_line(rendered),
            "unexpected argument 'echo' found (tip: CMD and its arguments go after `--`: curator lock [OPTIONS] <PATH> -- <CMD>...)"
        );
    }
}
