//! `SetPartitioner`: the members of a group divide a set of work items among themselves.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeEvents, RecipeOptions};
use curator_framework::{ConnectionState, CuratorFramework, Error, Result, paths};
use curator_locks::{InterProcessMutex, LockGuard};
use futures::StreamExt;
use futures::future::join_all;
use futures::stream::FuturesUnordered;
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use crate::{GroupMember, MemberEvent};

/// Where a [`SetPartitioner`] member stands. Every transition is published, in order, through
/// [`SetPartitioner::listenable`]; [`SetPartitioner::state`] is the latest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionState {
    /// Waiting for the membership to settle, then taking this member's share. Own nothing: do
    /// no work on any item.
    Allocating,
    /// This member holds these items (sorted): work on them, and on no other.
    Acquired {
        /// The items this member owns until the next state.
        items: Vec<String>,
    },
    /// The membership changed: finish or stop the work on the items, then call
    /// [`SetPartitioner::release_set`]. Members waiting for these items wait until then.
    Release,
    /// The items could not be kept (the connection was suspended or the session lost, or an
    /// allocation failed): stop working on them now. The partitioner lets them go and starts
    /// allocating again by itself once it can.
    Failure {
        /// What happened.
        reason: String,
    },
    /// Closed: the member left and holds nothing.
    Closed,
}

/// Which items a member takes: `(member id, every member's id sorted, every item sorted)` →
/// this member's items. Every member must use the same function.
pub type PartitionFn = dyn Fn(&str, &[String], &[String]) -> Vec<String> + Send + Sync;

/// The default partition: items in sorted order dealt round-robin to members in sorted order,
/// so shares differ by at most one item.
///
/// ```
/// use curator_nodes::round_robin;
/// let members = vec!["a".to_string(), "b".to_string()];
/// let items: Vec<String> = ["1", "2", "3"].iter().map(|s| s.to_string()).collect();
/// assert_eq!(round_robin("a", &members, &items), vec!["1", "3"]);
/// assert_eq!(round_robin("b", &members, &items), vec!["2"]);
/// ```
pub fn round_robin(member: &str, members: &[String], items: &[String]) -> Vec<String> {
    let Some(index) = members.iter().position(|m| m == member) else {
        return Vec::new();
    };
    items
        .iter()
        .skip(index)
        .step_by(members.len())
        .cloned()
        .collect()
}

/// Options of a [`SetPartitioner`]; see [`SetPartitioner::builder`].
pub struct SetPartitionerBuilder {
    client: CuratorFramework,
    path: String,
    items: Vec<String>,
    id: Option<String>,
    settle: Duration,
    partition: Arc<PartitionFn>,
    options: RecipeOptions,
}

impl fmt::Debug for SetPartitionerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetPartitionerBuilder")
            .field("path", &self.path)
            .field("items", &self.items.len())
            .field("id", &self.id)
            .field("settle", &self.settle)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SetPartitionerBuilder {
    /// This member's id in the group (default: a random UUID). Ids must be unique.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// How long the membership must stay unchanged before a member takes its share
    /// (default 1 s). Longer means fewer re-allocations while many members come and go.
    pub fn settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// The partitioner's name (default: its path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let partitioner = curator_nodes::SetPartitioner::builder(client, "/partitions/tenant-17", ["a", "b"])
    ///     .metrics_name("tenants")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// A partition function other than [`round_robin`] (the same on every member).
    pub fn partition_with(
        mut self,
        partition: impl Fn(&str, &[String], &[String]) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.partition = Arc::new(partition);
        self
    }

    /// The partitioner (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path, member id or item (each item and the id must be
    /// one node name); [`Error::InvalidArgument`] for an empty or repeated item.
    pub fn build(self) -> Result<SetPartitioner> {
        paths::validate(&self.path)?;
        let mut items = self.items;
        items.sort();
        if items.is_empty() {
            return Err(Error::InvalidArgument(
                "a set partitioner needs at least one item".into(),
            ));
        }
        if let Some(pair) = items.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(Error::InvalidArgument(format!(
                "item {:?} is listed twice",
                pair[0]
            )));
        }
        let id = self
            .id
            .unwrap_or_else(|| curator_framework::random::uuid().to_string());
        let group = GroupMember::new(
            self.client.clone(),
            &paths::join(&self.path, MEMBERS),
            &id,
            b"",
        )?;
        let locks_path = paths::join(&self.path, LOCKS);
        let mut locks = Vec::with_capacity(items.len());
        for item in &items {
            let lock_path = paths::join(&locks_path, item);
            if item.is_empty() || paths::node_name(&lock_path) != item {
                return Err(Error::InvalidPath {
                    path: lock_path,
                    reason: format!("item {item:?} is not one node name"),
                });
            }
            locks.push(
                InterProcessMutex::builder(self.client.clone(), &lock_path)
                    .node_data(id.as_bytes())
                    .build()?,
            );
        }
        let core = RecipeCore::new(&self.client, "SetPartitioner", &self.path, &self.options);
        let inner = Arc::new(Inner {
            transitions: core.listener_container(&self.client),
            core,
            client: self.client,
            path: self.path,
            id,
            items,
            locks,
            settle: self.settle,
            partition: self.partition,
            group,
            state: watch::Sender::new(PartitionState::Allocating),
            release: Notify::new(),
            left_held: Mutex::new(Vec::new()),
        });
        Ok(SetPartitioner {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

/// The group's members: `<path>/members/<id>`.
const MEMBERS: &str = "members";
/// The items' locks: `<path>/locks/<item>` (Curator `InterProcessMutex` layout).
const LOCKS: &str = "locks";

struct Inner {
    client: CuratorFramework,
    path: String,
    id: String,
    items: Vec<String>,
    /// One per item, in the order of `items`.
    locks: Vec<InterProcessMutex>,
    settle: Duration,
    partition: Arc<PartitionFn>,
    group: GroupMember,
    state: watch::Sender<PartitionState>,
    transitions: ListenerContainer<PartitionState>,
    release: Notify,
    /// The partitioner's name, lifecycle and allocation loop.
    core: RecipeCore,
    /// The locks the loop held when it was cancelled, for `close` to release.
    left_held: Mutex<Vec<LockGuard>>,
}

impl Inner {
    fn set(&self, state: PartitionState) {
        tracing::debug!(path = %self.path, id = %self.id, ?state, "partition state");
        self.state.send_replace(state.clone());
        self.transitions.publish(state);
    }
}

/// Members of a group divide a fixed set of work items among themselves (the re-assignment
/// pattern of the ZooKeeper recipes; Kazoo's `SetPartitioner`). Once the group is stable, every
/// item is owned by exactly one member.
///
/// Each member joins the group `<path>/members` (a [`GroupMember`]). When the membership has
/// not changed for the settle time, every member computes its share with the same partition
/// function over the sorted member ids and takes a lock on each of its items
/// (`<path>/locks/<item>`, an [`InterProcessMutex`], so no two members ever hold an item at once,
/// even while they disagree about the membership). States, all published in order:
///
/// - [`Allocating`](PartitionState::Allocating) → [`Acquired`](PartitionState::Acquired) when
///   every lock of the share is held;
/// - `Acquired` → [`Release`](PartitionState::Release) when a member joins or leaves; the
///   application stops its work and calls [`release_set`](SetPartitioner::release_set), which
///   unlocks everything and starts `Allocating` again;
/// - any → [`Failure`](PartitionState::Failure) when the connection is suspended or the session
///   lost (under the client's [`ConnectionStateErrorPolicy`](curator_framework::state::ConnectionStateErrorPolicy)):
///   stop working at once; the partitioner unlocks what it held once connected and allocates
///   again by itself;
/// - [`close`](SetPartitioner::close) → [`Closed`](PartitionState::Closed).
///
/// A member that never calls `release_set` keeps its items, and the members whose new share
/// includes them wait in `Allocating`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use futures::StreamExt;
/// use curator_nodes::{PartitionState, SetPartitioner};
/// let items = (0..16).map(|shard| format!("shard-{shard}"));
/// let partitioner = SetPartitioner::builder(client, "/jobs/log-collectors", items)
///     .id("collector-1")
///     .build()?;
/// let mut states = partitioner.listenable().stream();
/// partitioner.start().await?;
/// while let Some(state) = states.next().await {
///     match state {
///         PartitionState::Acquired { items } => println!("collecting {items:?}"),
///         PartitionState::Release => {
///             // stop collecting, then:
///             partitioner.release_set().await?;
///         }
///         PartitionState::Failure { reason } => println!("stop collecting now: {reason}"),
///         PartitionState::Closed => break,
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SetPartitioner {
    inner: Arc<Inner>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

impl fmt::Debug for SetPartitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetPartitioner")
            .field("path", &self.inner.path)
            .field("id", &self.inner.id)
            .field("state", &*self.inner.state.borrow())
            .finish_non_exhaustive()
    }
}

impl SetPartitioner {
    /// Options for a member of the partition group at `path` over `items`.
    pub fn builder<I: Into<String>>(
        client: CuratorFramework,
        path: &str,
        items: impl IntoIterator<Item = I>,
    ) -> SetPartitionerBuilder {
        SetPartitionerBuilder {
            client,
            path: path.to_owned(),
            items: items.into_iter().map(Into::into).collect(),
            id: None,
            settle: Duration::from_secs(1),
            partition: Arc::new(round_robin),
            options: RecipeOptions::new(),
        }
    }

    /// Joins the group and starts allocating (in the background; returns at once).
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    pub async fn start(&self) -> Result<()> {
        let core = &self.inner.core;
        core.lifecycle().start()?;
        // Subscribed before the group starts, so no membership change goes unheard.
        let members = self.inner.group.stream();
        let connection = self.inner.client.connection_state_stream();
        core.tasks()
            .spawn(run(Arc::clone(&self.inner), members, connection))
            .detach();
        self.inner.set(PartitionState::Allocating);
        self.inner.group.start().await
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// Every item, sorted.
    pub fn items(&self) -> &[String] {
        &self.inner.items
    }

    /// The current state.
    pub fn state(&self) -> PartitionState {
        self.inner.state.borrow().clone()
    }

    /// The items held now (empty unless [`Acquired`](PartitionState::Acquired)).
    pub fn acquired(&self) -> Vec<String> {
        match &*self.inner.state.borrow() {
            PartitionState::Acquired { items } => items.clone(),
            _ => Vec::new(),
        }
    }

    /// Where to add listeners of state transitions (every one, in order).
    pub fn listenable(&self) -> Listenable<PartitionState> {
        self.inner.transitions.listenable()
    }

    /// Every state transition from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<PartitionState> {
        self.listenable().stream()
    }

    /// In [`Release`](PartitionState::Release): lets the items go and waits until they are
    /// unlocked; the partitioner then allocates again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] in any other state (a `Failure` releases by itself).
    ///
    /// # Cancellation safety
    /// Safe: the release is asked for at the first poll; dropping the future only stops the
    /// wait.
    pub async fn release_set(&self) -> Result<()> {
        let mut state = self.inner.state.subscribe();
        if *state.borrow_and_update() != PartitionState::Release {
            return Err(Error::InvalidArgument(format!(
                "release_set is for the Release state; the partitioner is {:?}",
                *state.borrow()
            )));
        }
        self.inner.release.notify_one();
        tokio::select! {
            _ = state.wait_for(|s| *s != PartitionState::Release) => {}
            // The client closed: nothing releases any more (its session took the locks along).
            () = self.inner.core.tasks().cancelled() => {}
        }
        Ok(())
    }

    /// Stops allocating, unlocks every item (and waits for it), leaves the group and stops.
    /// Idempotent: later calls return `Ok(())`; closing a partitioner that never started is
    /// fine.
    ///
    /// # Errors
    /// Connection errors leaving the group (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the locks released in the background (as guards dropped),
    /// and may leave this member's node in place (ephemeral: it goes with the session).
    pub async fn close(&self) -> Result<()> {
        if !self.inner.core.close_tasks().await {
            return Ok(());
        }
        let held = std::mem::take(&mut *self.inner.left_held.lock());
        release_all(held).await;
        let left = self.inner.group.close().await;
        self.inner.set(PartitionState::Closed);
        left
    }
}

impl Recipe for SetPartitioner {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        SetPartitioner::start(self).await
    }

    async fn close(&self) -> Result<()> {
        SetPartitioner::close(self).await
    }
}

impl RecipeEvents for SetPartitioner {
    type Event = PartitionState;

    fn listenable(&self) -> Listenable<PartitionState> {
        SetPartitioner::listenable(self)
    }
}

/// Why a held share ends.
enum Interruption {
    Membership,
    Connection(ConnectionState),
}

/// The locks the loop holds. If the loop's task is cancelled (the partitioner closes), they go
/// to `Inner::left_held`, where `close` releases them and waits for it.
struct Held {
    inner: Arc<Inner>,
    guards: Vec<LockGuard>,
}

impl Held {
    /// Takes the guards, to release them here.
    fn take(&mut self) -> Vec<LockGuard> {
        std::mem::take(&mut self.guards)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.guards.is_empty() {
            self.inner.left_held.lock().append(&mut self.guards);
        }
    }
}

/// The allocation loop: runs until its task is cancelled (the partitioner's or the client's
/// close).
async fn run(
    inner: Arc<Inner>,
    mut members: ListenerStream<MemberEvent>,
    mut connection: ListenerStream<ConnectionState>,
) {
    let policy = inner.client.connection_state_error_policy();
    loop {
        if !matches!(*inner.state.borrow(), PartitionState::Allocating) {
            inner.set(PartitionState::Allocating);
        }
        // Settle: the membership is loaded and unchanged for the settle time.
        // (Err: the member closed; the task is being cancelled.)
        let _ = inner.group.loaded().await;
        loop {
            tokio::select! {
                () = membership_change(&mut members) => continue,
                () = tokio::time::sleep(inner.settle) => break,
            }
        }
        let ids: Vec<String> = inner.group.current_members().into_keys().collect();
        let share: Vec<usize> = {
            let mine = (inner.partition)(&inner.id, &ids, &inner.items);
            let mut share: Vec<usize> = mine
                .iter()
                .filter_map(|item| inner.items.binary_search(item).ok())
                .collect();
            share.sort_unstable();
            share.dedup();
            share
        };
        let acquire = join_all(share.iter().map(|&i| inner.locks[i].acquire()));
        let guards = tokio::select! {
            () = membership_change(&mut members) => continue,
            state = trouble(&mut connection, policy) => {
                fail(&inner, format!("connection {state:?} while allocating")).await;
                continue;
            }
            results = acquire => results,
        };
        let (ok, failed): (Vec<_>, Vec<_>) = guards.into_iter().partition(Result::is_ok);
        let mut held = Held {
            inner: Arc::clone(&inner),
            guards: ok.into_iter().filter_map(Result::ok).collect(),
        };
        if let Some(Err(error)) = failed.into_iter().next() {
            release_all(held.take()).await;
            fail(&inner, format!("allocation failed: {error}")).await;
            continue;
        }
        let items: Vec<String> = share.iter().map(|&i| inner.items[i].clone()).collect();
        inner.set(PartitionState::Acquired { items });
        // Any lock lost (its node gone) ends the share.
        let mut lost: FuturesUnordered<_> = held.guards.iter().map(|guard| guard.lost()).collect();
        let why = tokio::select! {
            () = membership_change(&mut members) => Interruption::Membership,
            state = trouble(&mut connection, policy) => Interruption::Connection(state),
            Some(()) = lost.next(), if !held.guards.is_empty() => {
                Interruption::Connection(ConnectionState::Lost)
            }
        };
        drop(lost);
        match why {
            Interruption::Connection(state) => {
                inner.set(PartitionState::Failure {
                    reason: format!("connection {state:?}: the items may be taken by others"),
                });
                release_all(held.take()).await;
                wait_connected(&inner).await;
            }
            Interruption::Membership => {
                inner.set(PartitionState::Release);
                let failure = tokio::select! {
                    () = inner.release.notified() => None,
                    state = trouble(&mut connection, policy) => Some(state),
                };
                if let Some(state) = failure {
                    inner.set(PartitionState::Failure {
                        reason: format!("connection {state:?} while releasing"),
                    });
                }
                release_all(held.take()).await;
            }
        }
    }
}

/// Reports a failure and waits a settle time (or until closed) before allocating again.
async fn fail(inner: &Inner, reason: String) {
    inner.set(PartitionState::Failure { reason });
    wait_connected(inner).await;
}

/// Waits until the client is connected (or closed), at least a settle time.
async fn wait_connected(inner: &Inner) {
    tokio::time::sleep(inner.settle).await;
    while let Err(Error::NotConnected { .. }) = inner
        .client
        .block_until_connected(Duration::from_secs(60))
        .await
    {}
}

async fn release_all(held: Vec<LockGuard>) {
    join_all(held.into_iter().map(LockGuard::release)).await;
}

/// Resolves at the next join or leave (never, once the group stopped).
async fn membership_change(members: &mut ListenerStream<MemberEvent>) {
    while let Some(event) = members.next().await {
        if matches!(event, MemberEvent::Joined { .. } | MemberEvent::Left { .. }) {
            return;
        }
    }
    std::future::pending().await
}

/// Resolves at the next connection state that is an error under `policy`.
async fn trouble(
    connection: &mut ListenerStream<ConnectionState>,
    policy: curator_framework::state::ConnectionStateErrorPolicy,
) -> ConnectionState {
    while let Some(state) = connection.next().await {
        if policy.is_error_state(state) {
            return state;
        }
    }
    std::future::pending().await
}
