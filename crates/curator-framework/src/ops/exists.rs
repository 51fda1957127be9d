//! `check_exists()`: a node's stat, if it exists, optionally with a watch.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, Unwatched, Watched, op_span};
use crate::types::Stat;
use crate::watcher::Watcher;
use crate::wire::WireSession;

/// Options of `check_exists()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// if let Some(stat) = client.check_exists().for_path("/config").await? {
///     println!("version {}", stat.version);
/// }
/// let (_stat, watcher) = client.check_exists().watched().for_path("/flag").await?;
/// let event = watcher.await; // NodeCreated once someone creates /flag
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct ExistsBuilder<W = Unwatched> {
    client: CuratorFramework,
    watch: PhantomData<W>,
}

impl ExistsBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            watch: PhantomData,
        }
    }

    /// Also sets a watch: it fires when the node is created, deleted or changed.
    pub fn watched(self) -> ExistsBuilder<Watched> {
        ExistsBuilder {
            client: self.client,
            watch: PhantomData,
        }
    }
}

impl<W> ExistsBuilder<W> {
    /// The stat of `path`, `None` when it does not exist.
    pub fn for_path(self, path: &str) -> Exists<W> {
        Exists {
            path: self.client.target(path),
            client: self.client,
            watch: PhantomData,
        }
    }
}

/// An awaitable `check_exists()`: the stat or `None`, with a [`Watcher`] when watched.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Exists<W = Unwatched> {
    client: CuratorFramework,
    path: Result<Arc<str>>,
    watch: PhantomData<W>,
}

impl IntoFuture for Exists<Unwatched> {
    type Output = Result<Option<Stat>>;
    type IntoFuture = OpFuture<Option<Stat>>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            ops::schema_watch(client, self.path, false),
            |path| op_span!("zk.exists", client, path),
            read,
        )
    }
}

impl IntoFuture for Exists<Watched> {
    type Output = Result<(Option<Stat>, Watcher)>;
    type IntoFuture = OpFuture<(Option<Stat>, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            ops::schema_watch(client, self.path, true),
            |path| op_span!("zk.exists", client, path),
            read_watched,
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    path: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<Option<Stat>> {
    session.exists(&path).await
}

async fn read_watched(
    session: Arc<WireSession>,
    path: Arc<str>,
    namespace: Option<Arc<str>>,
) -> Result<(Option<Stat>, Watcher)> {
    let (stat, watcher) = session.exists_watched(&path).await?;
    Ok((stat, Watcher::new(watcher, namespace)))
}
