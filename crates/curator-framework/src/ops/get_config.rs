//! `get_config()`: the ensemble's dynamic configuration (`/zookeeper/config`).

use std::future::IntoFuture;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};
use crate::types::Stat;
use crate::watcher::Watcher;

/// Options of `get_config()`. The data is the text ZooKeeper keeps in `/zookeeper/config`
/// (`server.N=host:port:port:role;client` lines and a `version=` line). Namespaces do not apply.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (config, _stat) = client.get_config().for_ensemble().await?;
/// println!("{}", String::from_utf8_lossy(&config));
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_ensemble() is awaited"]
pub struct GetConfigBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> GetConfigBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Reads the configuration.
    pub fn for_ensemble(self) -> OpFuture<(Vec<u8>, Stat)> {
        ops::start(
            self.client,
            "get_config",
            "/zookeeper/config",
            |session, _| async move { session.get_config().await },
        )
    }

    /// Reads the configuration and watches it.
    pub fn watched(self) -> WatchedGetConfig<'c> {
        WatchedGetConfig {
            client: self.client,
        }
    }
}

/// `get_config().watched()`.
#[derive(Debug)]
#[must_use = "a builder does nothing until for_ensemble() is awaited"]
pub struct WatchedGetConfig<'c> {
    client: &'c CuratorFramework,
}

impl WatchedGetConfig<'_> {
    /// Reads the configuration and sets a one-shot watch on it.
    pub fn for_ensemble(self) -> OpFuture<(Vec<u8>, Stat, Watcher)> {
        ops::start(
            self.client,
            "get_config",
            "/zookeeper/config",
            |session, _| async move {
                let (data, stat, watcher) = session.get_config_watched().await?;
                Ok((data, stat, Watcher::new(watcher, None)))
            },
        )
    }
}

impl IntoFuture for GetConfigBuilder<'_> {
    type Output = Result<(Vec<u8>, Stat)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        self.for_ensemble()
    }
}
