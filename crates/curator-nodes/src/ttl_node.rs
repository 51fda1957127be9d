//! `PersistentTtlNode`: a node that lives while its process keeps touching it, and goes by
//! itself (through the server's TTL) once the process is gone.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::PersistentNode;

/// The child that is touched to keep the node alive.
pub const TOUCH_NODE: &str = "touch";

/// A persistent node with a TTL, kept alive while this instance runs (Curator's
/// `PersistentTtlNode`): the node `P` (kept by a [`PersistentNode`] in `PersistentWithTtl`
/// mode) has a child `P/touch`, also with the TTL, written every `ttl / 2`. ZooKeeper deletes a
/// TTL node once it has had no children and no change for its TTL, so when the process stops
/// touching, `P/touch` and then `P` go away. Unlike an ephemeral node, it outlives short
/// session losses. The server needs `extendedTypesEnabled=true`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_nodes::PersistentTtlNode;
/// let node = PersistentTtlNode::new(client, "/workers/w1", Duration::from_secs(60), b"busy")?;
/// node.start().await?;
/// // ... while it runs, /workers/w1 exists ...
/// node.close().await; // stops touching; the server removes the node after the TTL
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PersistentTtlNode {
    node: PersistentNode,
    client: CuratorFramework,
    touch_path: String,
    ttl: Duration,
    cancel: CancellationToken,
    task: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl PersistentTtlNode {
    /// A TTL node at `path` holding `data`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for a zero TTL or data
    /// over 1 MiB.
    pub fn new(
        client: CuratorFramework,
        path: &str,
        ttl: Duration,
        data: impl AsRef<[u8]>,
    ) -> Result<Self> {
        if ttl.is_zero() {
            return Err(Error::InvalidArgument("a TTL node needs a TTL".into()));
        }
        let node = PersistentNode::with_ttl(
            client.clone(),
            CreateMode::PersistentWithTtl,
            path,
            data,
            ttl,
        )?;
        Ok(Self {
            node,
            client,
            touch_path: paths::join(path, TOUCH_NODE),
            ttl,
            cancel: CancellationToken::new(),
            task: Arc::new(Mutex::new(None)),
        })
    }

    /// Starts keeping and touching the node.
    ///
    /// # Errors
    /// As [`PersistentNode::start`].
    pub async fn start(&self) -> Result<()> {
        self.node.start().await?;
        let (client, touch_path, ttl, cancel) = (
            self.client.clone(),
            self.touch_path.clone(),
            self.ttl,
            self.cancel.clone(),
        );
        *self.task.lock() = Some(tokio::spawn(async move {
            loop {
                let touched = client
                    .create()
                    .with_mode(CreateMode::PersistentWithTtl)
                    .with_ttl(ttl)
                    .or_set_data()
                    .for_path(&touch_path, [])
                    .await;
                if let Err(error) = touched {
                    tracing::debug!(%error, touch_path, "TTL node touch failed; the node may be missing, retrying at the next touch");
                }
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(ttl / 2) => {}
                }
            }
        }));
        Ok(())
    }

    /// Waits until the node was created; see [`PersistentNode::wait_for_initial_create`].
    ///
    /// # Errors
    /// As [`PersistentNode::wait_for_initial_create`].
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<bool> {
        self.node.wait_for_initial_create(timeout).await
    }

    /// Sets the node's data.
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.node.set_data(data).await
    }

    /// Stops touching (and keeping) the node without deleting it: the server removes it once
    /// the TTL has passed.
    pub async fn close(&self) {
        self.cancel.cancel();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
        // Stop the keeper without its delete: the TTL removes the node.
        self.node.stop_keeping().await;
    }
}
