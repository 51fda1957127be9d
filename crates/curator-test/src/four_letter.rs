//! ZooKeeper's four-letter-word admin commands (`ruok`, `srvr`, `stat`, `mntr`, ...).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// Sends a four-letter word to `address` (`host:port`) and returns the server's whole answer.
///
/// The servers started by this crate whitelist every word.
///
/// # Errors
/// [`Error::Io`] when the server cannot be reached, [`Error::Timeout`] when it does not answer
/// within `timeout`.
///
/// # Example
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// let server = curator_test::TestingServer::start().await?;
/// let answer = curator_test::four_letter_word(&server.connect_string(), "ruok",
///     std::time::Duration::from_secs(5)).await?;
/// assert_eq!(answer, "imok");
/// # Ok(()) }
/// ```
pub async fn four_letter_word(address: &str, word: &str, timeout: Duration) -> Result<String> {
    let address = address.split(',').next().unwrap_or(address).to_owned();
    let exchange = async {
        let mut stream = TcpStream::connect(&address)
            .await
            .map_err(Error::io(format!("connecting to {address}")))?;
        stream
            .write_all(word.as_bytes())
            .await
            .map_err(Error::io(format!("sending `{word}` to {address}")))?;
        let mut answer = Vec::new();
        stream
            .read_to_end(&mut answer)
            .await
            .map_err(Error::io(format!("reading `{word}` from {address}")))?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| Error::Timeout(timeout, format!("`{word}` from {address}")))?
}

/// The role a server reports in its `srvr` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerMode {
    /// A single server, not part of an ensemble.
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A voting follower.
    Follower,
    /// A non-voting observer.
    Observer,
    /// A server in read-only mode (partitioned from its quorum).
    ReadOnly,
}

/// Asks `address` for its mode with `srvr`; `None` when it answers but does not serve requests
/// (an ensemble member without a quorum), or does not answer at all.
pub(crate) async fn server_mode(address: &str, timeout: Duration) -> Option<ServerMode> {
    let answer = four_letter_word(address, "srvr", timeout).await.ok()?;
    let mode = answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))?;
    match mode.trim() {
        "standalone" => Some(ServerMode::Standalone),
        "leader" => Some(ServerMode::Leader),
        "follower" => Some(ServerMode::Follower),
        "observer" => Some(ServerMode::Observer),
        "read-only" => Some(ServerMode::ReadOnly),
        _ => None,
    }
}
