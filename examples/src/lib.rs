//! What every example shares: where ZooKeeper is. Each example in `src/bin/` is one scenario,
//! read top to bottom; run one with `cargo run -p curator-examples --bin lock`, against the
//! server named by `--connect` or `$ZK_CONNECT` (`curator server` starts one and prints it), or
//! else against a ZooKeeper server it starts itself (Debian's jars, as `curator-test` runs
//! them). `tests/examples.rs` runs every example, so they cannot rot.
//!
//! ```no_run
//! use clap::Parser;
//!
//! /// What the example does, for `--help`.
//! #[derive(Parser)]
//! struct Args {
//!     #[command(flatten)]
//!     zookeeper: curator_examples::ZooKeeper,
//! }
//!
//! # async fn demo() -> curator_examples::Result {
//! let args = Args::parse();
//! let zookeeper = args.zookeeper.connect().await?;
//! let client = zookeeper.client().await?;
//! client.create().creating_parents_if_needed().for_path("/examples/hello", b"hi").await?;
//! client.close().await?;
//! # Ok(()) }
//! ```

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_test::TestingServer;

/// What the examples' `main`s return.
pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The command-line flag of every example: where ZooKeeper is.
#[derive(Debug, Clone, clap::Args)]
pub struct ZooKeeper {
    /// ZooKeeper's connect string (`host:port,…`); without it the example starts a ZooKeeper
    /// server of its own
    #[arg(long, env = "ZK_CONNECT", value_name = "HOSTS")]
    pub connect: Option<String>,
}

impl ZooKeeper {
    /// The server to use: the one named, or a new one (kept until the returned value is
    /// dropped).
    ///
    /// # Errors
    /// When no server was named and none can be started (no Java, no ZooKeeper jars).
    pub async fn connect(&self) -> Result<Server> {
        match &self.connect {
            Some(connect) => Ok(Server {
                connect: connect.clone(),
                _own: None,
            }),
            None => {
                let own = TestingServer::start().await?;
                eprintln!(
                    "no --connect or $ZK_CONNECT: started a ZooKeeper server at {}",
                    own.connect_string()
                );
                Ok(Server {
                    connect: own.connect_string(),
                    _own: Some(own),
                })
            }
        }
    }
}

/// A ZooKeeper server the example uses (and, when it started it, owns).
#[derive(Debug)]
pub struct Server {
    connect: String,
    _own: Option<TestingServer>,
}

impl Server {
    /// The server's connect string.
    pub fn connect_string(&self) -> &str {
        &self.connect
    }

    /// A new client of the server, started and connected (each participant of an example has
    /// its own, as separate processes would).
    ///
    /// # Errors
    /// When the client cannot connect within 15 seconds.
    pub async fn client(&self) -> Result<CuratorFramework> {
        let client = CuratorFramework::builder()
            .connect_string(&self.connect)
            .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 5))
            .build()?;
        client.start().await?;
        client
            .block_until_connected(Duration::from_secs(15))
            .await?;
        Ok(client)
    }

    /// Deletes `paths` and everything under them (what an example made), through a client of
    /// its own; a path already gone is fine.
    ///
    /// # Errors
    /// When a client cannot connect, or a delete fails.
    pub async fn remove(&self, paths: &[&str]) -> Result {
        let client = self.client().await?;
        for path in paths {
            client
                .delete()
                .quietly()
                .deleting_children_if_needed()
                .for_path(path)
                .await?;
        }
        client.close().await?;
        Ok(())
    }
}
