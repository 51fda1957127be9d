//! A one-line spinner on stderr while waiting, only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::output;

const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Spins until dropped, then clears its line.
#[derive(Debug)]
pub(crate) struct Spinner {
    task: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts spinning with `message`, unless `quiet` or stderr is not a terminal.
    pub(crate) fn start(message: impl Into<String>, quiet: bool) -> Self {
        if quiet || !std::io::stderr().is_terminal() {
            return Self { task: None };
        }
        let message = message.into();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut ticker = tokio::time::interval(Duration::from_millis(100));
            for frame in FRAMES.iter().cycle() {
                ticker.tick().await;
                // A failed redraw marks stderr gone; the command notices that itself.
                let _ = output::err_raw(&format!(
                    "\r\x1b[2K{frame} {message} ({}s)",
                    started.elapsed().as_secs()
                ));
            }
        });
        Self { task: Some(task) }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = output::err_raw("\r\x1b[2K");
        }
    }
}
