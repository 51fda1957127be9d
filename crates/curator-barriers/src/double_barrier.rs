//! `DistributedDoubleBarrier`: N members enter together and leave together.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::recipe::{RecipeCore, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use tokio::time::Instant;

use crate::wait::changed_before;

const READY_NODE: &str = "ready";

/// A double barrier for `member_count` members (Curator's `DistributedDoubleBarrier` layout:
/// each member an ephemeral `P/<uuid>`, and `P/ready` once all have entered).
///
/// A handle is one member: call [`enter`](Self::enter) then [`leave`](Self::leave). It has no
/// options and nothing to start or close.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_barriers::DistributedDoubleBarrier;
/// let member = DistributedDoubleBarrier::new(client, "/barriers/batch-7", 3)?;
/// if member.enter_timeout(Duration::from_secs(30)).await? {
///     // ... the three members work together ...
///     member.leave().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DistributedDoubleBarrier {
    client: CuratorFramework,
    path: String,
    member_count: usize,
    our_node: String,
    ready_path: String,
    /// The barrier's name, and its tasks: where the node of an abandoned `enter` is deleted.
    core: Arc<RecipeCore>,
}

/// Deletes this member's node in the background unless disarmed: its `enter` was dropped, or
/// failed.
struct Entering<'a> {
    barrier: &'a DistributedDoubleBarrier,
    armed: bool,
}

impl Drop for Entering<'_> {
    fn drop(&mut self) {
        let tasks = self.barrier.core.tasks();
        // A cancelled set of tasks means a closed client: the ephemeral node went with it.
        if !self.armed || tasks.is_cancelled() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        // Sent now; the task only waits for it (a guaranteed delete that fails goes on in the
        // client's background work).
        let delete = self
            .barrier
            .client
            .delete()
            .guaranteed()
            .quietly()
            .for_path(&self.barrier.our_node)
            .into_future();
        tasks
            .spawn(async move {
                let _ = delete.await;
            })
            .detach();
    }
}

impl DistributedDoubleBarrier {
    /// Member of the barrier on `path` that opens when `member_count` members have entered.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidArgument`] for zero members.
    pub fn new(client: CuratorFramework, path: &str, member_count: usize) -> Result<Self> {
        paths::validate(path)?;
        if member_count == 0 {
            return Err(Error::InvalidArgument(
                "a double barrier needs at least one member".into(),
            ));
        }
        Ok(Self {
            core: Arc::new(RecipeCore::new(
                &client,
                "DistributedDoubleBarrier",
                path,
                &RecipeOptions::new(),
            )),
            our_node: paths::join(
                path,
                &curator_framework::random::uuid().hyphenated().to_string(),
            ),
            ready_path: paths::join(path, READY_NODE),
            client,
            path: path.to_owned(),
            member_count,
        })
    }

    /// Enters, and waits until all members have.
    ///
    /// # Errors
    /// Connection errors (this member's node is then deleted, so it may enter again);
    /// [`Error::NodeExists`] when this member already entered.
    ///
    /// # Cancellation safety
    /// Dropping the future before it returns leaves this member out: a node it made is deleted
    /// in the background.
    pub async fn enter(&self) -> Result<()> {
        self.enter_until(None).await.map(drop)
    }

    /// Like [`enter`](Self::enter), giving up after `timeout` (`false`, with this member's node
    /// removed).
    ///
    /// # Errors
    /// As [`enter`](Self::enter).
    ///
    /// # Cancellation safety
    /// As [`enter`](Self::enter).
    pub async fn enter_timeout(&self, timeout: Duration) -> Result<bool> {
        self.enter_until(Some(Instant::now() + timeout)).await
    }

    /// Leaves, and waits until all members have.
    ///
    /// # Errors
    /// Connection errors; [`Error::InvalidArgument`] when this member is not in the barrier.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave this member's node deleted (it has left, and others go on
    /// leaving), or not (it is still in the barrier).
    pub async fn leave(&self) -> Result<()> {
        self.leave_until(None).await.map(drop)
    }

    /// Like [`leave`](Self::leave), giving up after `timeout` (`false`).
    ///
    /// # Errors
    /// As [`leave`](Self::leave).
    ///
    /// # Cancellation safety
    /// As [`leave`](Self::leave).
    pub async fn leave_timeout(&self, timeout: Duration) -> Result<bool> {
        self.leave_until(Some(Instant::now() + timeout)).await
    }

    async fn enter_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let (ready, mut ready_watch) = self
            .client
            .check_exists()
            .watched()
            .for_path(&self.ready_path)
            .await?;
        // Armed before the create: a create dropped or failed on the way may still have applied.
        let mut entering = Entering {
            barrier: self,
            armed: true,
        };
        let created = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            // A retry that meets the node its first attempt made is not "entered already".
            .idempotent()
            .with_mode(CreateMode::Ephemeral)
            // Who this member is (the client's identity), for operators; Java never reads it.
            .for_path(&self.our_node, self.client.identity().to_bytes())
            .await;
        if let Err(error) = created {
            // This member is in already: its node is not ours to delete.
            entering.armed = error != Error::NodeExists;
            return Err(error);
        }
        if ready.is_some() {
            entering.armed = false;
            return Ok(true);
        }
        loop {
            if self.members().await?.len() >= self.member_count {
                match self
                    .client
                    .create()
                    .for_path_with_default_data(&self.ready_path)
                    .await
                {
                    Ok(_) | Err(Error::NodeExists) => {
                        entering.armed = false;
                        return Ok(true);
                    }
                    Err(error) => return Err(error),
                }
            }
            if !changed_before(ready_watch, deadline).await {
                // Gone before this returns (a failure here leaves it to the background).
                entering.armed = false;
                let _ = self
                    .client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&self.our_node)
                    .await;
                return Ok(false);
            }
            let (ready, watch) = self
                .client
                .check_exists()
                .watched()
                .for_path(&self.ready_path)
                .await?;
            if ready.is_some() {
                entering.armed = false;
                return Ok(true);
            }
            ready_watch = watch;
        }
    }

    async fn leave_until(&self, deadline: Option<Instant>) -> Result<bool> {
        let ours = paths::node_name(&self.our_node).to_owned();
        let mut ours_should_exist = true;
        loop {
            let members = self.members().await?;
            if members.is_empty() {
                return Ok(true);
            }
            let index = members.iter().position(|m| *m == ours);
            if index.is_none() && ours_should_exist {
                return Err(Error::InvalidArgument(format!(
                    "{} is not in the barrier",
                    self.our_node
                )));
            }
            if members.len() == 1 {
                if ours_should_exist {
                    self.client
                        .delete()
                        .quietly()
                        .for_path(&self.our_node)
                        .await?;
                }
                // The last member out takes the ready flag down.
                self.client
                    .delete()
                    .quietly()
                    .for_path(&self.ready_path)
                    .await?;
                return Ok(true);
            }
            // The lowest member waits for the highest; every other member leaves and waits for
            // the lowest: each deletion wakes at most one member.
            let watched = if index == Some(0) {
                members.last().cloned().unwrap_or_default()
            } else {
                if ours_should_exist {
                    self.client
                        .delete()
                        .quietly()
                        .for_path(&self.our_node)
                        .await?;
                    ours_should_exist = false;
                }
                members[0].clone()
            };
            let (stat, watcher) = self
                .client
                .check_exists()
                .watched()
                .for_path(&paths::join(&self.path, &watched))
                .await?;
            if stat.is_some() && !changed_before(watcher, deadline).await {
                return Ok(false);
            }
        }
    }

    /// The members' node names, sorted, without the ready flag.
    async fn members(&self) -> Result<Vec<String>> {
        let mut members: Vec<String> = match self.client.get_children().for_path(&self.path).await {
            Ok((children, _)) => children.into_iter().filter(|c| c != READY_NODE).collect(),
            Err(Error::NoNode) => Vec::new(),
            Err(error) => return Err(error),
        };
        members.sort();
        Ok(members)
    }
}
