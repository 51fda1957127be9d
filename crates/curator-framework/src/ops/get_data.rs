//! `get_data()`: a node's data and stat, optionally with a watch.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, Unwatched, Watched, op_span};
use crate::types::Stat;
use crate::watcher::Watcher;
use crate::wire::WireSession;

/// Options of `get_data()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (data, stat) = client.get_data().for_path("/config").await?;
/// let (data, stat, watcher) = client.get_data().watched().for_path("/config").await?;
/// let event = watcher.await; // NodeDataChanged or NodeDeleted
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetDataBuilder<W = Unwatched> {
    client: CuratorFramework,
    watch: PhantomData<W>,
}

impl GetDataBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            watch: PhantomData,
        }
    }

    /// Also sets a one-shot watch on the node's data.
    pub fn watched(self) -> GetDataBuilder<Watched> {
        GetDataBuilder {
            client: self.client,
            watch: PhantomData,
        }
    }
}

impl<W> GetDataBuilder<W> {
    /// Reads `path`.
    pub fn for_path(self, path: &str) -> GetData<W> {
        GetData {
            path: self.client.target(path),
            client: self.client,
            watch: PhantomData,
        }
    }
}

/// An awaitable `get_data()`: `(data, stat)`, with a [`Watcher`] when watched.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetData<W = Unwatched> {
    client: CuratorFramework,
    path: Result<Arc<str>>,
    watch: PhantomData<W>,
}

impl IntoFuture for GetData<Unwatched> {
    type Output = Result<(Vec<u8>, Stat)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.get_data", client, path),
            read,
        )
    }
}

impl IntoFuture for GetData<Watched> {
    type Output = Result<(Vec<u8>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.get_data", client, path),
            read_watched,
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    path: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat)> {
    session.get_data(&path).await
}

async fn read_watched(
    session: Arc<WireSession>,
    path: Arc<str>,
    namespace: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat, Watcher)> {
    let (data, stat, watcher) = session.get_data_watched(&path).await?;
    Ok((data, stat, Watcher::new(watcher, namespace)))
}
