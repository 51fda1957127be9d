//! Every write to standard output and standard error goes through here.
//!
//! Rust ignores SIGPIPE, so writing to a pipe whose reader is gone fails with `EPIPE`, and
//! `println!` panics on that. These functions return the failure instead and remember that the
//! stream is gone, so a command can stop what it does: a read command exits quietly with 141
//! (128 + SIGPIPE, what a shell reports for a process killed by SIGPIPE), and `lock`, `leader`
//! and `barrier` stop CMD, release, and exit (they wait on [`gone`]).
//!
//! A wrapper whose CMD runs silently writes nothing for a long time; [`watch_pipes`] notices a
//! closed pipe without writing: on Linux the write end of a pipe polls `POLLERR` once its last
//! reader is gone, and a socket does when its peer has gone away.

use std::fmt::Display;
use std::io::{self, IsTerminal, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tokio::sync::Notify;

/// Standard output or standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// "standard output" or "standard error".
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "standard output",
            Stream::Stderr => "standard error",
        }
    }

    fn flag(self) -> &'static AtomicBool {
        match self {
            Stream::Stdout => &STDOUT_GONE,
            Stream::Stderr => &STDERR_GONE,
        }
    }
}

/// A write that failed; the stream counts as gone from then on.
#[derive(Debug)]
pub(crate) struct WriteError {
    pub(crate) stream: Stream,
    pub(crate) error: io::Error,
}

impl WriteError {
    /// Whether the stream's reader went away (a closed pipe or socket), as opposed to another
    /// failure such as a full disk.
    pub(crate) fn is_closed(&self) -> bool {
        self.error.kind() == io::ErrorKind::BrokenPipe
    }
}

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);
static WENT: Notify = Notify::const_new();
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Writes `line` and a newline to standard output.
///
/// # Errors
/// The failed write (the stream is marked gone).
pub(crate) fn out(line: impl Display) -> Result<(), WriteError> {
    write(Stream::Stdout, format!("{line}\n").as_bytes())
}

/// Writes `line` and a newline to standard error.
///
/// # Errors
/// The failed write (the stream is marked gone).
pub(crate) fn err(line: impl Display) -> Result<(), WriteError> {
    write(Stream::Stderr, format!("{line}\n").as_bytes())
}

/// Writes `text` as it is (no newline) to standard error, for the spinner's redraws.
///
/// # Errors
/// The failed write (the stream is marked gone).
pub(crate) fn err_raw(text: &str) -> Result<(), WriteError> {
    write(Stream::Stderr, text.as_bytes())
}

fn write(stream: Stream, bytes: &[u8]) -> Result<(), WriteError> {
    let result = match stream {
        Stream::Stdout => {
            let mut handle = io::stdout().lock();
            handle.write_all(bytes).and_then(|()| handle.flush())
        }
        Stream::Stderr => {
            let mut handle = io::stderr().lock();
            handle.write_all(bytes).and_then(|()| handle.flush())
        }
    };
    result.map_err(|error| {
        mark_gone(stream);
        WriteError { stream, error }
    })
}

fn mark_gone(stream: Stream) {
    stream.flag().store(true, Ordering::SeqCst);
    WENT.notify_waiters();
}

/// Whether `stream` failed a write or was seen closed by [`watch_pipes`].
pub(crate) fn is_gone(stream: Stream) -> bool {
    stream.flag().load(Ordering::SeqCst)
}

/// Resolves when standard output or standard error is gone (at once if one already is), with the
/// first of them.
///
/// # Cancellation safety
/// Safe.
pub(crate) async fn gone() -> Stream {
    loop {
        let went = WENT.notified();
        tokio::pin!(went);
        // Registered before the flags are read, so no notification falls in between.
        went.as_mut().enable();
        for stream in [Stream::Stderr, Stream::Stdout] {
            if is_gone(stream) {
                return stream;
            }
        }
        went.await;
    }
}

/// From now on, notices when the reader of standard output or standard error goes away, even if
/// nothing is written: only for pipes and sockets (a terminal or a file has no reader to lose).
/// Idempotent.
pub(crate) fn watch_pipes() {
    if WATCHING.swap(true, Ordering::SeqCst) {
        return;
    }
    for stream in [Stream::Stdout, Stream::Stderr] {
        let fd = match stream {
            Stream::Stdout => io::stdout().as_fd().try_clone_to_owned(),
            Stream::Stderr => io::stderr().as_fd().try_clone_to_owned(),
        };
        let Ok(fd) = fd else { continue };
        if !can_lose_reader(&fd) {
            continue;
        }
        // A plain thread blocked in poll(2): it costs nothing while it waits and does not hold
        // up the runtime's shutdown. (Tokio's `AsyncFd` could wait instead, but registering a
        // descriptor with it now takes `unsafe`, which the workspace forbids.)
        let spawned = std::thread::Builder::new()
            .name(format!("curator-watch-{}", stream.name()))
            .spawn(move || {
                if reader_gone(&fd) {
                    mark_gone(stream);
                }
            });
        // Without the thread a closed pipe is still noticed at the next write.
        drop(spawned);
    }
}

/// Whether `fd` is a pipe or a socket (a terminal or a file has no reader to lose).
fn can_lose_reader(fd: &OwnedFd) -> bool {
    if fd.as_fd().is_terminal() {
        return false;
    }
    match fd.try_clone().map(std::fs::File::from) {
        Ok(file) => file
            .metadata()
            .map(|meta| meta.file_type().is_fifo() || meta.file_type().is_socket())
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Blocks until `fd`, the writing end of a pipe or a socket, reports an error or a hang-up:
/// a pipe's write end polls `POLLERR` once its last reader has closed (and nothing before, as it
/// is never readable); a socket polls `POLLHUP` or `POLLERR` once its peer is gone. `false` if
/// poll(2) itself fails.
fn reader_gone(fd: &OwnedFd) -> bool {
    loop {
        // No events asked for: poll(2) reports POLLERR and POLLHUP regardless.
        let mut fds = [PollFd::new(fd.as_fd(), PollFlags::empty())];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {
                let revents = fds[0].revents().unwrap_or(PollFlags::empty());
                if revents.intersects(PollFlags::POLLERR | PollFlags::POLLHUP) {
                    return true;
                }
                if revents.contains(PollFlags::POLLNVAL) {
                    return false;
                }
            }
            Err(Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}
