//! `add_watch()`: persistent and persistent-recursive watches (ZooKeeper 3.6+).

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, op_span};
use crate::watcher::PersistentWatcher;

/// Options of `add_watch()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let mut watcher = client.add_watch().recursive().for_path("/config").await?;
/// while let Some(event) = watcher.next().await {
///     println!("{:?} {}", event.event_type, event.path);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct AddWatchBuilder {
    client: CuratorFramework,
    recursive: bool,
}

impl AddWatchBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            recursive: false,
        }
    }

    /// Watches the whole subtree (`PERSISTENT_RECURSIVE`): creations, deletions and data changes
    /// of every descendant. (Children-changed events are not sent in this mode.)
    pub fn recursive(mut self) -> Self {
        self.recursive = true;
        self
    }

    /// Watches `path` (which need not exist). ZooKeeper keeps one watch mode per path and
    /// session: a second `add_watch` on the same path from the same client replaces the first
    /// one's mode at the server.
    pub fn for_path(self, path: &str) -> AddWatch {
        AddWatch {
            path: self.client.target(path),
            builder: self,
        }
    }
}

/// An awaitable `add_watch()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct AddWatch {
    builder: AddWatchBuilder,
    path: Result<Arc<str>>,
}

impl IntoFuture for AddWatch {
    type Output = Result<PersistentWatcher>;
    type IntoFuture = OpFuture<PersistentWatcher>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.builder.client;
        let fixed: Arc<str> = match ops::schema_watch(client, self.path, true) {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let recursive = self.builder.recursive;
        let namespace = client.namespace.clone();
        ops::run_read(
            client,
            op_span!("zk.add_watch", client, fixed),
            move |session, _| {
                let fixed = Arc::clone(&fixed);
                let namespace = namespace.clone();
                async move {
                    let watcher = session.add_watch(&fixed, recursive).await?;
                    Ok(PersistentWatcher::new(watcher, namespace))
                }
            },
            |result| result,
        )
    }
}
