//! [`SchemaSet`]: the schemas a client checks its operations against, and Curator's JSON form.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use std::sync::Arc;

use super::{Allowance, DataValidator, PathMatch, Schema, Violation};
use crate::acl::Acl;
use crate::error::{Error, Result};
use crate::types::CreateMode;

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
