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
}

impl CliError {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: Some(message.into()),
        }
    }

    /// Exit with [`codes::OUTPUT_CLOSED`] and no message: the reader of our output went away.
    pub(crate) fn output_closed() -> Self {
        Self {
            code: codes::OUTPUT_CLOSED,
            message: None,
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
            other => other.to_string(),
        };
        Self::new(code, format!("{what}: {detail}"))
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
            let rendered = error.render().to_string();
            let message = format!("{} (see `curator --help`)", first_line(&rendered));
            ExitCode::from(report(&CliError::usage(message), json))
        }
    }
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
