//! `SequentialIdGenerator`: unique, increasing ids from sequential nodes (the naming recipe of
//! the ZooKeeper documentation).

use std::future::IntoFuture;

use curator_framework::recipe::{Recipe, RecipeCore, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use futures::future::join_all;
use parking_lot::Mutex;

/// One id: the server's sequence number and the node name it came from
/// (`type2-job-0000000003`, without the protected prefix).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SequentialId {
    /// The sequence number.
    pub id: i64,
    /// `prefix` followed by the 10-digit sequence.
    pub name: String,
}

/// Hands out ids that are unique and increasing across every process using the same parent
/// path: each id is the sequence number ZooKeeper gives a new sequential child of `parent`.
///
/// Each id costs one create; the node is only needed for its name, so it is created
/// ephemeral (it vanishes with a crashed process's session) and protected (a create whose
/// reply was lost is found again, never counted twice), and it is deleted together with the
/// next request (pipelined) or by [`close`](Self::close). Ids are not contiguous: the sequence
/// counts every create *and* delete under the parent, so keep other nodes out of it. The
/// sequence is ZooKeeper's signed 32-bit counter of the parent: after 2^31 changes under one
/// parent it wraps to negative numbers, at which point use a new parent. The parent is created
/// persistent (never a container, which the server removes when empty, restarting the count)
/// and must not be deleted while its ids matter.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_counters::SequentialIdGenerator;
/// let jobs = SequentialIdGenerator::new(client, "/ids/type2", "type2-job-")?;
/// jobs.start().await?;
/// let first = jobs.next_id().await?;
/// let batch = jobs.next_ids(100).await?;
/// assert!(batch[0].id > first.id);
/// println!("{}", first.name); // type2-job-0000000000
/// jobs.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SequentialIdGenerator {
    client: CuratorFramework,
    parent: String,
    prefix: String,
    pending: Mutex<Vec<String>>,
    /// The generator's name and lifecycle (it runs no task).
    core: RecipeCore,
}

impl SequentialIdGenerator {
    /// Ids from sequential children of `parent` named `prefix<sequence>`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad parent, [`Error::InvalidArgument`] for a prefix
    /// containing `/`.
    pub fn new(client: CuratorFramework, parent: &str, prefix: &str) -> Result<Self> {
        paths::validate(parent)?;
        if prefix.contains('/') {
            return Err(Error::InvalidArgument(format!(
                "an id prefix is a node name and may not contain '/': {prefix:?}"
            )));
        }
        paths::validate(&paths::join(parent, &format!("{prefix}0")))?;
        Ok(Self {
            core: RecipeCore::new(
                &client,
                "SequentialIdGenerator",
                parent,
                &RecipeOptions::new(),
            ),
            client,
            parent: parent.to_owned(),
            prefix: prefix.to_owned(),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// Creates the parent (persistent, with its parents) if it is missing, and lets
    /// [`next_id`](Self::next_id) hand out ids.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`], [`Error::Closed`]; connection errors (the generator is then
    /// not started and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the generator not started (the parent may exist).
    pub async fn start(&self) -> Result<()> {
        self.core.lifecycle().ensure_startable()?;
        match self
            .client
            .create()
            .creating_parents_if_needed()
            .for_path(&self.parent, [])
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
        self.core.lifecycle().start()
    }

    /// The next id.
    ///
    /// # Errors
    /// [`Error::NotStarted`] before [`start`](Self::start), [`Error::Closed`] after
    /// [`close`](Self::close); connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may use up an id (it is never handed out twice).
    pub async fn next_id(&self) -> Result<SequentialId> {
        let mut ids = self.next_ids(1).await?;
        Ok(ids.remove(0))
    }

    /// The next `count` ids, in increasing order, created in one pipelined burst.
    ///
    /// # Errors
    /// Connection errors (ids created before the failure are cleaned up and not returned).
    pub async fn next_ids(&self, count: usize) -> Result<Vec<SequentialId>> {
        self.core.lifecycle().ensure_started()?;
        let to_delete: Vec<String> = self.pending.lock().clone();
        let deletes = join_all(
            to_delete
                .iter()
                .map(|node| self.client.delete().for_path(node).into_future())
                .collect::<Vec<_>>(),
        );
        let path = paths::join(&self.parent, &self.prefix);
        let creates = join_all(
            (0..count)
                .map(|_| {
                    // Persistent parents, not containers: an empty container is removed by
                    // the server, and its replacement's counter would start over at 0.
                    self.client
                        .create()
                        .creating_parents_if_needed()
                        .with_protection()
                        .with_mode(CreateMode::EphemeralSequential)
                        .for_path(&path, [])
                        .into_future()
                })
                .collect::<Vec<_>>(),
        );
        let (deleted, created) = futures::join!(deletes, creates);
        let mut pending = self.pending.lock();
        for (node, result) in to_delete.iter().zip(deleted) {
            if matches!(result, Ok(()) | Err(Error::NoNode)) {
                pending.retain(|p| p != node);
            }
        }
        let mut ids = Vec::with_capacity(count);
        let mut failure = None;
        for result in created {
            match result {
                Ok(node) => {
                    let name = paths::strip_protection(paths::node_name(&node)).to_owned();
                    pending.push(node);
                    match paths::sequence(&name) {
                        Some(id) => ids.push(SequentialId { id, name }),
                        None => {
                            failure.get_or_insert(Error::InvalidArgument(format!(
                                "the sequence of {name:?} is not a non-negative number: the parent's counter wrapped"
                            )));
                        }
                    }
                }
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        match failure {
            Some(error) => Err(error),
            None => {
                ids.sort();
                Ok(ids)
            }
        }
    }

    /// Stops handing out ids and deletes the nodes of ids handed out that are still there.
    /// Idempotent.
    ///
    /// # Errors
    /// Connection errors (the nodes are ephemeral and go with the session anyway).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave some nodes to their session.
    pub async fn close(&self) -> Result<()> {
        self.core.lifecycle().close();
        let to_delete: Vec<String> = self.pending.lock().clone();
        let results = join_all(
            to_delete
                .iter()
                .map(|node| self.client.delete().for_path(node).into_future())
                .collect::<Vec<_>>(),
        )
        .await;
        let mut failure = None;
        let mut pending = self.pending.lock();
        for (node, result) in to_delete.iter().zip(results) {
            match result {
                Ok(()) | Err(Error::NoNode) => pending.retain(|p| p != node),
                Err(error) => {
                    failure.get_or_insert(error);
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

impl Recipe for SequentialIdGenerator {
    fn core(&self) -> &RecipeCore {
        &self.core
    }

    async fn start(&self) -> Result<()> {
        SequentialIdGenerator::start(self).await
    }

    async fn close(&self) -> Result<()> {
        SequentialIdGenerator::close(self).await
    }
}
