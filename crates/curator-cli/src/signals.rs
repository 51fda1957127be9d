//! SIGINT, SIGTERM and SIGHUP as one stream, for the commands that must clean up on them.

use nix::sys::signal::Signal;
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

use crate::exit::{CliError, CliResult, codes};
use crate::report::Reporter;

/// Once created, these signals no longer kill the process: the command handles them.
#[derive(Debug)]
pub(crate) struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn install() -> CliResult<Self> {
        let install = |kind| {
            signal(kind).map_err(|error| {
                CliError::new(
                    codes::OTHER,
                    format!("installing a signal handler: {error}"),
                )
            })
        };
        Ok(Self {
            interrupt: install(SignalKind::interrupt())?,
            terminate: install(SignalKind::terminate())?,
            hangup: install(SignalKind::hangup())?,
        })
    }

    /// The next signal received.
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::SIGINT,
            _ = self.terminate.recv() => Signal::SIGTERM,
            _ = self.hangup.recv() => Signal::SIGHUP,
        }
    }

    /// `work`'s output, unless a signal comes first: then `Err` with the exit code for it (see
    /// [`exit_code`]), once it is reported as `interrupted` ("SIGINT while {doing}"). `work` is
    /// dropped then.
    pub(crate) async fn unless_interrupted<T>(
        &mut self,
        report: Reporter,
        doing: &str,
        work: impl Future<Output = T>,
    ) -> Result<T, u8> {
        tokio::select! {
            done = work => Ok(done),
            signal = self.recv() => {
                let _ = report.status(
                    "interrupted",
                    json!({ "signal": signal.as_str() }),
                    format!("{signal} while {doing}"),
                );
                Err(exit_code(signal))
            }
        }
    }
}

/// The exit code for "interrupted by `signal`": 128 + its number.
pub(crate) fn exit_code(signal: Signal) -> u8 {
    codes::SIGNAL_BASE.saturating_add(signal as i32 as u8)
}
