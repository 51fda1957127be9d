//! `get_children()`: the names of a node's children and its stat, optionally with a watch.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, Unwatched, Watched, op_span};
use crate::types::Stat;
use crate::watcher::Watcher;
use crate::wire::WireSession;

/// Options of `get_children()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (children, stat) = client.get_children().for_path("/services").await?;
/// let (children, _stat, watcher) = client.get_children().watched().for_path("/services").await?;
/// let event = watcher.await; // NodeChildrenChanged or NodeDeleted
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetChildrenBuilder<W = Unwatched> {
    client: CuratorFramework,
    watch: PhantomData<W>,
}

impl GetChildrenBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            watch: PhantomData,
        }
    }

    /// Also sets a one-shot watch on the node's children.
    pub fn watched(self) -> GetChildrenBuilder<Watched> {
        GetChildrenBuilder {
            client: self.client,
            watch: PhantomData,
        }
    }
}

impl<W> GetChildrenBuilder<W> {
    /// Lists the children of `path`.
    pub fn for_path(self, path: &str) -> GetChildren<W> {
        GetChildren {
            path: self.client.target(path),
            client: self.client,
            watch: PhantomData,
        }
    }
}

/// An awaitable `get_children()`: `(children, stat)`, with a [`Watcher`] when watched.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetChildren<W = Unwatched> {
    client: CuratorFramework,
    path: Result<Arc<str>>,
    watch: PhantomData<W>,
}

impl IntoFuture for GetChildren<Unwatched> {
    type Output = Result<(Vec<String>, Stat)>;
    type IntoFuture = OpFuture<(Vec<String>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            ops::schema_watch(client, self.path, false),
            |path| op_span!("zk.get_children", client, path),
            read,
        )
    }
}

impl IntoFuture for GetChildren<Watched> {
    type Output = Result<(Vec<String>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<String>, Stat, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            ops::schema_watch(client, self.path, true),
            |path| op_span!("zk.get_children", client, path),
            read_watched,
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    path: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<String>, Stat)> {
    session.get_children(&path).await
}

async fn read_watched(
    session: Arc<WireSession>,
    path: Arc<str>,
    namespace: Option<Arc<str>>,
) -> Result<(Vec<String>, Stat, Watcher)> {
    let (children, stat, watcher) = session.get_children_watched(&path).await?;
    Ok((children, stat, Watcher::new(watcher, namespace)))
}
