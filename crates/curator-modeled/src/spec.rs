//! [`ModelSpec`]: where a model lives and how it is stored.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::acl::Acl;
use curator_framework::codec::{Codec, Json};
use curator_framework::schema::{Allowance, DataValidator, Schema, SchemaSet};
use curator_framework::{CreateMode, Error, Result};
use curator_values::chunked::{self, ChunkSettings};

use crate::zpath::{NodeName, PathParams, ZPath};

/// How missing parents are made when a model node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Parents {
    /// Not made: creating under a missing parent fails with `NoNode` (Curator's default).
    #[default]
    Required,
    /// Made as persistent nodes (`creating_parents_if_needed`).
    Persistent,
    /// Made as containers, which the server removes once empty
    /// (`creating_parent_containers_if_needed`; Curator's `createParentsAsContainers`).
    Containers,
}

pub(crate) struct Options<C> {
    pub(crate) codec: C,
    pub(crate) mode: CreateMode,
    pub(crate) acl: Option<Vec<Acl>>,
    pub(crate) ttl: Option<Duration>,
    pub(crate) parents: Parents,
    pub(crate) set_data_if_exists: bool,
    pub(crate) compressed: bool,
    pub(crate) deleting_children: bool,
    pub(crate) guaranteed_delete: bool,
    /// Values stored chunked (see [`ModelSpecBuilder::chunked`]).
    pub(crate) chunked: Option<ChunkSettings>,
    /// The schema given to the builder, as a strict set of one: every write is checked
    /// against it before it is sent.
    pub(crate) schema: Option<(Schema, SchemaSet)>,
}

/// Where a model lives (a [`ZPath`], possibly with parameters) and how it is stored: its
/// [`Codec`] (JSON by default), create mode, ACL, TTL, how parents are made, compression,
/// delete options and an optional [`Schema`]. Cheap to clone; resolving parameters or moving
/// to a child keeps every option. Curator's `ModelSpec`.
///
/// ```
/// use std::time::Duration;
/// use curator_framework::CreateMode;
/// use curator_modeled::{ModelSpec, Parents, ZPath};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Session { user: String }
///
/// let spec = ModelSpec::<Session>::builder(ZPath::parse("/sessions/{id}")?)
///     .create_mode(CreateMode::PersistentWithTtl)
///     .ttl(Duration::from_secs(3600))
///     .parents(Parents::Containers)
///     .set_data_if_exists()
///     .build()?;
/// assert_eq!(spec.resolve(["s-1"])?.path().full_path()?, "/sessions/s-1");
/// // The schema other clients can enforce for these nodes (Curator's `ModelSpec.schema()`).
/// assert_eq!(spec.schema().raw_path(), "^/sessions/[^/]+$");
///
/// // A TTL mode without a TTL is refused.
/// assert!(ModelSpec::<Session>::builder(ZPath::parse("/s")?)
///     .create_mode(CreateMode::PersistentWithTtl)
///     .build()
///     .is_err());
/// # Ok::<(), curator_framework::Error>(())
/// ```
pub struct ModelSpec<T, C = Json> {
    path: ZPath,
    pub(crate) options: Arc<Options<C>>,
    _model: PhantomData<fn() -> T>,
}

impl<T, C> Clone for ModelSpec<T, C> {
    fn clone(&self) -> Self {
        ModelSpec {
            path: self.path.clone(),
            options: Arc::clone(&self.options),
            _model: PhantomData,
        }
    }
}

impl<T, C: fmt::Debug> fmt::Debug for ModelSpec<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let options = &self.options;
        f.debug_struct("ModelSpec")
            .field("path", &self.path)
            .field("model", &std::any::type_name::<T>())
            .field("codec", &options.codec)
            .field("mode", &options.mode)
            .field("acl", &options.acl)
            .field("ttl", &options.ttl)
            .field("parents", &options.parents)
            .field("set_data_if_exists", &options.set_data_if_exists)
            .field("compressed", &options.compressed)
            .field("deleting_children", &options.deleting_children)
            .field("guaranteed_delete", &options.guaranteed_delete)
            .field("chunked", &options.chunked)
            .field("schema", &options.schema.as_ref().map(|(s, _)| s.name()))
            .finish()
    }
}

impl<T> ModelSpec<T, Json> {
    /// Options for models of `T` stored at `path`, as JSON unless
    /// [`codec`](ModelSpecBuilder::codec) says otherwise.
    ///
    /// ```
    /// use curator_framework::codec::Utf8;
    /// use curator_modeled::{ModelSpec, ZPath};
    /// let notes = ModelSpec::<String>::builder(ZPath::parse("/notes/{id}")?)
    ///     .codec(Utf8)
    ///     .build()?;
    /// # let _: ModelSpec<String, Utf8> = notes;
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn builder(path: ZPath) -> ModelSpecBuilder<T, Json> {
        ModelSpecBuilder {
            path,
            options: Options {
                codec: Json,
                mode: CreateMode::Persistent,
                acl: None,
                ttl: None,
                parents: Parents::Required,
                set_data_if_exists: false,
                compressed: false,
                deleting_children: false,
                guaranteed_delete: false,
                chunked: None,
                schema: None,
            },
            schema: None,
            _model: PhantomData,
        }
    }
}

impl<C> Options<C> {
    /// The same options with another codec.
    fn with_codec<D>(self, codec: D) -> Options<D> {
        Options {
            codec,
            mode: self.mode,
            acl: self.acl,
            ttl: self.ttl,
            parents: self.parents,
            set_data_if_exists: self.set_data_if_exists,
            compressed: self.compressed,
            deleting_children: self.deleting_children,
            guaranteed_delete: self.guaranteed_delete,
            chunked: self.chunked,
            schema: self.schema,
        }
    }
}

impl<T, C: Codec<T>> ModelSpec<T, C> {
    /// The path (template) of the model.
    pub fn path(&self) -> &ZPath {
        &self.path
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.options.codec
    }

    /// The create mode.
    pub fn create_mode(&self) -> CreateMode {
        self.options.mode
    }

    /// The ACL of created nodes (`None`: the client's default).
    pub fn acl(&self) -> Option<&[Acl]> {
        self.options.acl.as_deref()
    }

    /// The TTL of created nodes (TTL modes).
    pub fn ttl(&self) -> Option<Duration> {
        self.options.ttl
    }

    /// The chunk settings when values are stored chunked.
    pub fn chunked(&self) -> Option<&ChunkSettings> {
        self.options.chunked.as_ref()
    }

    /// The same spec at `path`.
    pub fn with_path(&self, path: ZPath) -> Self {
        ModelSpec {
            path,
            options: Arc::clone(&self.options),
            _model: PhantomData,
        }
    }

    /// The same spec with the path's leading parameters filled (see [`ZPath::resolve`]).
    ///
    /// # Errors
    /// As [`ZPath::resolve`].
    pub fn resolve(&self, values: impl PathParams) -> Result<Self> {
        Ok(self.with_path(self.path.resolve(values)?))
    }

    /// The same spec at the child `child` of its path.
    ///
    /// # Errors
    /// As [`ZPath::at`].
    pub fn child(&self, child: impl NodeName) -> Result<Self> {
        Ok(self.with_path(self.path.at(child)?))
    }

    /// The same spec at the parent of its path (`None` at the root).
    pub fn parent(&self) -> Option<Self> {
        Some(self.with_path(self.path.parent()?))
    }

    /// The schema of this model's nodes: the one given to the builder, or one made from the
    /// spec as Curator's `ModelSpec.schema()` does: the path's pattern (parameters match any
    /// node name; a sequential mode also matches the name with its sequence number), ephemeral
    /// and sequential as the create mode says (must or cannot), watches allowed, deletes
    /// allowed, data that the codec decodes, and the spec's ACL when it has one (Curator
    /// compares with its open ACL when the spec has none; here any ACL is then allowed, since
    /// the model's own nodes get the client's default ACL). Add it to a client's
    /// [`SchemaSet`] so that writes outside this model are held to it too.
    pub fn schema(&self) -> Schema
    where
        T: 'static,
    {
        if let Some((schema, _)) = &self.options.schema {
            return schema.clone();
        }
        let mut pattern = self.path.schema_pattern();
        if self.options.mode.is_sequential() {
            pattern.truncate(pattern.len() - 1);
            pattern.push_str(r"(\d{10})?$");
        }
        let must = |yes: bool| {
            if yes {
                Allowance::Must
            } else {
                Allowance::Cannot
            }
        };
        Schema::builder_regex(&pattern)
            .name(format!("model {}", self.path))
            .documentation(format!(
                "nodes of the model {} ({})",
                self.path,
                std::any::type_name::<T>()
            ))
            .ephemeral(must(self.options.mode.is_ephemeral()))
            .sequential(must(self.options.mode.is_sequential()))
            .watched(Allowance::Can)
            .can_be_deleted(true)
            .data_validator(Decodes::<T, C> {
                options: Arc::clone(&self.options),
                _model: PhantomData,
            })
            .build()
            // The pattern is made of escaped names and `[^/]+`: always a valid regex.
            .unwrap_or_else(|error| unreachable!("the pattern {pattern} is valid: {error}"))
    }

    /// The builder's schema as a strict set of one, when given.
    pub(crate) fn checks(&self) -> Option<&SchemaSet> {
        self.options.schema.as_ref().map(|(_, set)| set)
    }
}

/// Data is valid when the model's codec decodes it.
struct Decodes<T, C> {
    options: Arc<Options<C>>,
    _model: PhantomData<fn() -> T>,
}

impl<T: 'static, C: Codec<T>> DataValidator for Decodes<T, C> {
    fn is_valid(&self, _schema: &Schema, _path: &str, data: &[u8]) -> bool {
        if self.options.chunked.is_some() {
            // The node holds a manifest; the value is in its chunks.
            return chunked::is_manifest(data);
        }
        self.options.codec.decode(data).is_ok()
    }

    fn is_valid_acl(&self, _schema: &Schema, _path: &str, acl: &[Acl]) -> bool {
        self.options.acl.as_deref().is_none_or(|model| model == acl)
    }
}

/// Options of a [`ModelSpec`]; see [`ModelSpec::builder`]. Curator's defaults: a persistent
/// node, the client's ACL, parents required, `set` fails on an existing node, deletes of a
/// node without children only.
pub struct ModelSpecBuilder<T, C> {
    path: ZPath,
    options: Options<C>,
    schema: Option<Schema>,
    _model: PhantomData<fn() -> T>,
}

impl<T, C: fmt::Debug> fmt::Debug for ModelSpecBuilder<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelSpecBuilder")
            .field("path", &self.path)
            .field("codec", &self.options.codec)
            .field("mode", &self.options.mode)
            .finish_non_exhaustive()
    }
}

impl<T, C> ModelSpecBuilder<T, C> {
    /// Stores the models with `codec` instead (any of [`curator_framework::codec`], or your
    /// own).
    pub fn codec<D: Codec<T>>(self, codec: D) -> ModelSpecBuilder<T, D> {
        ModelSpecBuilder {
            path: self.path,
            options: self.options.with_codec(codec),
            schema: self.schema,
            _model: PhantomData,
        }
    }
}

impl<T, C: Codec<T>> ModelSpecBuilder<T, C> {
    /// How model nodes are created (persistent unless set). With a sequential mode the path
    /// names the prefix of the node's name and `set` returns the name made.
    pub fn create_mode(mut self, mode: CreateMode) -> Self {
        self.options.mode = mode;
        self
    }

    /// The ACL of created nodes (the client's default ACL unless set).
    pub fn acl(mut self, acl: Vec<Acl>) -> Self {
        self.options.acl = Some(acl);
        self
    }

    /// The TTL of created nodes; required by (and only allowed with) the TTL modes.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl = Some(ttl);
        self
    }

    /// How missing parents are made ([`Parents::Required`] unless set).
    pub fn parents(mut self, parents: Parents) -> Self {
        self.options.parents = parents;
        self
    }

    /// `set` overwrites the data of an existing node instead of failing with `NodeExists`
    /// (Curator's `CreateOption.setDataIfExists`).
    pub fn set_data_if_exists(mut self) -> Self {
        self.options.set_data_if_exists = true;
        self
    }

    /// Model data is compressed with the client's compression provider when written and
    /// decompressed when read (Curator's `CreateOption.compress`).
    pub fn compressed(mut self) -> Self {
        self.options.compressed = true;
        self
    }

    /// `delete` removes the node's children first (Curator's
    /// `DeleteOption.deletingChildrenIfNeeded`).
    pub fn deleting_children(mut self) -> Self {
        self.options.deleting_children = true;
        self
    }

    /// `delete` keeps trying in the background after a connection loss until it is done
    /// (Curator's `DeleteOption.guaranteed`).
    pub fn guaranteed_delete(mut self) -> Self {
        self.options.guaranteed_delete = true;
        self
    }

    /// Stores each value chunked, so it may be larger than ZooKeeper's 1 MiB (up to 64 MiB
    /// encoded by default): the node holds a small manifest and the value lives in immutable
    /// chunks under the sibling `<node>-chunks` ([`curator_values::chunked`] has the layout,
    /// the guarantees and the cost). `set`, `read`, `update` (with or without a version),
    /// `delete`, `children_as_znodes` and `list` handle it, and a read is always one whole
    /// written value; `children`/`list` leave the `…-chunks` siblings out. Only the persistent
    /// mode can be chunked; a chunked model cannot be written in a transaction (`create_op`,
    /// `update_op` refuse), and [`Modeled::cached`](crate::Modeled::cached) refuses it (a cache
    /// would hold every chunk in memory and could not tell a whole value from a mix).
    ///
    /// ```
    /// use curator_modeled::{ModelSpec, ZPath};
    /// let blobs = ModelSpec::<Vec<u8>>::builder(ZPath::parse("/blobs/{id}")?).chunked().build()?;
    /// assert!(blobs.chunked().is_some());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn chunked(self) -> Self {
        self.chunked_with(ChunkSettings::new())
    }

    /// [`chunked`](Self::chunked) with other settings (chunk size, size limit, read attempts).
    pub fn chunked_with(mut self, settings: ChunkSettings) -> Self {
        self.options.chunked = Some(settings);
        self
    }

    /// A schema every write of this model is checked against before it is sent (refused with
    /// [`Error::SchemaViolation`], including when the path is not the schema's). Without one,
    /// [`ModelSpec::schema`] makes one from the spec, which needs no checking here: the
    /// model's own writes always keep it.
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The spec.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a TTL mode without a TTL, or a TTL without a TTL mode;
    /// for a chunked model, a mode other than persistent or bad chunk settings.
    pub fn build(mut self) -> Result<ModelSpec<T, C>> {
        if let Some(settings) = &self.options.chunked {
            settings.validate()?;
            if self.options.mode != CreateMode::Persistent {
                return Err(Error::InvalidArgument(format!(
                    "the model {} is chunked, which needs the persistent mode, not {:?}",
                    self.path, self.options.mode
                )));
            }
        }
        match (self.options.mode.is_ttl(), self.options.ttl) {
            (true, None) => {
                return Err(Error::InvalidArgument(format!(
                    "the model {} has the create mode {:?} but no TTL",
                    self.path, self.options.mode
                )));
            }
            (false, Some(ttl)) => {
                return Err(Error::InvalidArgument(format!(
                    "the model {} has a TTL ({ttl:?}) but the create mode {:?} has none",
                    self.path, self.options.mode
                )));
            }
            _ => {}
        }
        if let Some(schema) = self.schema.take() {
            let set = SchemaSet::strict(vec![schema.clone()])?;
            self.options.schema = Some((schema, set));
        }
        Ok(ModelSpec {
            path: self.path,
            options: Arc::new(self.options),
            _model: PhantomData,
        })
    }
}
