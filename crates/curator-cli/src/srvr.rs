//! What a ZooKeeper server says of itself to the `srvr` four-letter word.
//!
//! `curator_test::four_letter_word` does the same exchange, but it is written for tests: its
//! errors are the test harness's (phrased for a test log, with the refused connection and the
//! timeout folded into `Io`), and it reads whatever comes for as long as it comes. An operator's
//! command needs to tell "refused", "no answer in time", "not serving" and "`srvr` not
//! whitelisted" apart, and to bound what it reads from an address taken from the ensemble's
//! configuration; the exchange is a dozen lines, so it lives here.
//!
//! Only `srvr` is sent: it is the one word in ZooKeeper's default `4lw.commands.whitelist`.

use std::io::ErrorKind;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::duration::human;

/// At most this much of an answer is read (a `srvr` answer is a few hundred bytes).
const MAX_ANSWER: u64 = 64 * 1024;

/// What a member said, or why it said nothing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Probe {
    /// It serves clients.
    Serving(Srvr),
    /// It answered, but does not serve requests (a member without a quorum, say).
    NotServing(String),
    /// It answered something that tells nothing of its state (`srvr` left out of its
    /// whitelist, an answer without a mode).
    Unknown(String),
    /// No answer: refused, no such host, or none in time.
    Unreachable(String),
    /// Its configuration names no client address to ask.
    NoClientAddress,
}

/// The parts of a `srvr` answer worth showing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Srvr {
    /// `leader`, `follower`, `observer`, `standalone` or `read-only`.
    pub(crate) mode: String,
    /// The last zxid it has seen, as it writes it (`0x100000003`).
    pub(crate) zxid: Option<String>,
    /// How many clients are connected to it.
    pub(crate) connections: Option<u64>,
    /// The average request latency, in milliseconds.
    pub(crate) latency_avg_ms: Option<f64>,
    /// Its ZooKeeper version (without the build's date).
    pub(crate) version: Option<String>,
}

impl Probe {
    /// `serving`, `not_serving`, `unknown`, `unreachable` or `no_client_address`.
    pub(crate) fn status(&self) -> &'static str {
        match self {
            Probe::Serving(_) => "serving",
            Probe::NotServing(_) => "not_serving",
            Probe::Unknown(_) => "unknown",
            Probe::Unreachable(_) => "unreachable",
            Probe::NoClientAddress => "no_client_address",
        }
    }

    /// `{"status": ..., ...}`: the fields of a serving member, or the reason.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Probe::Serving(srvr) => json!({
                "status": self.status(),
                "mode": srvr.mode,
                "zxid": srvr.zxid,
                "connections": srvr.connections,
                "latency_avg_ms": srvr.latency_avg_ms,
                "server_version": srvr.version,
            }),
            Probe::NotServing(reason) | Probe::Unknown(reason) | Probe::Unreachable(reason) => {
                json!({ "status": self.status(), "reason": reason })
            }
            Probe::NoClientAddress => json!({
                "status": self.status(),
                "reason": "its configuration names no client port",
            }),
        }
    }
}

/// Sends `srvr` to `address` (`host:port`) and reads the answer, all within `timeout`.
pub(crate) async fn probe(address: &str, timeout: Duration) -> Probe {
    let exchange = async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(b"srvr").await?;
        let mut answer = Vec::new();
        stream.take(MAX_ANSWER).read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Probe::Unreachable(format!("no answer within {}", human(timeout))),
        Ok(Err(error)) => Probe::Unreachable(match error.kind() {
            ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            ErrorKind::ConnectionReset => "connection reset".to_owned(),
            _ => error.to_string(),
        }),
        Ok(Ok(answer)) => parse(&String::from_utf8_lossy(&answer)),
    }
}

/// Reads a `srvr` answer.
fn parse(answer: &str) -> Probe {
    let field = |name: &str| {
        answer
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    let Some(mode) = field("Mode:") else {
        let first = answer.lines().map(str::trim).find(|line| !line.is_empty());
        return match first {
            None => Probe::Unknown("an empty answer to srvr".to_owned()),
            Some(line) if line.contains("not currently serving") => {
                Probe::NotServing("not currently serving requests".to_owned())
            }
            Some(line) if line.contains("whitelist") => {
                Probe::Unknown("srvr is not in its 4lw.commands.whitelist".to_owned())
            }
            Some(line) => Probe::Unknown(format!("an unexpected answer to srvr: {line}")),
        };
    };
    Probe::Serving(Srvr {
        mode: mode.to_owned(),
        zxid: field("Zxid:").map(str::to_owned),
        connections: field("Connections:").and_then(|n| n.parse().ok()),
        latency_avg_ms: field("Latency min/avg/max:")
            .and_then(|values| values.split('/').nth(1))
            .and_then(|avg| avg.trim().parse().ok()),
        version: field("Zookeeper version:").map(|version| {
            version
                .split_once(", built on")
                .map_or(version, |(version, _)| version)
                .to_owned()
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srvr_answers_are_read() {
        let answer = "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on 2022-02-25 08:49 UTC\n\
                      Latency min/avg/max: 0/0.4643/5\n\
                      Received: 29\n\
                      Sent: 28\n\
                      Connections: 2\n\
                      Outstanding: 0\n\
                      Zxid: 0x100000003\n\
                      Mode: leader\n\
                      Node count: 5\n\
                      Proposal sizes last/min/max: 48/48/48\n";
        assert_eq!(
            parse(answer),
            Probe::Serving(Srvr {
                mode: "leader".into(),
                zxid: Some("0x100000003".into()),
                connections: Some(2),
                latency_avg_ms: Some(0.4643),
                version: Some("3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f".into()),
            })
        );
        // ZooKeeper 3.5 writes whole milliseconds.
        let Probe::Serving(old) = parse("Latency min/avg/max: 0/3/9\nMode: follower\n") else {
            panic!("not serving");
        };
        assert_eq!((old.latency_avg_ms, old.zxid), (Some(3.0), None));
        assert_eq!(
            parse("This ZooKeeper instance is not currently serving requests\n"),
            Probe::NotServing("not currently serving requests".into())
        );
        assert_eq!(
            parse("srvr is not executed because it is not in the whitelist.\n"),
            Probe::Unknown("srvr is not in its 4lw.commands.whitelist".into())
        );
        assert_eq!(parse("").status(), "unknown");
        assert_eq!(parse("HTTP/1.1 400 Bad Request\r\n").status(), "unknown");
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_a_silent_one_times_out() {
        // A port nobody listens on: bind one, then let it go.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = free.local_addr().unwrap().to_string();
        drop(free);
        assert_eq!(
            probe(&closed, Duration::from_secs(5)).await,
            Probe::Unreachable("connection refused".into())
        );
        // A listener that accepts (the backlog does) and never answers.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = silent.local_addr().unwrap().to_string();
        assert_eq!(
            probe(&address, Duration::from_millis(200)).await,
            Probe::Unreachable("no answer within 200ms".into())
        );
    }
}
