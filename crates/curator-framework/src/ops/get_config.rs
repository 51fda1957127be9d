//! `get_config()`: the ensemble's dynamic configuration (`/zookeeper/config`).

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, Unwatched, Watched, op_span};
use crate::types::Stat;
use crate::watcher::Watcher;
use crate::wire::WireSession;

const CONFIG_NODE: &str = "/zookeeper/config";

/// Options of `get_config()`. The data is the text ZooKeeper keeps in `/zookeeper/config`
/// (`server.N=host:port:port:role;client` lines and a `version=` line). Namespaces do not apply.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (config, _stat) = client.get_config().for_ensemble().await?;
/// println!("{}", String::from_utf8_lossy(&config));
/// let (_config, _stat, watcher) = client.get_config().watched().for_ensemble().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_ensemble() is awaited"]
pub struct GetConfigBuilder<W = Unwatched> {
    client: CuratorFramework,
    watch: PhantomData<W>,
}

impl GetConfigBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            watch: PhantomData,
        }
    }

    /// Also sets a one-shot watch on the configuration.
    pub fn watched(self) -> GetConfigBuilder<Watched> {
        GetConfigBuilder {
            client: self.client,
            watch: PhantomData,
        }
    }

    /// Reads the configuration.
    pub fn for_ensemble(self) -> OpFuture<(Vec<u8>, Stat)> {
        // No namespace: the configuration lives outside it, and needs no namespace node.
        let client = self.client.without_namespace();
        let span = |path: &str| op_span!("zk.get_config", client, path);
        ops::on_path(&client, Ok(Arc::from(CONFIG_NODE)), span, read)
    }
}

impl GetConfigBuilder<Watched> {
    /// Reads the configuration and sets a one-shot watch on it.
    pub fn for_ensemble(self) -> OpFuture<(Vec<u8>, Stat, Watcher)> {
        // No namespace: the configuration lives outside it, and needs no namespace node.
        let client = self.client.without_namespace();
        let span = |path: &str| op_span!("zk.get_config", client, path);
        ops::on_path(&client, Ok(Arc::from(CONFIG_NODE)), span, read_watched)
    }
}

impl IntoFuture for GetConfigBuilder<Unwatched> {
    type Output = Result<(Vec<u8>, Stat)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        self.for_ensemble()
    }
}

impl IntoFuture for GetConfigBuilder<Watched> {
    type Output = Result<(Vec<u8>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        self.for_ensemble()
    }
}

async fn read(
    session: Arc<WireSession>,
    _: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat)> {
    session.get_config().await
}

async fn read_watched(
    session: Arc<WireSession>,
    _: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat, Watcher)> {
    let (data, stat, watcher) = session.get_config_watched().await?;
    Ok((data, stat, Watcher::new(watcher, None)))
}
