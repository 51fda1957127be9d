//! `get_children()`: the names of a node's children and its stat, optionally with a watch.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};
use crate::types::Stat;
use crate::watcher::Watcher;

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
pub struct GetChildrenBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> GetChildrenBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Also sets a one-shot watch on the node's children.
    pub fn watched(self) -> WatchedGetChildrenBuilder<'c> {
        WatchedGetChildrenBuilder {
            client: self.client,
        }
    }

    /// Lists the children of `path`.
    pub fn for_path(self, path: &str) -> GetChildren<'c> {
        GetChildren {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `get_children()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetChildren<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetChildren<'_> {
    type Output = Result<(Vec<String>, Stat)>;
    type IntoFuture = OpFuture<(Vec<String>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        ops::start(
            self.client,
            "get_children",
            &fixed.clone(),
            move |session, _| {
                let fixed = Arc::clone(&fixed);
                async move { session.get_children(&fixed).await }
            },
        )
    }
}

/// `get_children().watched()`.
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct WatchedGetChildrenBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> WatchedGetChildrenBuilder<'c> {
    /// Lists the children of `path` and watches it.
    pub fn for_path(self, path: &str) -> WatchedGetChildren<'c> {
        WatchedGetChildren {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `get_children().watched()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct WatchedGetChildren<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for WatchedGetChildren<'_> {
    type Output = Result<(Vec<String>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<String>, Stat, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let namespace = self.client.namespace.clone();
        ops::start(
            self.client,
            "get_children",
            &fixed.clone(),
            move |session, _| {
                let fixed = Arc::clone(&fixed);
                let namespace = namespace.clone();
                async move {
                    let (children, stat, watcher) = session.get_children_watched(&fixed).await?;
                    Ok((children, stat, Watcher::new(watcher, namespace)))
                }
            },
        )
    }
}
