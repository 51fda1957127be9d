#![doc = include_str!("../README.md")]

mod args;
mod child;
mod cmd;
mod connect;
mod duration;
mod encoding;
mod exit;
mod nodes;
mod output;
mod report;
mod signals;
mod spinner;
mod srvr;
mod supervise;
mod ui;

pub use duration::parse_duration;
pub use exit::codes;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// MIT Kerberos reads its settings (`KRB5_CONFIG`, `KRB5_CLIENT_KTNAME`, `KRB5CCNAME`) from the
/// process's environment, and a running process cannot safely change its own environment. So
/// when the `--kerberos-*` options ask for values the environment does not hold, the process
/// runs itself again (same arguments) with them; this returns only when nothing is to change,
/// or with the error of that `exec`.
fn with_kerberos_environment(
    wanted: &[(&'static str, std::ffi::OsString)],
) -> Option<exit::CliError> {
    use std::os::unix::process::CommandExt;
    let missing: Vec<_> = wanted
        .iter()
        .filter(|(name, value)| std::env::var_os(name).as_ref() != Some(value))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => {
            return Some(exit::CliError::new(
                codes::OTHER,
                format!("cannot find this program to set the Kerberos environment: {error}"),
            ));
        }
    };
    let mut again = std::process::Command::new(program);
    again.args(std::env::args_os().skip(1));
    for (name, value) in missing {
        again.env(name, value);
    }
    let error = again.exec();
    Some(exit::CliError::new(
        codes::OTHER,
        format!("cannot run again with the Kerberos environment: {error}"),
    ))
}

/// Runs the `curator` command with the process's arguments and returns its exit code.
///
/// Errors are printed as one line on standard error; the code tells them apart (see
/// [`codes`]).
pub fn main() -> ExitCode {
    // A bug must still read as one line, not a backtrace; and the hook itself must not panic
    // when standard error is gone (`eprintln!` would, and a panic in the hook aborts).
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stderr(), "curator: internal error: {info}");
    }));
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return exit::usage_error(&error, exit::json_in_args()),
    };
    if let cmd::Command::Sentinel(sentinel) = cli.command {
        // A small helper process: no runtime, no connection.
        return sentinel.exec();
    }
    let json = cli.json();
    let (command, settings) = match cli.resolve() {
        Ok(resolved) => resolved,
        Err(error) => return ExitCode::from(exit::report(&error, json)),
    };
    if let Some(error) = with_kerberos_environment(&settings.security.kerberos_environment) {
        return ExitCode::from(exit::report(&error, json));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let error = exit::CliError::new(
                codes::OTHER,
                format!("cannot start the async runtime: {error}"),
            );
            return ExitCode::from(exit::report(&error, json));
        }
    };
    let code = match runtime.block_on(cmd::run(command, settings)) {
        Ok(code) => code,
        Err(error) => exit::report(&error, json),
    };
    // Background work (a release retried after a lost connection, say) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}
