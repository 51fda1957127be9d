//! `sync()`: make the connected server catch up with the leader before the next read.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};

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
pub struct SyncBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> SyncBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Syncs the path `path`.
    pub fn for_path(self, path: &str) -> Sync<'c> {
        Sync {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `sync()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Sync<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for Sync<'_> {
    type Output = Result<()>;
    type IntoFuture = OpFuture<()>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        ops::start(self.client, "sync", &fixed.clone(), move |session, _| {
            let fixed = Arc::clone(&fixed);
            async move { session.sync(&fixed).await }
        })
    }
}
