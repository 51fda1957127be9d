//! What a mutex's [`LockGuard`](crate::LockGuard) and a semaphore's [`Lease`](crate::Lease)
//! share: a [`Hold`] on one node, and giving the node back (now with `release().await`, or in the
//! background on drop).

use std::future::IntoFuture;
use std::sync::Arc;

use curator_framework::ops::delete::Delete;
use curator_framework::recipe::{Hold, RecipeTasks};
use curator_framework::{CuratorFramework, Result};

use crate::mutex::Shared;

/// One hold on a node, given back once: by [`release`](Self::release), or on drop.
pub(crate) struct Holding {
    hold: Hold,
    client: CuratorFramework,
    /// Where a release on drop finishes.
    tasks: RecipeTasks,
    /// For a mutex: the handle whose reentrant count decides which release deletes the node.
    /// `None` for a lease, whose node is its own.
    reentrant: Option<Arc<Shared>>,
    /// For a hold under a lock-delay: the directory whose record its release updates.
    delay_dir: Option<String>,
    released: bool,
}

impl Holding {
    /// A lease's hold: its node is deleted when it is given back.
    pub(crate) fn lease(
        hold: Hold,
        client: CuratorFramework,
        tasks: RecipeTasks,
        delay_dir: Option<String>,
    ) -> Self {
        Self {
            hold,
            client,
            tasks,
            reentrant: None,
            delay_dir,
            released: false,
        }
    }

    /// One of a mutex handle's reentrant holds: the last one given back deletes the node.
    pub(crate) fn reentrant(hold: Hold, shared: Arc<Shared>) -> Self {
        Self {
            hold,
            client: shared.client.clone(),
            tasks: shared.core.tasks().clone(),
            delay_dir: shared.delay_dir(),
            reentrant: Some(shared),
            released: false,
        }
    }

    pub(crate) fn hold(&self) -> &Hold {
        &self.hold
    }

    pub(crate) fn client(&self) -> &CuratorFramework {
        &self.client
    }

    /// Gives this hold back; deletes the node (and waits for that) when it was the last.
    pub(crate) async fn release(mut self) -> Result<()> {
        self.released = true;
        if self.gives_up_node() {
            give_back(
                &self.client,
                self.delay_dir.as_deref(),
                self.hold.node_path(),
            )
            .await
        } else {
            Ok(())
        }
    }

    /// Counts this hold out; `true` when the node is to go.
    fn gives_up_node(&self) -> bool {
        self.reentrant
            .as_ref()
            .is_none_or(|shared| shared.release_one(self.hold.node_path()))
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if !self.released && self.gives_up_node() {
            match self.delay_dir.take() {
                Some(dir) => {
                    release_in_background(&self.client, &self.tasks, dir, self.hold.node_path())
                }
                None => delete_in_background(&self.client, &self.tasks, self.hold.node_path()),
            }
        }
    }
}

/// Gives a held node back: under a lock-delay, its delete and the removal of its line from the
/// record of `delay_dir` in one transaction (a plain delete, which then counts as a failure,
/// when that fails); otherwise a plain delete.
async fn give_back(client: &CuratorFramework, delay_dir: Option<&str>, node: &str) -> Result<()> {
    // Disconnected: the plain delete (guaranteed, it goes on in the background) rather than a
    // read and a transaction that would wait for the connection.
    if let Some(dir) = delay_dir.filter(|_| client.is_connected()) {
        match crate::LockDelay::release(client, dir, curator_framework::paths::node_name(node))
            .await
        {
            Ok(()) => return Ok(()),
            Err(error) => {
                tracing::warn!(node, %error, "a lock-delay release failed: the node is deleted alone (counted as a failure)");
            }
        }
    }
    delete_node(client, node).await
}

/// [`give_back`] without waiting, for a hold under a lock-delay dropped unreleased.
fn release_in_background(client: &CuratorFramework, tasks: &RecipeTasks, dir: String, node: &str) {
    if tokio::runtime::Handle::try_current().is_err() || tasks.is_cancelled() {
        return delete_in_background(client, tasks, node);
    }
    let client = client.clone();
    let node = node.to_owned();
    tasks
        .spawn(async move {
            let _ = give_back(&client, Some(&dir), &node).await;
        })
        .detach();
}

/// The delete of a node of ours: guaranteed (after a connection failure, or when its future is
/// dropped, the client keeps deleting in the background), and quiet (gone already is fine).
pub(crate) fn delete_node(client: &CuratorFramework, node: &str) -> Delete {
    client.delete().guaranteed().quietly().for_path(node)
}

/// Deletes `node` without waiting: the request goes out now (so it reaches the server before
/// anything this caller sends next), and a task of `tasks` waits for it.
pub(crate) fn delete_in_background(client: &CuratorFramework, tasks: &RecipeTasks, node: &str) {
    if tokio::runtime::Handle::try_current().is_err() {
        tracing::error!(
            node,
            "lock node left to its session: dropped outside a Tokio runtime"
        );
        return;
    }
    if tasks.is_cancelled() {
        // Only the client's close cancels a lock's tasks: its session, and the node with it,
        // is gone already.
        return;
    }
    let delete = delete_node(client, node).into_future();
    tasks
        .spawn(async move {
            // An error was retried by the client's policy, and a guaranteed delete that failed
            // goes on in the client's background work: nothing is left to do with it here.
            let _ = delete.await;
        })
        .detach();
}
