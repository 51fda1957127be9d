//! `check_exists()`: a node's stat, if it exists, optionally with a watch.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};
use crate::types::Stat;
use crate::watcher::Watcher;

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
pub struct ExistsBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> ExistsBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Also sets a watch: it fires when the node is created, deleted or changed.
    pub fn watched(self) -> WatchedExistsBuilder<'c> {
        WatchedExistsBuilder {
            client: self.client,
        }
    }

    /// The stat of `path`, `None` when it does not exist.
    pub fn for_path(self, path: &str) -> Exists<'c> {
        Exists {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `check_exists()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Exists<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for Exists<'_> {
    type Output = Result<Option<Stat>>;
    type IntoFuture = OpFuture<Option<Stat>>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        ops::start(self.client, "exists", &fixed.clone(), move |session, _| {
            let fixed = Arc::clone(&fixed);
            async move { session.exists(&fixed).await }
        })
    }
}

/// `check_exists().watched()`.
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct WatchedExistsBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> WatchedExistsBuilder<'c> {
    /// The stat of `path` (or `None`) and a watch on it.
    pub fn for_path(self, path: &str) -> WatchedExists<'c> {
        WatchedExists {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `check_exists().watched()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct WatchedExists<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for WatchedExists<'_> {
    type Output = Result<(Option<Stat>, Watcher)>;
    type IntoFuture = OpFuture<(Option<Stat>, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let namespace = self.client.namespace.clone();
        ops::start(self.client, "exists", &fixed.clone(), move |session, _| {
            let fixed = Arc::clone(&fixed);
            let namespace = namespace.clone();
            async move {
                let (stat, watcher) = session.exists_watched(&fixed).await?;
                Ok((stat, Watcher::new(watcher, namespace)))
            }
        })
    }
}
