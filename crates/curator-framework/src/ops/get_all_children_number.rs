//! `get_all_children_number()`: how many descendants a node has (ZooKeeper 3.6+
//! `getAllChildrenNumber`).

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, op_span};
use crate::wire::WireSession;

/// Options of `get_all_children_number()`.
///
/// Counts children, grandchildren and so on, not the node itself, in one small request: the
/// size of a big queue without listing it. Fails with [`Error::NoNode`](crate::Error::NoNode)
/// when the node does not exist.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let depth = client.get_all_children_number().for_path("/queues/jobs").await?;
/// println!("{depth} items waiting");
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetAllChildrenNumberBuilder {
    client: CuratorFramework,
}

impl GetAllChildrenNumberBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self { client }
    }

    /// Counts the descendants of `path`.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let n = client.get_all_children_number().for_path("/queues/jobs").await?;
    /// # Ok(()) }
    /// ```
    pub fn for_path(self, path: &str) -> GetAllChildrenNumber {
        GetAllChildrenNumber {
            path: self.client.target(path),
            client: self.client,
        }
    }
}

/// An awaitable `get_all_children_number()`: the number of descendants.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let op = client.get_all_children_number().for_path("/"); // nothing sent yet
/// let nodes_in_the_tree: usize = op.await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetAllChildrenNumber {
    client: CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetAllChildrenNumber {
    type Output = Result<usize>;
    type IntoFuture = OpFuture<usize>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.get_all_children_number", client, path),
            read,
        )
    }
}

async fn read(session: Arc<WireSession>, path: Arc<str>, _: Option<Arc<str>>) -> Result<usize> {
    session.get_all_children_number(&path).await
}
