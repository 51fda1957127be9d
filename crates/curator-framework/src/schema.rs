//! Schemas: what may live where (Curator's `org.apache.curator.framework.schema`).
//!
//! A [`SchemaSet`] given to the builder ([`schema_set`](crate::CuratorFrameworkBuilder::schema_set))
//! is checked by every `create()`, `set_data()`, `delete()`, `set_acl()`, `get_data()`,
//! `get_children()`, `check_exists()` and `add_watch()`, and every create, set-data and delete
//! step of a transaction, before its request is sent; a refused operation fails with
//! [`Error::SchemaViolation`] naming the schema and the [`Violation`], and the server never sees
//! it. A client without a schema set pays one `Option` check per operation.
//!
//! Beyond Curator, which checks only the node named in the call:
//!
//! - **ACLs.** `set_acl()` looks the path up (a strict set refuses an unknown path, as Curator's
//!   `setACL` does) and asks the schema's validator about the ACL it would send
//!   ([`DataValidator::is_valid_acl`], default: any ACL; a refusal is [`Violation::InvalidAcl`]).
//!   Creates (their parents and transaction steps included) ask the same about their ACL, as
//!   Curator's `validateCreate` hands its validator the ACL list. `get_acl()` is not checked,
//!   as in Curator.
//! - **Parents.** Each parent `creating_parents_if_needed()` or
//!   `creating_parent_containers_if_needed()` may make is checked as a create of that path with
//!   empty data in the parent mode (persistent or container) and the ACL provider's ACL
//!   ([`SchemaSet::check_parent`]), when the create is planned. Curator's `ZKPaths.mkdirs`
//!   checks nothing. A parent the set refuses is no obstacle if it already exists: when the
//!   create finds parents missing, it looks up each refused one and fails with its violation if
//!   it is missing, before any parent create is sent (so nothing was made), and otherwise sends
//!   no create for it. Parents are created all at once (pipelined), so checking each one just
//!   before its own request would not keep the higher ones from being made.
//! - **Children.** `deleting_children_if_needed()` lists the whole subtree first and checks
//!   every node in it as a delete ([`SchemaSet::check_delete`]) before the first child is
//!   deleted; one that cannot be deleted fails the call and nothing is deleted. Children that
//!   appear after the listing are listed and checked in another round before they are deleted.
//!   Curator's `ZKPaths.deleteChildren` checks only the node named. A guaranteed delete that
//!   continues in the background checks the same way.
//!
//! Each [`Schema`] matches an exact path or a regular expression (matched against the whole
//! path), and says whether nodes there may, must or cannot be ephemeral, sequential and watched
//! ([`Allowance`]), whether they may be deleted, and which [`DataValidator`] their data must
//! pass. Lookup follows Curator: an exact path first, then the first matching regex in the order
//! given; a path no schema matches is allowed by an [`allow_unknown`](SchemaSet::allow_unknown)
//! set and refused ([`Violation::NoSchema`]) by a [`strict`](SchemaSet::strict) one.
//!
//! Paths are matched as the caller names them, without the client's namespace, as Curator's
//! `create`, `setData`, `delete`, `getData` and `getChildren` do (Curator's `checkExists` and
//! transactions match the namespaced path instead; here every operation is the same). A
//! sequential create is matched on the path it was given (before the sequence number) and a
//! protected one before its protection prefix. Data is validated as the caller gave it, before
//! compression.
//!
//! Regular expressions use the [`regex`](https://docs.rs/regex) crate (already in the
//! workspace's lock file through `tracing-subscriber`): linear-time matching, so a schema set
//! loaded from a file cannot stall a client; its syntax is Java's for the usual patterns
//! (`/a/.*`, classes, alternation) but has no look-around or back-references.
//!
//! ```
//! use curator_framework::schema::{Allowance, Schema, SchemaSet, Violation};
//! use curator_framework::{CreateMode, Error};
//!
//! let set = SchemaSet::strict(vec![
//!     Schema::builder("/config").name("config").ephemeral(Allowance::Cannot).build()?,
//!     Schema::builder_regex("/workers/.*")
//!         .name("workers")
//!         .ephemeral(Allowance::Must)
//!         .build()?,
//! ])?;
//! assert_eq!(set.schema_for("/workers/w1")?.name(), "workers");
//! let refused = set.check_create("/config", CreateMode::Ephemeral, b"").unwrap_err();
//! assert!(matches!(
//!     refused,
//!     Error::SchemaViolation { violation: Violation::CannotBeEphemeral, .. }
//! ));
//! assert!(matches!(
//!     set.schema_for("/elsewhere"),
//!     Err(Error::SchemaViolation { violation: Violation::NoSchema, .. })
//! ));
//! # Ok::<(), Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use regex::Regex;
use serde::Deserialize;

use crate::acl::Acl;
use crate::error::{Error, Result};
use crate::types::CreateMode;

pub use crate::error::Violation;

/// Whether nodes under a schema may (`Can`), must (`Must`) or cannot (`Cannot`) have a property
/// (ephemeral, sequential, watched). Curator's `Schema.Allowance`.
///
/// ```
/// use curator_framework::schema::Allowance;
/// assert_eq!(Allowance::default(), Allowance::Can);
/// assert!(Allowance::Must.refuses(false) && !Allowance::Must.refuses(true));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Allowance {
    /// Either way.
    #[default]
    Can,
    /// Always.
    Must,
    /// Never.
    Cannot,
}

impl Allowance {
    /// Whether an operation that has the property (`has`) or not is refused.
    ///
    /// ```
    /// use curator_framework::schema::Allowance;
    /// assert!(Allowance::Cannot.refuses(true));
    /// assert!(!Allowance::Can.refuses(true) && !Allowance::Can.refuses(false));
    /// ```
    pub fn refuses(self, has: bool) -> bool {
        matches!(
            (self, has),
            (Allowance::Must, false) | (Allowance::Cannot, true)
        )
    }

    fn parse(text: &str) -> Option<Allowance> {
        match text.to_ascii_uppercase().as_str() {
            "CAN" => Some(Allowance::Can),
            "MUST" => Some(Allowance::Must),
            "CANNOT" => Some(Allowance::Cannot),
            _ => None,
        }
    }
}

/// Checks the data a create or `set_data()` writes under a schema, and the ACL a create or
/// `set_acl()` gives a node; Curator's `SchemaValidator`, whose one method sees data and ACL
/// together, split in two so that neither sees a placeholder for the other. A schema without one
/// accepts any data and any ACL.
///
/// ```
/// use curator_framework::schema::{DataValidator, Schema};
///
/// #[derive(Debug)]
/// struct Utf8;
/// impl DataValidator for Utf8 {
///     fn is_valid(&self, _schema: &Schema, _path: &str, data: &[u8]) -> bool {
///         std::str::from_utf8(data).is_ok()
///     }
/// }
/// let schema = Schema::builder("/a").data_validator(Utf8).build()?;
/// assert!(Utf8.is_valid(&schema, "/a", b"text"));
/// assert!(!Utf8.is_valid(&schema, "/a", &[0xff]));
/// # Ok::<(), curator_framework::Error>(())
/// ```
pub trait DataValidator: Send + Sync + 'static {
    /// Whether `data`, written to `path` (as the caller named it) under `schema`, is allowed.
    fn is_valid(&self, schema: &Schema, path: &str, data: &[u8]) -> bool;

    /// Whether `acl`, given to `path` (as the caller named it) under `schema` by a create (each
    /// parent it makes included) or a `set_acl()`, is allowed. The ACL is the one that will be
    /// sent: the caller's `with_acl`, else the client's ACL provider's choice. Default: any ACL.
    ///
    /// ```
    /// use curator_framework::acl::{Acl, Perms};
    /// use curator_framework::schema::{DataValidator, Schema};
    ///
    /// /// Refuses ACLs that let anyone write.
    /// #[derive(Debug)]
    /// struct NoWorldWrite;
    /// impl DataValidator for NoWorldWrite {
    ///     fn is_valid(&self, _: &Schema, _: &str, _: &[u8]) -> bool {
    ///         true
    ///     }
    ///     fn is_valid_acl(&self, _: &Schema, _: &str, acl: &[Acl]) -> bool {
    ///         !acl.contains(&Acl::world_anyone(Perms::ALL))
    ///     }
    /// }
    /// let schema = Schema::builder("/a").data_validator(NoWorldWrite).build()?;
    /// assert!(!NoWorldWrite.is_valid_acl(&schema, "/a", &Acl::open_unsafe()));
    /// assert!(NoWorldWrite.is_valid_acl(&schema, "/a", &Acl::read_unsafe()));
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    fn is_valid_acl(&self, schema: &Schema, path: &str, acl: &[Acl]) -> bool {
        let _ = (schema, path, acl);
        true
    }
}

#[derive(Clone)]
enum PathMatch {
    Exact(String),
    /// The regex as given, and anchored at both ends for matching whole paths.
    Regex {
        given: Regex,
        anchored: Regex,
    },
}

/// One schema: where it applies (an exact path or a regex) and what it allows. Built with
/// [`Schema::builder`] or [`Schema::builder_regex`]; Curator's `Schema`.
///
/// ```
/// use curator_framework::schema::{Allowance, Schema};
/// let schema = Schema::builder("/locks/")
///     .name("locks")
///     .documentation("lock parents")
///     .sequential(Allowance::Cannot)
///     .can_be_deleted(false)
///     .build()?;
/// assert_eq!(schema.path(), Some("/locks")); // a trailing slash is dropped, as in Curator
/// assert!(!schema.can_be_deleted());
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Clone)]
pub struct Schema {
    name: String,
    matcher: PathMatch,
    documentation: String,
    validator: Option<Arc<dyn DataValidator>>,
    ephemeral: Allowance,
    sequential: Allowance,
    watched: Allowance,
    can_be_deleted: bool,
    metadata: BTreeMap<String, String>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("name", &self.name)
            .field("path", &self.raw_path())
            .field("is_regex", &self.is_regex())
            .field("has_data_validator", &self.validator.is_some())
            .field("ephemeral", &self.ephemeral)
            .field("sequential", &self.sequential)
            .field("watched", &self.watched)
            .field("can_be_deleted", &self.can_be_deleted)
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

impl Schema {
    /// A builder for the schema of exactly `path` (a trailing `/` is dropped). Exact-path
    /// schemas take precedence over regex ones.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder("/a").build()?.raw_path(), "/a");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn builder(path: &str) -> SchemaBuilder {
        let path = match path.strip_suffix('/') {
            Some(stripped) if !stripped.is_empty() => stripped,
            _ => path,
        };
        SchemaBuilder::new(Ok(PathMatch::Exact(path.to_owned())))
    }

    /// A builder for the schema of every path the regular expression `pattern` matches in full
    /// (as Java's `Matcher.matches()`). A pattern that does not compile is reported by
    /// [`build`](SchemaBuilder::build).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// let schema = Schema::builder_regex("/a/.*").build()?;
    /// assert!(schema.matches("/a/b") && !schema.matches("/x/a/b"));
    /// assert!(Schema::builder_regex("(").build().is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn builder_regex(pattern: &str) -> SchemaBuilder {
        let compiled = Regex::new(pattern)
            .and_then(|given| {
                let anchored = Regex::new(&format!("^(?:{pattern})$"))?;
                Ok(PathMatch::Regex { given, anchored })
            })
            .map_err(|error| {
                Error::InvalidArgument(format!("schema path regex {pattern:?}: {error}"))
            });
        SchemaBuilder::new(compiled)
    }

    /// The schema's name (unique within a set).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder("/a").name("a").build()?.name(), "a");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exact path, or `None` for a regex schema.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder_regex("/a/.*").build()?.path(), None);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn path(&self) -> Option<&str> {
        match &self.matcher {
            PathMatch::Exact(path) => Some(path),
            PathMatch::Regex { .. } => None,
        }
    }

    /// Whether the schema matches paths by regex (else by exact path).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert!(Schema::builder_regex("/a/.*").build()?.is_regex());
    /// assert!(!Schema::builder("/a").build()?.is_regex());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn is_regex(&self) -> bool {
        matches!(self.matcher, PathMatch::Regex { .. })
    }

    /// The exact path or the regex's text (Curator's `getRawPath`).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder_regex("/a/.*").build()?.raw_path(), "/a/.*");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn raw_path(&self) -> &str {
        match &self.matcher {
            PathMatch::Exact(path) => path,
            PathMatch::Regex { given, .. } => given.as_str(),
        }
    }

    /// Whether this schema applies to `path`.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert!(Schema::builder("/a").build()?.matches("/a"));
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn matches(&self, path: &str) -> bool {
        match &self.matcher {
            PathMatch::Exact(exact) => exact == path,
            PathMatch::Regex { anchored, .. } => anchored.is_match(path),
        }
    }

    /// The documentation text.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder("/a").documentation("doc").build()?.documentation(), "doc");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn documentation(&self) -> &str {
        &self.documentation
    }

    /// Whether nodes here may, must or cannot be ephemeral.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// assert_eq!(Schema::builder("/a").build()?.ephemeral(), Allowance::Can);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn ephemeral(&self) -> Allowance {
        self.ephemeral
    }

    /// Whether nodes here may, must or cannot be sequential.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// assert_eq!(Schema::builder("/a").build()?.sequential(), Allowance::Can);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn sequential(&self) -> Allowance {
        self.sequential
    }

    /// Whether reads here may, must or cannot set a watch.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// assert_eq!(Schema::builder("/a").build()?.watched(), Allowance::Can);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn watched(&self) -> Allowance {
        self.watched
    }

    /// Whether nodes here may be deleted (default `true` for a built schema).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert!(Schema::builder("/a").build()?.can_be_deleted());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn can_be_deleted(&self) -> bool {
        self.can_be_deleted
    }

    /// Free-form metadata.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// let schema = Schema::builder("/a").metadata([("owner", "team-a")]).build()?;
    /// assert_eq!(schema.metadata()["owner"], "team-a");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    fn violation(&self, path: &str, violation: Violation) -> Error {
        Error::SchemaViolation {
            schema: Some(self.name.clone()),
            path: path.to_owned(),
            violation,
        }
    }

    fn check_data(&self, path: &str, data: &[u8]) -> Result<()> {
        match &self.validator {
            Some(validator) if !validator.is_valid(self, path, data) => {
                Err(self.violation(path, Violation::InvalidData))
            }
            _ => Ok(()),
        }
    }

    fn check_acl(&self, path: &str, acl: &[Acl]) -> Result<()> {
        match &self.validator {
            Some(validator) if !validator.is_valid_acl(self, path, acl) => {
                Err(self.violation(path, Violation::InvalidAcl))
            }
            _ => Ok(()),
        }
    }
}

/// Builds a [`Schema`]; Curator's `SchemaBuilder`, with its defaults: a random name, no
/// documentation, any data, `Can` for ephemeral, sequential and watched, deletable.
///
/// ```
/// use curator_framework::schema::{Allowance, Schema};
/// let schema = Schema::builder_regex("/jobs/job-.*")
///     .name("jobs")
///     .sequential(Allowance::Must)
///     .watched(Allowance::Cannot)
///     .build()?;
/// assert_eq!(schema.sequential(), Allowance::Must);
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Clone)]
#[must_use = "a schema builder does nothing until built"]
pub struct SchemaBuilder {
    matcher: Result<PathMatch>,
    name: String,
    documentation: String,
    validator: Option<Arc<dyn DataValidator>>,
    ephemeral: Allowance,
    sequential: Allowance,
    watched: Allowance,
    can_be_deleted: bool,
    metadata: BTreeMap<String, String>,
}

impl fmt::Debug for SchemaBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaBuilder")
            .field("name", &self.name)
            .field("ephemeral", &self.ephemeral)
            .field("sequential", &self.sequential)
            .field("watched", &self.watched)
            .field("can_be_deleted", &self.can_be_deleted)
            .finish_non_exhaustive()
    }
}

impl SchemaBuilder {
    fn new(matcher: Result<PathMatch>) -> Self {
        SchemaBuilder {
            matcher,
            name: uuid::Uuid::new_v4().to_string(),
            documentation: String::new(),
            validator: None,
            ephemeral: Allowance::Can,
            sequential: Allowance::Can,
            watched: Allowance::Can,
            can_be_deleted: true,
            metadata: BTreeMap::new(),
        }
    }

    /// The schema's name (default: a random UUID).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder("/a").name("a").build()?.name(), "a");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The documentation text.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert_eq!(Schema::builder("/a").documentation("d").build()?.documentation(), "d");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn documentation(mut self, documentation: impl Into<String>) -> Self {
        self.documentation = documentation.into();
        self
    }

    /// The validator of the data written here.
    ///
    /// ```
    /// use curator_framework::schema::{DataValidator, Schema};
    /// struct NonEmpty;
    /// impl DataValidator for NonEmpty {
    ///     fn is_valid(&self, _: &Schema, _: &str, data: &[u8]) -> bool { !data.is_empty() }
    /// }
    /// let schema = Schema::builder("/a").data_validator(NonEmpty).build()?;
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn data_validator(self, validator: impl DataValidator) -> Self {
        self.shared_data_validator(Arc::new(validator))
    }

    /// [`data_validator`](Self::data_validator), with a validator shared with other schemas.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use curator_framework::schema::{DataValidator, Schema};
    /// struct Any;
    /// impl DataValidator for Any {
    ///     fn is_valid(&self, _: &Schema, _: &str, _: &[u8]) -> bool { true }
    /// }
    /// let shared: Arc<dyn DataValidator> = Arc::new(Any);
    /// let a = Schema::builder("/a").shared_data_validator(shared.clone()).build()?;
    /// let b = Schema::builder("/b").shared_data_validator(shared).build()?;
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn shared_data_validator(mut self, validator: Arc<dyn DataValidator>) -> Self {
        self.validator = Some(validator);
        self
    }

    /// Whether nodes here may, must or cannot be ephemeral.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// let s = Schema::builder("/a").ephemeral(Allowance::Must).build()?;
    /// assert_eq!(s.ephemeral(), Allowance::Must);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn ephemeral(mut self, allowance: Allowance) -> Self {
        self.ephemeral = allowance;
        self
    }

    /// Whether nodes here may, must or cannot be sequential.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// let s = Schema::builder("/a").sequential(Allowance::Cannot).build()?;
    /// assert_eq!(s.sequential(), Allowance::Cannot);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn sequential(mut self, allowance: Allowance) -> Self {
        self.sequential = allowance;
        self
    }

    /// Whether reads here may, must or cannot set a watch.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema};
    /// let s = Schema::builder("/a").watched(Allowance::Cannot).build()?;
    /// assert_eq!(s.watched(), Allowance::Cannot);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn watched(mut self, allowance: Allowance) -> Self {
        self.watched = allowance;
        self
    }

    /// Whether nodes here may be deleted.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert!(!Schema::builder("/a").can_be_deleted(false).build()?.can_be_deleted());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn can_be_deleted(mut self, can_be_deleted: bool) -> Self {
        self.can_be_deleted = can_be_deleted;
        self
    }

    /// Free-form metadata (replaces any set before).
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// let s = Schema::builder("/a").metadata([("k", "v")]).build()?;
    /// assert_eq!(s.metadata().len(), 1);
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn metadata<K, V>(mut self, metadata: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.metadata = metadata
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self
    }

    /// The schema.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the regex did not compile.
    ///
    /// ```
    /// use curator_framework::schema::Schema;
    /// assert!(Schema::builder_regex("[").build().is_err());
    /// ```
    pub fn build(self) -> Result<Schema> {
        Ok(Schema {
            name: self.name,
            matcher: self.matcher?,
            documentation: self.documentation,
            validator: self.validator,
            ephemeral: self.ephemeral,
            sequential: self.sequential,
            watched: self.watched,
            can_be_deleted: self.can_be_deleted,
            metadata: self.metadata,
        })
    }
}

/// The schemas of a client; Curator's `SchemaSet`. Lookup: an exact path first, then the first
/// regex schema (in the order given) that matches; a path no schema matches is allowed by an
/// [`allow_unknown`](Self::allow_unknown) set, refused by a [`strict`](Self::strict) one.
///
/// ```
/// use curator_framework::schema::{Schema, SchemaSet};
/// let set = SchemaSet::allow_unknown(vec![Schema::builder("/a").name("a").build()?])?;
/// assert!(set.allows_unknown());
/// assert_eq!(set.schemas().len(), 1);
/// assert!(set.schema_for("/b").is_ok());
/// # Ok::<(), curator_framework::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SchemaSet {
    schemas: Vec<Schema>,
    exact: HashMap<String, usize>,
    regexes: Vec<usize>,
    allow_unknown: bool,
    default: Schema,
}

impl SchemaSet {
    /// A set that allows paths none of `schemas` matches (Curator's `useDefaultSchema = true`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when two schemas have the same name or the same exact path.
    ///
    /// ```
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let twice = vec![Schema::builder("/a").name("x").build()?, Schema::builder("/b").name("x").build()?];
    /// assert!(SchemaSet::allow_unknown(twice).is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn allow_unknown(schemas: Vec<Schema>) -> Result<SchemaSet> {
        SchemaSet::new(schemas, true)
    }

    /// A set that refuses paths none of `schemas` matches with [`Violation::NoSchema`]
    /// (Curator's `useDefaultSchema = false`).
    ///
    /// # Errors
    ///
    /// As [`allow_unknown`](Self::allow_unknown).
    ///
    /// ```
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/a").build()?])?;
    /// assert!(!set.allows_unknown() && set.schema_for("/b").is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn strict(schemas: Vec<Schema>) -> Result<SchemaSet> {
        SchemaSet::new(schemas, false)
    }

    fn new(schemas: Vec<Schema>, allow_unknown: bool) -> Result<SchemaSet> {
        let mut names = HashMap::new();
        let mut exact = HashMap::new();
        let mut regexes = Vec::new();
        for (index, schema) in schemas.iter().enumerate() {
            if names.insert(schema.name.as_str(), index).is_some() {
                return Err(Error::InvalidArgument(format!(
                    "two schemas are named {:?}",
                    schema.name
                )));
            }
            match &schema.matcher {
                PathMatch::Exact(path) => {
                    if exact.insert(path.clone(), index).is_some() {
                        return Err(Error::InvalidArgument(format!(
                            "two schemas are for the path {path:?}"
                        )));
                    }
                }
                PathMatch::Regex { .. } => regexes.push(index),
            }
        }
        let default = Schema::builder("")
            .name("__default__")
            .documentation("Default schema")
            .build()?;
        Ok(SchemaSet {
            schemas,
            exact,
            regexes,
            allow_unknown,
            default,
        })
    }

    /// Loads a set from Curator's schema-set JSON (what `SchemaSetLoader` reads): an array of
    /// objects with `name` and `path` (required), `isRegex`, `documentation`, `schemaValidator`
    /// (a name looked up in `validators`), `ephemeral`, `sequential`, `watched` (`"can"`,
    /// `"must"`, `"cannot"`, any case; default `can`), `canBeDeleted` (default **false**, as in
    /// Curator's loader) and `metadata` (an object; values that are not strings are kept as
    /// their JSON text). The set allows unknown paths; call [`into_strict`](Self::into_strict)
    /// for a strict one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the problem: text that is not JSON or not an array of
    /// objects, a missing `name` or `path`, an unknown allowance, a regex that does not compile,
    /// a validator not in `validators`, duplicate names.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use curator_framework::schema::SchemaSet;
    /// let json = r#"[{"name": "test", "path": "/a/b/c", "ephemeral": "must"}]"#;
    /// let set = SchemaSet::from_json(json, &HashMap::new())?;
    /// assert_eq!(set.schema_for("/a/b/c")?.name(), "test");
    /// assert!(SchemaSet::from_json("[{", &HashMap::new()).is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn from_json(
        text: &str,
        validators: &HashMap<String, Arc<dyn DataValidator>>,
    ) -> Result<SchemaSet> {
        let bad = |reason: String| Error::InvalidArgument(format!("schema set JSON: {reason}"));
        let entries: Vec<JsonSchema> =
            serde_json::from_str(text).map_err(|error| bad(error.to_string()))?;
        let mut schemas = Vec::with_capacity(entries.len());
        for (index, entry) in entries.into_iter().enumerate() {
            let at = |what: String| bad(format!("schema {index}: {what}"));
            let name = entry.name.ok_or_else(|| at("name is required".into()))?;
            let path = entry.path.ok_or_else(|| at("path is required".into()))?;
            let allowance = |field: &str, value: Option<String>| match value {
                None => Ok(Allowance::Can),
                Some(text) => Allowance::parse(&text).ok_or_else(|| {
                    at(format!(
                        "{field} must be one of can, must, cannot, not {text:?}"
                    ))
                }),
            };
            let mut builder = if entry.is_regex {
                Schema::builder_regex(&path)
            } else {
                Schema::builder(&path)
            };
            if let Some(validator) = entry.schema_validator {
                let found = validators
                    .get(&validator)
                    .ok_or_else(|| at(format!("no data validator named {validator:?}")))?;
                builder = builder.shared_data_validator(Arc::clone(found));
            }
            let metadata = entry.metadata.into_iter().map(|(key, value)| {
                let text = match value {
                    serde_json::Value::String(text) => text,
                    other => other.to_string(),
                };
                (key, text)
            });
            let schema = builder
                .name(name)
                .documentation(entry.documentation.unwrap_or_default())
                .ephemeral(allowance("ephemeral", entry.ephemeral)?)
                .sequential(allowance("sequential", entry.sequential)?)
                .watched(allowance("watched", entry.watched)?)
                .can_be_deleted(entry.can_be_deleted)
                .metadata(metadata)
                .build()
                .map_err(|error| at(error.to_string()))?;
            schemas.push(schema);
        }
        SchemaSet::allow_unknown(schemas).map_err(|error| bad(error.to_string()))
    }

    /// This set, refusing paths no schema matches.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use curator_framework::schema::SchemaSet;
    /// let set = SchemaSet::from_json("[]", &HashMap::new())?.into_strict();
    /// assert!(!set.allows_unknown());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn into_strict(mut self) -> SchemaSet {
        self.allow_unknown = false;
        self
    }

    /// Whether paths no schema matches are allowed.
    ///
    /// ```
    /// use curator_framework::schema::SchemaSet;
    /// assert!(SchemaSet::allow_unknown(vec![])?.allows_unknown());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn allows_unknown(&self) -> bool {
        self.allow_unknown
    }

    /// The schemas, in the order given.
    ///
    /// ```
    /// use curator_framework::schema::SchemaSet;
    /// assert!(SchemaSet::strict(vec![])?.schemas().is_empty());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn schemas(&self) -> &[Schema] {
        &self.schemas
    }

    /// The schema named `name` (Curator's `getNamedSchema`).
    ///
    /// ```
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/a").name("a").build()?])?;
    /// assert_eq!(set.named("a").map(|s| s.raw_path()), Some("/a"));
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn named(&self, name: &str) -> Option<&Schema> {
        self.schemas.iter().find(|schema| schema.name == name)
    }

    /// The schema that governs `path`: its exact-path schema, else the first matching regex
    /// schema, else (when unknown paths are allowed) a default that allows everything.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] with [`Violation::NoSchema`] (and no schema name) in a strict
    /// set.
    ///
    /// ```
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::allow_unknown(vec![Schema::builder_regex("/a/.*").name("a").build()?])?;
    /// assert_eq!(set.schema_for("/a/b")?.name(), "a");
    /// assert_eq!(set.schema_for("/b")?.name(), "__default__");
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn schema_for(&self, path: &str) -> Result<&Schema> {
        if let Some(&index) = self.exact.get(path) {
            return Ok(&self.schemas[index]);
        }
        let found = self
            .regexes
            .iter()
            .map(|&index| &self.schemas[index])
            .find(|schema| schema.matches(path));
        match found {
            Some(schema) => Ok(schema),
            None if self.allow_unknown => Ok(&self.default),
            None => Err(Error::SchemaViolation {
                schema: None,
                path: path.to_owned(),
                violation: Violation::NoSchema,
            }),
        }
    }

    /// Checks a create of `path` (as the caller names it) in `mode` with `data`: the ephemeral
    /// and sequential rules, then the data (Curator's `validateCreate`).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] naming the schema and the rule.
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema, SchemaSet};
    /// use curator_framework::CreateMode;
    /// let set = SchemaSet::strict(vec![Schema::builder("/q").sequential(Allowance::Must).build()?])?;
    /// assert!(set.check_create("/q", CreateMode::PersistentSequential, b"").is_ok());
    /// assert!(set.check_create("/q", CreateMode::Persistent, b"").is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_create(&self, path: &str, mode: CreateMode, data: &[u8]) -> Result<()> {
        let schema = self.schema_for(path)?;
        let ephemeral = mode.is_ephemeral();
        if schema.ephemeral.refuses(ephemeral) {
            return Err(schema.violation(
                path,
                if ephemeral {
                    Violation::CannotBeEphemeral
                } else {
                    Violation::MustBeEphemeral
                },
            ));
        }
        let sequential = mode.is_sequential();
        if schema.sequential.refuses(sequential) {
            return Err(schema.violation(
                path,
                if sequential {
                    Violation::CannotBeSequential
                } else {
                    Violation::MustBeSequential
                },
            ));
        }
        schema.check_data(path, data)
    }

    /// Checks the ACL a create or `set_acl()` gives `path`: the path's schema is looked up (a
    /// strict set refuses unknown paths, as Curator's `setACL` does) and its validator's
    /// [`is_valid_acl`](DataValidator::is_valid_acl) asked (Curator's `validateGeneral` with the
    /// ACL list).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] with [`Violation::InvalidAcl`] or [`Violation::NoSchema`].
    ///
    /// ```
    /// use curator_framework::acl::Acl;
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/a").build()?])?;
    /// assert!(set.check_acl("/a", &Acl::open_unsafe()).is_ok());
    /// assert!(set.check_acl("/b", &Acl::open_unsafe()).is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_acl(&self, path: &str, acl: &[Acl]) -> Result<()> {
        self.schema_for(path)?.check_acl(path, acl)
    }

    /// Checks the parent `path` a create with `creating_parents_if_needed()` (`mode`
    /// [`Persistent`](CreateMode::Persistent)) or `creating_parents_as_containers()`
    /// ([`Container`](CreateMode::Container)) would make: a create in `mode` with empty data
    /// and `acl`, as [`check_create`](Self::check_create) and [`check_acl`](Self::check_acl)
    /// see it.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] naming the schema and the rule.
    ///
    /// ```
    /// use curator_framework::acl::Acl;
    /// use curator_framework::schema::{Allowance, Schema, SchemaSet};
    /// use curator_framework::CreateMode;
    /// let set = SchemaSet::strict(vec![
    ///     Schema::builder("/q").sequential(Allowance::Must).build()?,
    ///     Schema::builder("/p").build()?,
    /// ])?;
    /// let acl = Acl::open_unsafe();
    /// assert!(set.check_parent("/p", CreateMode::Persistent, &acl).is_ok());
    /// assert!(set.check_parent("/q", CreateMode::Persistent, &acl).is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_parent(&self, path: &str, mode: CreateMode, acl: &[Acl]) -> Result<()> {
        self.check_create(path, mode, &[])?;
        self.check_acl(path, acl)
    }

    /// Checks a `set_data()` of `data` to `path` (Curator's `validateGeneral`).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] with [`Violation::InvalidData`] or [`Violation::NoSchema`].
    ///
    /// ```
    /// use curator_framework::schema::SchemaSet;
    /// assert!(SchemaSet::allow_unknown(vec![])?.check_set_data("/a", b"x").is_ok());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_set_data(&self, path: &str, data: &[u8]) -> Result<()> {
        self.schema_for(path)?.check_data(path, data)
    }

    /// Checks a delete of `path` (Curator's `validateDelete`).
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] with [`Violation::CannotBeDeleted`] or [`Violation::NoSchema`].
    ///
    /// ```
    /// use curator_framework::schema::{Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/a").can_be_deleted(false).build()?])?;
    /// assert!(set.check_delete("/a").is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_delete(&self, path: &str) -> Result<()> {
        let schema = self.schema_for(path)?;
        if schema.can_be_deleted {
            Ok(())
        } else {
            Err(schema.violation(path, Violation::CannotBeDeleted))
        }
    }

    /// Checks a read of `path` that sets a watch (`watching`) or not (Curator's
    /// `validateWatch`): `add_watch()` and `.watched()` reads watch.
    ///
    /// # Errors
    ///
    /// [`Error::SchemaViolation`] with [`Violation::CannotBeWatched`],
    /// [`Violation::MustBeWatched`] or [`Violation::NoSchema`].
    ///
    /// ```
    /// use curator_framework::schema::{Allowance, Schema, SchemaSet};
    /// let set = SchemaSet::strict(vec![Schema::builder("/a").watched(Allowance::Must).build()?])?;
    /// assert!(set.check_watch("/a", true).is_ok());
    /// assert!(set.check_watch("/a", false).is_err());
    /// # Ok::<(), curator_framework::Error>(())
    /// ```
    pub fn check_watch(&self, path: &str, watching: bool) -> Result<()> {
        let schema = self.schema_for(path)?;
        if schema.watched.refuses(watching) {
            return Err(schema.violation(
                path,
                if watching {
                    Violation::CannotBeWatched
                } else {
                    Violation::MustBeWatched
                },
            ));
        }
        Ok(())
    }
}

/// One entry of Curator's schema-set JSON.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonSchema {
    name: Option<String>,
    path: Option<String>,
    #[serde(default)]
    is_regex: bool,
    documentation: Option<String>,
    schema_validator: Option<String>,
    ephemeral: Option<String>,
    sequential: Option<String>,
    watched: Option<String>,
    #[serde(default)]
    can_be_deleted: bool,
    #[serde(default)]
    metadata: BTreeMap<String, serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_paths_win_over_regexes_and_regexes_go_in_order() {
        let set = SchemaSet::strict(vec![
            Schema::builder_regex("/a/.*")
                .name("first")
                .build()
                .unwrap(),
            Schema::builder_regex("/a/b.*")
                .name("second")
                .build()
                .unwrap(),
            Schema::builder("/a/b").name("exact").build().unwrap(),
        ])
        .unwrap();
        assert_eq!(set.schema_for("/a/b").unwrap().name(), "exact");
        assert_eq!(set.schema_for("/a/bc").unwrap().name(), "first");
        assert!(set.schema_for("/a").is_err());
    }

    #[test]
    fn regexes_match_whole_paths() {
        let schema = Schema::builder_regex("/a|/a/b").build().unwrap();
        assert!(schema.matches("/a/b"));
        assert!(!schema.matches("/a/bc") && !schema.matches("/x/a"));
    }

    #[test]
    fn modes_follow_the_allowances() {
        let set = SchemaSet::strict(vec![
            Schema::builder("/e")
                .name("e")
                .ephemeral(Allowance::Must)
                .sequential(Allowance::Cannot)
                .build()
                .unwrap(),
        ])
        .unwrap();
        let violation = |mode| match set.check_create("/e", mode, b"") {
            Err(Error::SchemaViolation {
                violation, schema, ..
            }) => {
                assert_eq!(schema.as_deref(), Some("e"));
                Some(violation)
            }
            _ => None,
        };
        assert_eq!(violation(CreateMode::Ephemeral), None);
        assert_eq!(
            violation(CreateMode::Persistent),
            Some(Violation::MustBeEphemeral)
        );
        assert_eq!(
            violation(CreateMode::EphemeralSequential),
            Some(Violation::CannotBeSequential)
        );
    }

    #[test]
    fn json_fields_and_defaults() {
        let json = r#"[{"name": "n", "path": "/p", "ephemeral": "MUST", "metadata": {"one": 1}}]"#;
        let set = SchemaSet::from_json(json, &HashMap::new()).unwrap();
        let schema = set.named("n").unwrap();
        assert_eq!(schema.ephemeral(), Allowance::Must);
        assert!(
            !schema.can_be_deleted(),
            "the loader's default, as Curator's"
        );
        assert_eq!(schema.metadata()["one"], "1");
        for bad in [
            r#"{"name": "n"}"#,
            r#"[{"path": "/p"}]"#,
            r#"[{"name": "n", "path": "/p", "watched": "maybe"}]"#,
            r#"[{"name": "n", "path": "(", "isRegex": true}]"#,
            r#"[{"name": "n", "path": "/p", "schemaValidator": "nope"}]"#,
        ] {
            assert!(
                matches!(
                    SchemaSet::from_json(bad, &HashMap::new()),
                    Err(Error::InvalidArgument(_))
                ),
                "{bad}"
            );
        }
    }
}
