//! Starts a real ZooKeeper server (or ensemble) for a test run or by hand, prints its connect
//! string, and keeps it until interrupted or until standard input closes.
//!
//! ```text
//! curator-test-server [--cluster N] [--zookeeper-version 3.8|3.9] [--connect-file PATH]
//!                     [--until-stdin-closes]
//! curator-test-server --help
//! ```

use std::io::{BufRead, Write};
use std::path::PathBuf;

use clap::Parser;
use curator_test::{TestingCluster, TestingServer, ZooKeeperVersion};

/// Starts a real ZooKeeper server (or an ensemble), prints its connect string, and keeps it
/// until interrupted (Ctrl-C, SIGTERM) or, with --until-stdin-closes, until standard input
/// closes.
#[derive(Debug, Parser)]
#[command(name = "curator-test-server")]
struct Options {
    /// Start an ensemble of N members instead of one server.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    cluster: Option<u16>,
    /// The ZooKeeper release to run: 3.8 (Debian 12's 3.8.0) or 3.9 (Debian 13's 3.9.3, fetched
    /// by `scripts/setup.sh test`). Default: the jars of ZOOKEEPER_CLASSPATH when set, else the
    /// release in CURATOR_TEST_ZK_VERSION, else 3.8.
    #[arg(long, value_name = "VERSION")]
    zookeeper_version: Option<ZooKeeperVersion>,
    /// Also write the connect string to PATH (whole, once the server is up; removed at the end).
    #[arg(long, value_name = "PATH")]
    connect_file: Option<PathBuf>,
    /// Stop when standard input closes (so a parent's exit stops the server).
    #[arg(long)]
    until_stdin_closes: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = Options::parse();
    // The handlers first: a signal sent as soon as the connect string is printed must stop the
    // server, not kill the process before it stops its JVMs.
    let mut signals = Signals::install();
    // Keep whichever handle was started alive until the end of `main`.
    let (connect, _server, _cluster) = match options.cluster {
        None => {
            let mut builder = TestingServer::builder();
            if let Some(version) = options.zookeeper_version {
                builder = builder.version(version);
            }
            match builder.start().await {
                Ok(server) => (server.connect_string(), Some(server), None),
                Err(error) => fail(&error),
            }
        }
        Some(n) => {
            let mut builder = TestingCluster::builder(usize::from(n));
            if let Some(version) = options.zookeeper_version {
                builder = builder.version(version);
            }
            match builder.start().await {
                Ok(cluster) => (cluster.connect_string(), None, Some(cluster)),
                Err(error) => fail(&error),
            }
        }
    };
    if let Some(path) = &options.connect_file {
        // Written whole, then renamed, so a reader never sees half a line.
        let mut partial = path.clone().into_os_string();
        partial.push(".partial");
        if let Err(error) = std::fs::write(&partial, format!("{connect}\n"))
            .and_then(|()| std::fs::rename(&partial, path))
        {
            eprintln!("writing {}: {error}", path.display());
            std::process::exit(1);
        }
    }
    println!("{connect}");
    let _ = std::io::stdout().flush();

    if options.until_stdin_closes {
        // A thread of its own, not `spawn_blocking`: the runtime waits for blocking tasks when it
        // shuts down, so a read of a still-open stdin would keep the process alive after a signal.
        let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut stdin = std::io::stdin().lock();
            while stdin.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                line.clear();
            }
            drop(closed);
        });
        tokio::select! {
            _ = stdin_closed => {}
            () = signals.interrupted() => {}
        }
    } else {
        signals.interrupted().await;
    }
    if let Some(path) = &options.connect_file {
        let _ = std::fs::remove_file(path);
    }
}

fn fail(error: &curator_test::Error) -> ! {
    eprintln!("curator-test-server: {error}");
    std::process::exit(1);
}

/// SIGTERM and SIGINT (Ctrl-C), caught from the moment they are installed.
struct Signals {
    term: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            term: signal(SignalKind::terminate()).expect("installing a SIGTERM handler"),
            interrupt: signal(SignalKind::interrupt()).expect("installing a SIGINT handler"),
        }
    }

    /// Resolves at the first of them.
    async fn interrupted(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
