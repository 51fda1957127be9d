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

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use regex::Regex;

use crate::acl::Acl;
use crate::error::{Error, Result};

mod builder;
mod set;
#[cfg(test)]
mod tests;

pub use crate::error::Violation;
pub use builder::SchemaBuilder;
pub use set::SchemaSet;

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
