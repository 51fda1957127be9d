//! `create()`: create a node, with every mode, parents, ACL, TTL, protection and idempotence.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;

use crate::acl::Acl;
use crate::client::{CuratorFramework, Inner};
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture, op_span};
use crate::paths;
use crate::types::{CreateMode, Stat, validate_ttl};
use crate::wire::WireSession;

/// Options of `create()`.
///
/// **Protection** (`with_protection`) names the node `_c_<uuid>-<name>`, exactly as Curator does.
/// If the connection drops while the create is in flight, the retry first looks for a child of
/// the parent with that prefix and adopts it instead of creating a second node; an ephemeral
/// node found from an older session is deleted and created anew. If the create finally fails
/// with a connection error, or its future is dropped before it finished, the node (if it was
/// created unseen) is deleted in the background. Use it for sequential and ephemeral nodes whose
/// duplicates would hurt (locks, latches, registrations).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_framework::CreateMode;
/// let path = client.create().creating_parents_if_needed().with_protection()
///     .with_mode(CreateMode::EphemeralSequential).for_path("/jobs/job-", b"x").await?;
/// client.create().with_mode(CreateMode::PersistentWithTtl).with_ttl(Duration::from_secs(60))
///     .for_path("/leases/a", b"").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct CreateBuilder {
    client: CuratorFramework,
    mode: CreateMode,
    acl: Option<Vec<Acl>>,
    ttl: Option<Duration>,
    parents: Option<ParentMode>,
    protected: bool,
    idempotent: bool,
    or_set_data: bool,
    compress: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParentMode {
    Persistent,
    Containers,
}

impl CreateBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            mode: CreateMode::Persistent,
            acl: None,
            ttl: None,
            parents: None,
            protected: false,
            idempotent: false,
            or_set_data: false,
            compress: None,
        }
    }

    /// The create mode (default [`CreateMode::Persistent`]).
    pub fn with_mode(mut self, mode: CreateMode) -> Self {
        self.mode = mode;
        self
    }

    /// The node's ACL (default: the client's ACL provider's choice for the path).
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// The TTL of a `PersistentWithTtl` or `PersistentSequentialWithTtl` node.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Creates missing parents as persistent nodes with empty data.
    pub fn creating_parents_if_needed(mut self) -> Self {
        self.parents = Some(ParentMode::Persistent);
        self
    }

    /// Creates missing parents as container nodes (persistent if the client was built with
    /// `dont_use_container_parents`), so the server removes them once empty.
    pub fn creating_parent_containers_if_needed(mut self) -> Self {
        self.parents = Some(ParentMode::Containers);
        self
    }

    /// Protects the create against lost replies (see the type's docs).
    pub fn with_protection(mut self) -> Self {
        self.protected = true;
        self
    }

    /// When a retry meets `NodeExists`, succeeds if the node holds exactly this data at version
    /// 0: the first attempt did apply.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// When the node exists, overwrites its data instead of failing.
    pub fn or_set_data(mut self) -> Self {
        self.or_set_data = true;
        self
    }

    #[cfg(feature = "compression")]
    /// Compresses the data with the client's
    /// [`CompressionProvider`](crate::compression::CompressionProvider) (gzip unless the builder
    /// set another) before it is sent, as Curator's `compressed()`. The 1 MiB limit applies to
    /// the compressed data. Parents made by `creating_parents_if_needed` keep empty,
    /// uncompressed data.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let big = "a line of text\n".repeat(10_000);
    /// client.create().compressed().for_path("/docs/big", big.as_bytes()).await?;
    /// let (data, _) = client.get_data().decompressed().for_path("/docs/big").await?;
    /// assert_eq!(data, big.as_bytes());
    /// # Ok(()) }
    /// ```
    pub fn compressed(mut self) -> Self {
        self.compress = Some(true);
        self
    }

    /// Sends the data as it is, also when the client compresses by default
    /// ([`enable_compression`](crate::CuratorFrameworkBuilder::enable_compression)); Curator's
    /// `uncompressed()`.
    pub fn uncompressed(mut self) -> Self {
        self.compress = Some(false);
        self
    }

    /// Creates `path` with `data`; yields the path created (with its sequence number for
    /// sequential modes, and its protected prefix, namespace removed).
    pub fn for_path(self, path: &str, data: impl AsRef<[u8]>) -> Create {
        let plan = self.plan(path, data.as_ref().to_vec());
        Create {
            client: self.client,
            plan,
        }
    }

    /// Creates `path` with the client's default data (empty unless set on the builder).
    pub fn for_path_with_default_data(self, path: &str) -> Create {
        let data = self.client.inner.settings.default_data.clone();
        let plan = self.plan(path, data);
        Create {
            client: self.client,
            plan,
        }
    }
}

/// An awaitable `create()`; yields the created path.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Create {
    client: CuratorFramework,
    plan: Result<Plan>,
}

impl Create {
    /// Yields the created node's stat as well as its path.
    pub fn with_stat(self) -> CreateWithStat {
        CreateWithStat(self)
    }
}

/// `create()...for_path(..).with_stat()`: yields `(path, stat)`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct CreateWithStat(Create);

impl IntoFuture for Create {
    type Output = Result<String>;
    type IntoFuture = OpFuture<String>;

    fn into_future(self) -> Self::IntoFuture {
        match self.plan {
            Ok(plan) => plan.start(&self.client, |(path, _)| path),
            Err(error) => OpFuture::ready(Err(error)),
        }
    }
}

impl IntoFuture for CreateWithStat {
    type Output = Result<(String, Stat)>;
    type IntoFuture = OpFuture<(String, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        match self.0.plan {
            Ok(plan) => plan.start(&self.0.client, |created| created),
            Err(error) => OpFuture::ready(Err(error)),
        }
    }
}

/// A parent a create may make.
#[derive(Debug)]
struct Ancestor {
    /// The full path (namespace applied).
    path: String,
    /// The ACL provider's choice for it.
    acl: Vec<Acl>,
    /// Why the client's schema set forbids creating it, if it does: it must then already exist.
    refused: Option<Error>,
}

/// Everything a create needs, validated, with the namespace applied.
#[derive(Debug)]
struct Plan {
    /// The full path to create (protected name included).
    path: String,
    data: Vec<u8>,
    mode: CreateMode,
    acl: Vec<Acl>,
    ttl: Option<Duration>,
    /// The mode of missing parents, when they are to be created.
    parents: Option<CreateMode>,
    /// Each ancestor of `path`, top down, when parents are to be created.
    ancestors: Vec<Ancestor>,
    /// `(parent, "_c_<uuid>-")` when protected.
    protection: Option<(String, String)>,
    idempotent: bool,
    or_set_data: bool,
}

impl CreateBuilder {
    /// Validates everything and applies the namespace.
    fn plan(&self, path: &str, data: Vec<u8>) -> Result<Plan> {
        let builder = self;
        let client = &self.client;
        let mode = builder.mode;
        let fixed = if mode.is_sequential() {
            client.sequential_target(path)?
        } else {
            client.target(path)?
        };
        if &*fixed == "/" {
            return Err(Error::invalid_path(path, "the root node cannot be created"));
        }
        if let Some(set) = client.schemas() {
            set.check_create(path, mode, &data)?;
        }
        let mut fixed = fixed.to_string();
        let data = ops::outgoing_data(client, path, data, builder.compress)?;
        match (mode.is_ttl(), builder.ttl) {
            (true, Some(ttl)) => validate_ttl(ttl)?,
            (true, None) => {
                return Err(Error::InvalidArgument(format!(
                    "create mode {mode:?} needs a TTL (with_ttl)"
                )));
            }
            (false, Some(_)) => {
                return Err(Error::InvalidArgument(format!(
                    "create mode {mode:?} takes no TTL"
                )));
            }
            (false, None) => {}
        }
        let protection = if builder.protected {
            let (parent, name) = match fixed.rsplit_once('/') {
                Some(("", name)) => ("/".to_owned(), name.to_owned()),
                Some((parent, name)) => (parent.to_owned(), name.to_owned()),
                None => unreachable!("validated paths are absolute"),
            };
            let prefix = paths::protected_prefix(&crate::random::uuid());
            fixed = paths::join(&parent, &format!("{prefix}{name}"));
            Some((parent, prefix))
        } else {
            None
        };
        let acl = builder
            .acl
            .clone()
            .unwrap_or_else(|| client.inner.settings.acl_provider.acl_for_path(&fixed));
        if acl.is_empty() {
            return Err(Error::InvalidArgument(
                "an ACL needs at least one entry".into(),
            ));
        }
        if let Some(set) = client.schemas() {
            set.check_acl(path, &acl)?;
        }
        let parents = builder.parents.map(|parents| match parents {
            ParentMode::Containers if client.inner.settings.use_container_parents => {
                CreateMode::Container
            }
            _ => CreateMode::Persistent,
        });
        let provider = &client.inner.settings.acl_provider;
        let ancestors = match parents {
            Some(parent_mode) => {
                let full = paths::ancestors(&fixed);
                // The caller's ancestors are the last of the full path's (the namespace's own
                // nodes come first, and are not the schema set's business).
                let given = paths::ancestors(path);
                let first_given = full.len().saturating_sub(given.len());
                full.into_iter()
                    .enumerate()
                    .map(|(index, p)| {
                        let acl = provider.acl_for_path(p);
                        let refused = match (client.schemas(), index.checked_sub(first_given)) {
                            (Some(set), Some(at)) => {
                                set.check_parent(given[at], parent_mode, &acl).err()
                            }
                            _ => None,
                        };
                        Ancestor {
                            path: p.to_owned(),
                            acl,
                            refused,
                        }
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        Ok(Plan {
            ancestors,
            path: fixed,
            data,
            mode,
            acl,
            ttl: builder.ttl,
            parents,
            protection,
            idempotent: builder.idempotent,
            or_set_data: builder.or_set_data,
        })
    }
}

/// Deletes a protected create's node in the background unless disarmed: the create's future
/// was dropped, or failed in a way that may have created the node unseen.
struct CleanupGuard {
    inner: Arc<Inner>,
    protection: Option<(String, String)>,
}

impl CleanupGuard {
    fn disarm(&mut self) {
        self.protection = None;
    }
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        if let Some((parent, prefix)) = self.protection.take() {
            tracing::debug!(
                parent,
                prefix,
                "protected create abandoned; cleaning up in the background"
            );
            self.inner.delete_protected_in_background(parent, prefix);
        }
    }
}

impl Plan {
    /// Starts the create; `output` picks what it yields from the created path and stat.
    fn start<U: Send + 'static>(
        self,
        client: &CuratorFramework,
        output: fn((String, Stat)) -> U,
    ) -> OpFuture<U> {
        let plan = Arc::new(self);
        // Owned by `finish`: dropped with the operation's future, it cleans up in the background
        // unless the result proves nothing was left behind.
        let mut guard = CleanupGuard {
            inner: Arc::clone(&client.inner),
            protection: plan.protection.clone(),
        };
        let span = op_span!("zk.create", client, plan.path);
        let unfix = client.clone();
        let attempt = move |session: Arc<WireSession>, attempt: u32| {
            let plan = Arc::clone(&plan);
            async move { plan.attempt(&session, attempt).await }
        };
        ops::run(client, span, attempt, move |result| {
            match &result {
                // Failures that prove nothing was created need no cleanup.
                Ok(_)
                | Err(Error::NodeExists | Error::NoNode | Error::NoAuth | Error::InvalidAcl) => {
                    guard.disarm()
                }
                Err(Error::InvalidArgument(_) | Error::InvalidPath { .. } | Error::NotStarted) => {
                    guard.disarm()
                }
                Err(_) => {}
            }
            drop(guard);
            result.map(|(path, stat)| output((unfix.unfix_path(&path), stat)))
        })
    }

    async fn attempt(&self, session: &WireSession, attempt: u32) -> Result<(String, Stat)> {
        if attempt > 0 {
            if let Some(found) = self.find_protected(session).await? {
                return Ok(found);
            }
        }
        match self.create_once(session).await {
            Err(Error::NoNode) if self.parents.is_some() => {
                self.create_parents(session).await?;
                self.create_once(session).await
            }
            Err(Error::NodeExists) if self.or_set_data => {
                let stat = session.set_data(&self.path, &self.data, None).await?;
                Ok((self.path.clone(), stat))
            }
            Err(Error::NodeExists) if self.idempotent && attempt > 0 => {
                let (data, stat) = session.get_data(&self.path).await?;
                if stat.version == 0 && data == self.data {
                    Ok((self.path.clone(), stat))
                } else {
                    Err(Error::NodeExists)
                }
            }
            other => other,
        }
    }

    async fn create_once(&self, session: &WireSession) -> Result<(String, Stat)> {
        session
            .create(&self.path, &self.data, self.mode, &self.acl, self.ttl)
            .await
    }

    /// Creates every missing ancestor, all requests in flight together (ZooKeeper applies them
    /// in order, top down). An ancestor the schema set forbids creating is looked up first: if
    /// it exists it is left alone (no create is sent for it), if it is missing the create fails
    /// with the schema violation before any parent is sent.
    async fn create_parents(&self, session: &WireSession) -> Result<()> {
        let mode = self.parents.unwrap_or(CreateMode::Persistent);
        let mut existing = vec![false; self.ancestors.len()];
        for (index, ancestor) in self.ancestors.iter().enumerate() {
            if let Some(refused) = &ancestor.refused {
                if session.exists(&ancestor.path).await?.is_none() {
                    return Err(refused.clone());
                }
                existing[index] = true;
            }
        }
        let creates = self
            .ancestors
            .iter()
            .zip(existing)
            .filter(|(_, existing)| !existing)
            .map(|(ancestor, _)| session.create(&ancestor.path, &[], mode, &ancestor.acl, None));
        for result in join_all(creates).await {
            match result {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// After a lost reply: the node this create may already have made.
    async fn find_protected(&self, session: &WireSession) -> Result<Option<(String, Stat)>> {
        let Some((parent, prefix)) = &self.protection else {
            return Ok(None);
        };
        let children = match session.get_children(parent).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => return Ok(None),
            Err(error) => return Err(error),
        };
        let Some(name) = children
            .into_iter()
            .find(|c| c.starts_with(prefix.as_str()))
        else {
            return Ok(None);
        };
        let path = paths::join(parent, &name);
        let stat = match session.exists(&path).await? {
            Some(stat) => stat,
            None => return Ok(None),
        };
        if self.mode.is_ephemeral() && stat.ephemeral_owner != session.session_id() {
            // Made by an older session that is gone or going: not ours to adopt.
            tracing::debug!(
                path,
                "protected node belongs to an older session; replacing it"
            );
            match session.delete(&path, None).await {
                Ok(()) | Err(Error::NoNode) => return Ok(None),
                Err(error) => return Err(error),
            }
        }
        tracing::debug!(path, "adopted the node of an earlier attempt");
        Ok(Some((path, stat)))
    }
}
