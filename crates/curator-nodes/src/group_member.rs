//! `GroupMember`: membership of a group, as an ephemeral node per member, and the group's
//! current members from a cache.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use curator_caches::{CacheEvent, CuratorCache};
use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::recipe::{Recipe, RecipeCore, RecipeEvents, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};

use crate::PersistentNode;

/// A change in a group's membership, as seen by one member's cache.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemberEvent {
    /// A member joined (or was found by the initial load).
    Joined {
        /// The member's id (its node's name).
        id: String,
        /// Its payload.
        data: Vec<u8>,
    },
    /// A member changed its payload.
    Changed {
        /// The member's id.
        id: String,
        /// Its new payload.
        data: Vec<u8>,
    },
    /// A member left: it closed, or its session ended.
    Left {
        /// The member's id.
        id: String,
    },
    /// The initial load of the membership is done (once, after its `Joined` events).
    Initialized,
    /// The membership cache cannot follow the group: a read it cannot recover from by reading
    /// again (no permission; a listing longer than the client's `max_listing_bytes`, as
    /// [`Error::ResponseTooLarge`](curator_framework::Error::ResponseTooLarge)), or more members
    /// than the cache's limit. [`current_members`](GroupMember::current_members) stays as last
    /// known; nothing is read again until a watch fires or the client reconnects.
    Error(curator_caches::CacheError),
}

struct Inner {
    path: Arc<str>,
    id: String,
    node: PersistentNode,
    cache: CuratorCache,
    /// The member's name and lifecycle (its work is its node's and its cache's).
    core: RecipeCore,
    /// Logs the cache's errors (once, however many listen).
    _logging: ListenerHandle,
}

/// Membership of a group (Curator's `GroupMember`): this process is the ephemeral node
/// `<path>/<id>` holding a payload, kept in place across connection loss and session expiry by a
/// [`PersistentNode`], and the group is followed by a [`CuratorCache`] of `<path>`.
///
/// - [`current_members`](Self::current_members) always contains this member with its latest
///   payload (as Curator's does), even before its node is created or while it is re-created.
/// - Membership changes arrive as [`MemberEvent`]s through [`listenable`](Self::listenable):
///   the cache's events, translated as each listener receives them (no dispatch of its own).
/// - Two processes that join with the same id share one node: the later one replaces the
///   earlier one's node (ids must be unique within a group).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_nodes::{GroupMember, MemberEvent};
/// let member = GroupMember::new(client, "/groups/workers", "worker-1", b"10.0.0.5")?;
/// let _watching = member.listenable().add_listener(|event| match event {
///     MemberEvent::Joined { id, .. } => println!("{id} joined"),
///     MemberEvent::Left { id } => println!("{id} left"),
///     _ => {}
/// });
/// member.start().await?;
/// member.initialized().await?;
/// for (id, payload) in member.current_members() {
///     println!("{id}: {payload:?}");
/// }
/// member.close().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct GroupMember {
    inner: Arc<Inner>,
}

impl fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupMember")
            .field("path", &self.inner.path)
            .field("id", &self.inner.id)
            .finish_non_exhaustive()
    }
}

impl GroupMember {
    /// Membership of the group at `path` with id `id` and `payload`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path or an id that is not one node name;
    /// [`Error::InvalidArgument`] for a payload over 1 MiB.
    pub fn new(
        client: CuratorFramework,
        path: &str,
        id: &str,
        payload: impl AsRef<[u8]>,
    ) -> Result<Self> {
        paths::validate(path)?;
        let node_path = paths::join(path, id);
        if id.is_empty() || paths::node_name(&node_path) != id {
            return Err(Error::InvalidPath {
                path: node_path,
                reason: format!("member id {id:?} is not one node name"),
            });
        }
        paths::validate(&node_path)?;
        let node =
            PersistentNode::builder(client.clone(), &node_path, CreateMode::Ephemeral, payload)
                .build()?;
        let core = RecipeCore::new(&client, "GroupMember", &node_path, &RecipeOptions::new());
        let cache = CuratorCache::builder(client, path).build()?;
        let logging = cache.listenable().add_listener({
            let group = path.to_owned();
            move |event| {
                if let CacheEvent::Error(error) = event {
                    tracing::warn!(group, %error, "group membership cache error");
                }
            }
        });
        Ok(Self {
            inner: Arc::new(Inner {
                path: Arc::from(path),
                id: id.to_owned(),
                node,
                cache,
                core,
                _logging: logging,
            }),
        })
    }

    /// Joins the group (the node is created in the background) and starts following it;
    /// returns at once.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started; [`Error::Closed`] after `close`.
    ///
    /// # Cancellation safety
    /// Safe: it does not wait for anything.
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().start()?;
        self.inner.node.start().await?;
        self.inner.cache.start().await
    }

    /// Waits until this member joined (its node was created the first time) and the
    /// membership's initial load is done; bound the wait with `tokio::time::timeout`.
    ///
    /// # Errors
    /// [`Error::Closed`] when the member (or its client) was closed first.
    ///
    /// # Cancellation safety
    /// Safe: it only waits.
    pub async fn initialized(&self) -> Result<()> {
        self.inner.node.initialized().await?;
        self.loaded().await
    }

    /// Waits until the membership's initial load is done.
    pub(crate) async fn loaded(&self) -> Result<()> {
        self.inner.cache.initialized().await
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The group's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Sets this member's payload (Curator's `setThisData`).
    ///
    /// # Errors
    /// As [`PersistentNode::set_data`].
    ///
    /// # Cancellation safety
    /// As [`PersistentNode::set_data`].
    pub async fn set_this_data(&self, payload: impl AsRef<[u8]>) -> Result<()> {
        self.inner.node.set_data(payload).await
    }

    /// The members by id with their payloads, this one included (with its latest payload).
    pub fn current_members(&self) -> BTreeMap<String, Vec<u8>> {
        let mut members: BTreeMap<String, Vec<u8>> = self
            .inner
            .cache
            .children(&self.inner.path)
            .into_iter()
            .map(|child| {
                let data = child.data().map(<[u8]>::to_vec).unwrap_or_default();
                (child.name().to_owned(), data)
            })
            .collect();
        members.insert(self.inner.id.clone(), self.inner.node.data());
        members
    }

    /// The id of the member whose node is at `path` (Curator's `idFromPath`).
    pub fn id_from_path(path: &str) -> &str {
        paths::node_name(path)
    }

    /// Where to add listeners of [`MemberEvent`]s (closures, objects, senders).
    pub fn listenable(&self) -> Listenable<MemberEvent> {
        let group = Arc::clone(&self.inner.path);
        self.inner
            .cache
            .listenable()
            .filter_map(move |event| member_event(&group, event))
    }

    /// Every [`MemberEvent`] from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<MemberEvent> {
        self.listenable().stream()
    }

    /// Leaves the group (deletes this member's node) and stops following it. Idempotent: later
    /// calls return `Ok(())`; closing a member that never started is fine.
    ///
    /// # Errors
    /// Connection errors deleting the node (the delete goes on in the background).
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the node in place, no longer kept (it is ephemeral: it
    /// goes with the session).
    pub async fn close(&self) -> Result<()> {
        if !self.inner.core.close_tasks().await {
            return Ok(());
        }
        self.inner.cache.close().await?;
        self.inner.node.close().await
    }
}

impl Recipe for GroupMember {
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        GroupMember::start(self).await
    }

    async fn close(&self) -> Result<()> {
        GroupMember::close(self).await
    }
}

impl RecipeEvents for GroupMember {
    type Event = MemberEvent;

    fn listenable(&self) -> Listenable<MemberEvent> {
        GroupMember::listenable(self)
    }
}

/// The membership event a cache event of the group's subtree means, if any.
fn member_event(group: &str, event: CacheEvent) -> Option<MemberEvent> {
    let member = |path: &str| {
        (paths::parent(path) == Some(group)).then(|| paths::node_name(path).to_owned())
    };
    let data =
        |node: &curator_caches::ChildData| node.data().map(<[u8]>::to_vec).unwrap_or_default();
    match event {
        CacheEvent::Created { node } => member(node.path()).map(|id| MemberEvent::Joined {
            id,
            data: data(&node),
        }),
        CacheEvent::Changed { node, .. } => member(node.path()).map(|id| MemberEvent::Changed {
            id,
            data: data(&node),
        }),
        CacheEvent::Deleted { old } => member(old.path()).map(|id| MemberEvent::Left { id }),
        CacheEvent::Initialized => Some(MemberEvent::Initialized),
        // Logged by the member's own listener too.
        CacheEvent::Error(error) => Some(MemberEvent::Error(error)),
        _ => None,
    }
}
