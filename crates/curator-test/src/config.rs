//! Writing ZooKeeper configuration files and waiting for a started server to serve.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::{ServerMode, server_mode};
use crate::java::JavaProcess;

/// Settings shared by standalone servers and ensemble members.
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    pub(crate) tick_time: Duration,
    pub(crate) max_session_timeout: Duration,
    pub(crate) jvm_args: Vec<String>,
    /// Ensemble members serve reads without a quorum (with local sessions, which a read-only
    /// member needs to create sessions).
    pub(crate) read_only_mode: bool,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            tick_time: Duration::from_millis(200),
            max_session_timeout: Duration::from_secs(60),
            jvm_args: Vec::new(),
            read_only_mode: false,
        }
    }
}

/// One ensemble member's ports, for the `server.N` lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerPorts {
    pub(crate) client: u16,
    pub(crate) quorum: u16,
    pub(crate) election: u16,
}

/// Writes `zoo.cfg` into `dir` for a server whose data lives in `dir/data`.
pub(crate) fn write_config(
    dir: &Path,
    client_port: u16,
    settings: &ServerSettings,
    peers: &[PeerPorts],
) -> Result<std::path::PathBuf> {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).map_err(Error::io(format!("creating {}", data.display())))?;
    let tick = settings.tick_time.as_millis().max(1);
    let mut cfg = String::new();
    let _ = writeln!(cfg, "tickTime={tick}");
    let _ = writeln!(cfg, "dataDir={}", data.display());
    let _ = writeln!(cfg, "clientPort={client_port}");
    let _ = writeln!(cfg, "clientPortAddress=127.0.0.1");
    let _ = writeln!(cfg, "maxClientCnxns=0");
    let _ = writeln!(cfg, "minSessionTimeout={}", 2 * tick);
    let _ = writeln!(
        cfg,
        "maxSessionTimeout={}",
        settings.max_session_timeout.as_millis()
    );
    let _ = writeln!(cfg, "admin.enableServer=false");
    let _ = writeln!(cfg, "4lw.commands.whitelist=*");
    if !peers.is_empty() {
        // Generous quorum limits, counted in ticks: a loaded 2-core machine must not break the
        // ensemble by itself.
        let _ = writeln!(cfg, "initLimit={}", (10_000 / tick).max(10));
        let _ = writeln!(cfg, "syncLimit={}", (5_000 / tick).max(5));
        let _ = writeln!(cfg, "reconfigEnabled=false");
        let _ = writeln!(cfg, "standaloneEnabled=false");
        if settings.read_only_mode {
            let _ = writeln!(cfg, "localSessionsEnabled=true");
            let _ = writeln!(cfg, "localSessionsUpgradingEnabled=true");
        }
        for (index, peer) in peers.iter().enumerate() {
            let _ = writeln!(
                cfg,
                "server.{}=127.0.0.1:{}:{};127.0.0.1:{}",
                index + 1,
                peer.quorum,
                peer.election,
                peer.client
            );
        }
    }
    let path = dir.join("zoo.cfg");
    std::fs::write(&path, cfg).map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(path)
}

/// `count` distinct free loopback ports. They are held open together while chosen, so they
/// differ; a start-up that still loses a race to another process is retried by the caller.
pub(crate) fn free_ports(count: usize) -> Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").map_err(Error::io("choosing a free port")))
        .collect::<Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| {
            l.local_addr()
                .map(|a| a.port())
                .map_err(Error::io("reading a bound port"))
        })
        .collect()
}

/// Whether a failed start-up was a port taken by someone else (worth a retry on other ports).
pub(crate) fn is_port_conflict(error: &Error) -> bool {
    match error {
        Error::Exited { log_tail, .. } | Error::StartTimeout { log_tail, .. } => {
            log_tail.contains("Address already in use") || log_tail.contains("BindException")
        }
        _ => false,
    }
}

/// Polls `address` with `srvr` until it reports one of `modes`, the process exits, or `deadline`
/// passes. Polling every 50 ms is the wait: a JVM announces nothing else.
pub(crate) async fn await_serving(
    address: &str,
    process: &mut JavaProcess,
    modes: &[ServerMode],
    deadline: Duration,
) -> Result<ServerMode> {
    let start = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::Exited {
                status: status.to_string(),
                log_tail: process.log_tail(),
            });
        }
        if let Some(mode) = server_mode(address, Duration::from_secs(2)).await {
            if modes.contains(&mode) {
                return Ok(mode);
            }
        }
        if start.elapsed() > deadline {
            return Err(Error::StartTimeout {
                address: address.to_owned(),
                seconds: deadline.as_secs(),
                log_tail: process.log_tail(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
