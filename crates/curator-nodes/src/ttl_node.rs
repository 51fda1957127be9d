//! `PersistentTtlNode`: a node that lives while its process keeps touching it, and goes by
//! itself (through the server's TTL) once the process is gone.

use std::sync::Arc;
use std::time::Duration;

use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

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
/// node.close().await?; // stops touching; the server removes the node after the TTL
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PersistentTtlNode {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

#[derive(Debug)]
struct Inner {
    node: PersistentNode,
    client: CuratorFramework,
    touch_path: String,
    ttl: Duration,
    /// The recipe's name, lifecycle and touching task.
    core: RecipeCore,
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
        let node =
            PersistentNode::builder(client.clone(), path, CreateMode::PersistentWithTtl, data)
                .with_ttl(ttl)
                .build()?;
        let inner = Arc::new(Inner {
            node,
            touch_path: paths::join(path, TOUCH_NODE),
            ttl,
            core: RecipeCore::new(&client, "PersistentTtlNode", path, &RecipeOptions::new()),
            client,
        });
        Ok(Self {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }

    /// Starts keeping and touching the node (in the background; returns at once).
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().start()?;
        self.inner.node.start().await?;
        let (client, touch_path, ttl) = (
            self.inner.client.clone(),
            self.inner.touch_path.clone(),
            self.inner.ttl,
        );
        let touching = async move {
            loop {
                let touched = client
                    .create()
                    .with_mode(CreateMode::PersistentWithTtl)
                    .with_ttl(ttl)
                    .or_set_data()
                    .for_path(&touch_path, [])
                    .await;
                match touched {
                    Err(Error::Closed) => return,
                    Err(error) => {
                        tracing::debug!(%error, touch_path, "TTL node touch failed; the node may be missing, retrying at the next touch");
                    }
                    Ok(_) => {}
                }
                tokio::time::sleep(ttl / 2).await;
            }
        };
        self.inner.core.tasks().spawn(touching).detach();
        Ok(())
    }

    /// Waits until the node was created; see [`PersistentNode::initialized`].
    ///
    /// # Errors
    /// As [`PersistentNode::initialized`].
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        self.inner.node.initialized().await
    }

    /// Whether the node was created once.
    pub fn is_initialized(&self) -> bool {
        self.inner.node.is_initialized()
    }

    /// Sets the node's data.
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancellation safety
    /// As [`PersistentNode::set_data`].
    pub async fn set_data(&self, data: impl AsRef<[u8]>) -> Result<()> {
        self.inner.node.set_data(data).await
    }

    /// The node's path (with its sequence, if any) once created.
    pub fn actual_path(&self) -> Option<String> {
        self.inner.node.actual_path()
    }

    /// Stops touching (and keeping) the node without deleting it, and waits for both tasks to
    /// end: the server removes the node once the TTL has passed. Idempotent; closing a node
    /// that never started is fine.
    ///
    /// # Errors
    /// None: nothing is deleted, so nothing can fail.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the tasks stopping in the background.
    pub async fn close(&self) -> Result<()> {
        if self.inner.core.close_tasks().await {
            // The keeper stops without its delete: the TTL removes the node.
            self.inner.node.stop_keeping().await;
        }
        Ok(())
    }
}

impl Recipe for PersistentTtlNode {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        PersistentTtlNode::start(self).await
    }

    async fn close(&self) -> Result<()> {
        PersistentTtlNode::close(self).await
    }
}
