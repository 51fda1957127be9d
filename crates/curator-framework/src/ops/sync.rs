//! `sync()`: make the connected server catch up with the leader before the next read.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, op_span};
use crate::wire::WireSession;

/// Options of `sync()`. ZooKeeper reads are served by the connected server and may lag the
/// leader; a read issued after `sync` completes sees every write committed before it.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// client.sync().for_path("/config").await?;
/// let (fresh, _) = client.get_data().for_path("/config").await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct SyncBuilder {
    client: CuratorFramework,
}

impl SyncBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self { client }
    }

    /// Syncs the path `path`.
    pub fn for_path(self, path: &str) -> Sync {
        Sync {
            path: self.client.target(path),
            client: self.client,
        }
    }
}

/// An awaitable `sync()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Sync {
    client: CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for Sync {
    type Output = Result<()>;
    type IntoFuture = OpFuture<()>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.sync", client, path),
            sync,
        )
    }
}

async fn sync(session: Arc<WireSession>, path: Arc<str>, _: Option<Arc<str>>) -> Result<()> {
    session.sync(&path).await
}
