//! [`Modeled`]: typed CRUD on the nodes of a [`ModelSpec`].

use std::fmt;

use curator_framework::codec::{self, Codec};
use curator_framework::ops::transaction::{TransactionOp, TransactionResult};
use curator_framework::{CuratorFramework, Error, Result, Stat};
use curator_values::chunked::{CHUNK_DIR_SUFFIX, ChunkedValue};
use futures::future::try_join_all;

use crate::cached::CachedModeled;
use crate::spec::{ModelSpec, Parents};
use crate::zpath::{NodeName, PathParams, ZPath};

/// A model node as read: its path, stat (the version to write back with) and value. Curator's
/// `ZNode`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ZNode<T> {
    /// The node's path.
    pub path: ZPath,
    /// The node's stat; `stat.version` is what a versioned update or delete expects.
    pub stat: Stat,
    /// The decoded value.
    pub model: T,
}

impl<T> ZNode<T> {
    pub(crate) fn new(path: ZPath, stat: Stat, model: T) -> Self {
        ZNode { path, stat, model }
    }
}

/// Typed create, read, update and delete of the nodes of a [`ModelSpec`] through a client:
/// Curator's `ModeledFramework`. A `Modeled` is at one path; [`resolve`](Self::resolve),
/// [`at`](Self::at) and [`parent`](Self::parent) give others with the same spec. Reads and
/// writes need a resolved path (else [`Error::InvalidArgument`]); [`list`](Self::list) lists
/// the nodes of a path whose last segment is the only parameter left.
///
/// Each call is one request (plus one per child for the typed children, sent together), made
/// with the client's retry policy, namespace, schema set and compression. Writes are checked
/// against the spec's schema when the spec has one.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_framework::Error;
/// use curator_modeled::{Modeled, ModelSpec, Parents, ZPath};
///
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
/// struct User { name: String, admin: bool }
///
/// let spec = ModelSpec::<User>::builder(ZPath::parse("/orgs/{org}/users/{id}")?)
///     .parents(Parents::Containers)
///     .build()?;
/// let users = Modeled::new(client, spec);
/// let ada = users.resolve(("acme", 1))?;
/// ada.set(&User { name: "Ada".into(), admin: false }).await?;
///
/// let node = ada.read_as_znode().await?;
/// let promoted = User { admin: true, ..node.model.clone() };
/// ada.update_with_version(&promoted, node.stat.version).await?;
/// // A second write from the same read loses: the version moved on.
/// let stale = ada.update_with_version(&node.model, node.stat.version).await;
/// assert!(matches!(stale, Err(Error::BadVersion)));
///
/// for user in users.resolve(["acme"])?.list().await? {
///     println!("{} -> {:?}", user.path, user.model);
/// }
/// ada.delete().await?;
/// # Ok(()) }
/// ```
pub struct Modeled<T, C = curator_framework::codec::Json> {
    client: CuratorFramework,
    spec: ModelSpec<T, C>,
}

impl<T, C> Clone for Modeled<T, C> {
    fn clone(&self) -> Self {
        Modeled {
            client: self.client.clone(),
            spec: self.spec.clone(),
        }
    }
}

impl<T, C: fmt::Debug> fmt::Debug for Modeled<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Modeled")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl<T, C: Codec<T>> Modeled<T, C> {
    /// The nodes of `spec` through `client` (Curator's `ModeledFramework.wrap`).
    pub fn new(client: CuratorFramework, spec: ModelSpec<T, C>) -> Self {
        Modeled { client, spec }
    }

    /// The client.
    pub fn client(&self) -> &CuratorFramework {
        &self.client
    }

    /// The spec.
    pub fn spec(&self) -> &ModelSpec<T, C> {
        &self.spec
    }

    /// The path this instance reads and writes.
    pub fn path(&self) -> &ZPath {
        self.spec.path()
    }

    /// The same model at `path`.
    pub fn with_path(&self, path: ZPath) -> Self {
        Modeled {
            client: self.client.clone(),
            spec: self.spec.with_path(path),
        }
    }

    /// The same model with the path's leading parameters filled.
    ///
    /// # Errors
    /// As [`ZPath::resolve`].
    pub fn resolve(&self, values: impl PathParams) -> Result<Self> {
        Ok(self.with_path(self.path().resolve(values)?))
    }

    /// The same model at the child `child` of this path (Curator's `at`).
    ///
    /// # Errors
    /// As [`ZPath::at`].
    pub fn at(&self, child: impl NodeName) -> Result<Self> {
        Ok(self.with_path(self.path().at(child)?))
    }

    /// The same model at the parent path (`None` at the root).
    pub fn parent(&self) -> Option<Self> {
        Some(self.with_path(self.path().parent()?))
    }

    /// A view whose reads come from a cache of the model's nodes; see [`CachedModeled`].
    ///
    /// # Errors
    /// As the cache's builder ([`curator_caches::CuratorCache::builder`]);
    /// [`Error::InvalidArgument`] for a [chunked](crate::ModelSpecBuilder::chunked) model.
    pub fn cached(&self) -> Result<CachedModeled<T, C>> {
        CachedModeled::new(self.clone())
    }

    fn full_path(&self) -> Result<String> {
        self.path().full_path()
    }

    /// The chunked value at `path`, when the spec stores values chunked.
    fn chunked(&self, path: &str) -> Result<Option<ChunkedValue>> {
        let Some(settings) = self.spec.options.chunked else {
            return Ok(None);
        };
        let value = ChunkedValue::new(self.client.clone(), path, settings)?;
        let value = match self.spec.options.parents {
            Parents::Persistent => value.creating_parents_if_needed(),
            Parents::Containers => value.creating_parent_containers_if_needed(),
            _ => value,
        };
        Ok(Some(if self.spec.options.compressed {
            value.compressed()
        } else {
            value
        }))
    }

    /// Whether a child name is one of the model's own (not a chunked value's chunk container).
    fn is_model_name(&self, name: &str) -> bool {
        self.spec.options.chunked.is_none() || !name.ends_with(CHUNK_DIR_SUFFIX)
    }

    fn refuse_chunked_transaction(&self, path: &str) -> Result<()> {
        if self.spec.options.chunked.is_some() {
            return Err(Error::InvalidArgument(format!(
                "the model at {path} is chunked: its writes take several requests and cannot be a transaction step"
            )));
        }
        Ok(())
    }

    fn encode(&self, path: &str, model: &T) -> Result<Vec<u8>> {
        self.spec
            .codec()
            .encode(model)
            .map_err(|error| codec::with_path(error, path))
    }

    pub(crate) fn decode(&self, path: &str, data: &[u8]) -> Result<T> {
        self.spec
            .codec()
            .decode(data)
            .map_err(|error| codec::with_path(error, path))
    }

    /// Creates the node with `model` (or, when the spec sets data if it exists, overwrites
    /// it); returns the path created (with its sequence number for sequential modes).
    /// Curator's `set`.
    ///
    /// # Errors
    /// `NodeExists` (unless the spec overwrites), `NoNode` when a parent is missing and the
    /// spec does not make parents, [`Error::SchemaViolation`], [`Error::Decode`] when the
    /// codec cannot encode `model`, and the client's errors.
    pub async fn set(&self, model: &T) -> Result<String> {
        let path = self.full_path()?;
        let data = self.encode(&path, model)?;
        let options = &self.spec.options;
        if let Some(checks) = self.spec.checks() {
            checks.check_create(&path, options.mode, &data)?;
        }
        if let Some(chunked) = self.chunked(&path)? {
            if options.set_data_if_exists {
                chunked.create_or_set(&data).await?;
            } else {
                chunked.create(&data).await?;
            }
            return Ok(path);
        }
        let mut create = self.client.create().with_mode(options.mode);
        if let Some(acl) = &options.acl {
            create = create.with_acl(acl.clone());
        }
        if let Some(ttl) = options.ttl {
            create = create.with_ttl(ttl);
        }
        create = match options.parents {
            Parents::Persistent => create.creating_parents_if_needed(),
            Parents::Containers => create.creating_parent_containers_if_needed(),
            _ => create,
        };
        if options.set_data_if_exists {
            create = create.or_set_data();
        }
        if options.compressed {
            create = create.compressed();
        }
        create.for_path(&path, data).await
    }

    /// Reads and decodes the node (Curator's `read`).
    ///
    /// # Errors
    /// `NoNode` when it does not exist, [`Error::Decode`] when its data is not a `T`, and the
    /// client's errors.
    pub async fn read(&self) -> Result<T> {
        Ok(self.read_as_znode().await?.model)
    }

    /// Reads and decodes the node, with its stat (Curator's `readAsZNode`).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub async fn read_as_znode(&self) -> Result<ZNode<T>> {
        let path = self.full_path()?;
        let (data, stat) = self.get_data(&path).await?;
        let model = self.decode(&path, &data)?;
        Ok(ZNode::new(self.path().clone(), stat, model))
    }

    async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        if let Some(chunked) = self.chunked(path)? {
            return chunked.read().await;
        }
        let read = self.client.get_data();
        let read = if self.spec.options.compressed {
            read.decompressed()
        } else {
            read
        };
        read.for_path(path).await
    }

    /// Overwrites the node's data with `model`, whatever its version (Curator's `update`).
    ///
    /// # Errors
    /// `NoNode`, [`Error::SchemaViolation`], [`Error::Decode`], and the client's errors.
    pub async fn update(&self, model: &T) -> Result<Stat> {
        self.write(model, None).await
    }

    /// Overwrites the node's data with `model` if its data version is still `version` (from
    /// [`read_as_znode`](Self::read_as_znode)): an optimistic update.
    ///
    /// # Errors
    /// `BadVersion` when the node changed since, and as [`update`](Self::update).
    pub async fn update_with_version(&self, model: &T, version: i32) -> Result<Stat> {
        self.write(model, Some(version)).await
    }

    async fn write(&self, model: &T, version: Option<i32>) -> Result<Stat> {
        let path = self.full_path()?;
        let data = self.encode(&path, model)?;
        if let Some(checks) = self.spec.checks() {
            checks.check_set_data(&path, &data)?;
        }
        if let Some(chunked) = self.chunked(&path)? {
            return match version {
                Some(version) => chunked.set_with_version(&data, version).await,
                None => chunked.set(&data).await,
            };
        }
        let mut set = self.client.set_data();
        if let Some(version) = version {
            set = set.with_version(version);
        }
        if self.spec.options.compressed {
            set = set.compressed();
        }
        set.for_path(&path, data).await
    }

    /// Deletes the node, whatever its version (with its children when the spec says so).
    ///
    /// # Errors
    /// `NoNode`, `NotEmpty`, [`Error::SchemaViolation`], and the client's errors.
    pub async fn delete(&self) -> Result<()> {
        self.remove(None).await
    }

    /// Deletes the node if its data version is still `version`.
    ///
    /// # Errors
    /// `BadVersion` when the node changed since, and as [`delete`](Self::delete).
    pub async fn delete_with_version(&self, version: i32) -> Result<()> {
        self.remove(Some(version)).await
    }

    async fn remove(&self, version: Option<i32>) -> Result<()> {
        let path = self.full_path()?;
        if let Some(checks) = self.spec.checks() {
            checks.check_delete(&path)?;
        }
        let options = &self.spec.options;
        let mut delete = self.client.delete();
        if let Some(version) = version {
            delete = delete.with_version(version);
        }
        if options.deleting_children {
            delete = delete.deleting_children_if_needed();
        }
        if options.guaranteed_delete {
            delete = delete.guaranteed();
        }
        delete.for_path(&path).await?;
        if let Some(chunked) = self.chunked(&path)? {
            chunked.delete_chunks().await;
        }
        Ok(())
    }

    /// The node's stat, or `None` when it does not exist (Curator's `checkExists`).
    ///
    /// # Errors
    /// The client's errors.
    pub async fn check_exists(&self) -> Result<Option<Stat>> {
        let path = self.full_path()?;
        self.client.check_exists().for_path(&path).await
    }

    /// The paths of the node's children, sorted by name (Curator's `children`).
    ///
    /// # Errors
    /// `NoNode`, and the client's errors.
    pub async fn children(&self) -> Result<Vec<ZPath>> {
        let path = self.full_path()?;
        let (mut names, _) = self.client.get_children().for_path(&path).await?;
        names.retain(|name| self.is_model_name(name));
        names.sort_unstable();
        names.into_iter().map(|name| self.path().at(name)).collect()
    }

    /// The node's children read and decoded as models, sorted by path (Curator's
    /// `childrenAsZNodes`). The reads are sent together; a child deleted between the listing
    /// and its read is left out.
    ///
    /// # Errors
    /// `NoNode` when the node does not exist, [`Error::Decode`] naming the first child whose
    /// data is not a `T`, and the client's errors.
    pub async fn children_as_znodes(&self) -> Result<Vec<ZNode<T>>> {
        let children = self.children().await?;
        self.read_all(children).await
    }

    /// Every node of this path's template, when its last segment is the only parameter left
    /// (`/orgs/acme/users/{id}`: acme's users), read and decoded, sorted by path; empty when
    /// the parent does not exist. A resolved path lists itself (empty when it is absent).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when a parameter other than the last is left,
    /// [`Error::Decode`] naming the first node whose data is not a `T`, and the client's errors.
    pub async fn list(&self) -> Result<Vec<ZNode<T>>> {
        if self.path().is_resolved() {
            return match self.read_as_znode().await {
                Ok(node) => Ok(vec![node]),
                Err(Error::NoNode) => Ok(Vec::new()),
                Err(error) => Err(error),
            };
        }
        let parent = self.path().parent().filter(ZPath::is_resolved);
        let Some(parent) = parent else {
            return Err(Error::InvalidArgument(format!(
                "list() needs a path whose only parameter left is the last segment, not {}",
                self.path()
            )));
        };
        let names = match self
            .client
            .get_children()
            .for_path(&parent.full_path()?)
            .await
        {
            Ok((names, _)) => names,
            Err(Error::NoNode) => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let mut paths = names
            .into_iter()
            .filter(|name| self.is_model_name(name))
            .map(|name| parent.at(name))
            .collect::<Result<Vec<_>>>()?;
        paths.sort_unstable_by_key(ToString::to_string);
        self.read_all(paths).await
    }

    async fn read_all(&self, paths: Vec<ZPath>) -> Result<Vec<ZNode<T>>> {
        let reads = paths.into_iter().map(|path| async move {
            let full = path.full_path()?;
            match self.get_data(&full).await {
                Ok((data, stat)) => {
                    let model = self.decode(&full, &data)?;
                    Ok(Some(ZNode::new(path, stat, model)))
                }
                Err(Error::NoNode) => Ok(None),
                Err(error) => Err(error),
            }
        });
        Ok(try_join_all(reads).await?.into_iter().flatten().collect())
    }

    /// A transaction step that creates the node with `model` (mode, ACL, TTL and compression
    /// of the spec; parents are not made and an existing node fails the transaction, as in
    /// Curator's `createOp`).
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// # use curator_modeled::{Modeled, ModelSpec, ZPath};
    /// let counters = Modeled::new(client, ModelSpec::<u64>::builder(ZPath::parse("/c/{n}")?).build()?);
    /// let (a, b) = (counters.resolve(["a"])?, counters.resolve(["b"])?);
    /// let node = a.read_as_znode().await?;
    /// // Move one from a to b only if a did not change since it was read.
    /// counters.in_transaction(vec![
    ///     a.update_op(&(node.model - 1), Some(node.stat.version))?,
    ///     b.create_op(&1)?,
    /// ]).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unresolved path, [`Error::Decode`] when the codec
    /// cannot encode `model`, [`Error::SchemaViolation`] from the spec's schema.
    pub fn create_op(&self, model: &T) -> Result<TransactionOp> {
        let path = self.full_path()?;
        self.refuse_chunked_transaction(&path)?;
        let data = self.encode(&path, model)?;
        let options = &self.spec.options;
        if let Some(checks) = self.spec.checks() {
            checks.check_create(&path, options.mode, &data)?;
        }
        let mut op = TransactionOp::create(&path, data).with_mode(options.mode);
        if let Some(acl) = &options.acl {
            op = op.with_acl(acl.clone());
        }
        if let Some(ttl) = options.ttl {
            op = op.with_ttl(ttl);
        }
        if options.compressed {
            op = op.compressed();
        }
        Ok(op)
    }

    /// A transaction step that sets the node's data to `model`, at `version` when given.
    ///
    /// # Errors
    /// As [`create_op`](Self::create_op).
    pub fn update_op(&self, model: &T, version: Option<i32>) -> Result<TransactionOp> {
        let path = self.full_path()?;
        self.refuse_chunked_transaction(&path)?;
        let data = self.encode(&path, model)?;
        if let Some(checks) = self.spec.checks() {
            checks.check_set_data(&path, &data)?;
        }
        let mut op = TransactionOp::set_data(&path, data);
        if let Some(version) = version {
            op = op.with_version(version);
        }
        if self.spec.options.compressed {
            op = op.compressed();
        }
        Ok(op)
    }

    /// A transaction step that deletes the node, at `version` when given (children are not
    /// deleted in a transaction).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unresolved path, [`Error::SchemaViolation`].
    pub fn delete_op(&self, version: Option<i32>) -> Result<TransactionOp> {
        let path = self.full_path()?;
        if let Some(checks) = self.spec.checks() {
            checks.check_delete(&path)?;
        }
        let op = TransactionOp::delete(&path);
        Ok(match version {
            Some(version) => op.with_version(version),
            None => op,
        })
    }

    /// A transaction step that checks the node exists, at `version` when given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unresolved path.
    pub fn check_op(&self, version: Option<i32>) -> Result<TransactionOp> {
        Ok(TransactionOp::check(
            &self.full_path()?,
            version.unwrap_or(-1),
        ))
    }

    /// Commits `ops` (from any models) as one transaction (Curator's `inTransaction`).
    ///
    /// # Errors
    /// [`Error::Transaction`] naming the step that failed, and the client's errors.
    pub async fn in_transaction(&self, ops: Vec<TransactionOp>) -> Result<Vec<TransactionResult>> {
        let mut transaction = self.client.transaction();
        for op in ops {
            transaction = transaction.op(op);
        }
        transaction.commit().await
    }
}
