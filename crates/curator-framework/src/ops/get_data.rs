//! `get_data()`: a node's data and stat, optionally with a watch.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};
use crate::types::Stat;
use crate::watcher::Watcher;

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
pub struct GetDataBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> GetDataBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Also sets a one-shot watch on the node's data.
    pub fn watched(self) -> WatchedGetDataBuilder<'c> {
        WatchedGetDataBuilder {
            client: self.client,
        }
    }

    /// Reads `path`.
    pub fn for_path(self, path: &str) -> GetData<'c> {
        GetData {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `get_data()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetData<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetData<'_> {
    type Output = Result<(Vec<u8>, Stat)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        ops::start(
            self.client,
            "get_data",
            &fixed.clone(),
            move |session, _| {
                let fixed = Arc::clone(&fixed);
                async move { session.get_data(&fixed).await }
            },
        )
    }
}

/// `get_data().watched()`.
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct WatchedGetDataBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> WatchedGetDataBuilder<'c> {
    /// Reads `path` and watches it.
    pub fn for_path(self, path: &str) -> WatchedGetData<'c> {
        WatchedGetData {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `get_data().watched()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct WatchedGetData<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for WatchedGetData<'_> {
    type Output = Result<(Vec<u8>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat, Watcher)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let namespace = self.client.namespace.clone();
        ops::start(
            self.client,
            "get_data",
            &fixed.clone(),
            move |session, _| {
                let fixed = Arc::clone(&fixed);
                let namespace = namespace.clone();
                async move {
                    let (data, stat, watcher) = session.get_data_watched(&fixed).await?;
                    Ok((data, stat, Watcher::new(watcher, namespace)))
                }
            },
        )
    }
}
