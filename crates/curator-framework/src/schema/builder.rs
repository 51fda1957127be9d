//! [`SchemaBuilder`]: the options of one [`Schema`], checked by `build()`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{Allowance, DataValidator, PathMatch, Schema};
use crate::error::Result;

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
    pub(super) fn new(matcher: Result<PathMatch>) -> Self {
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
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when the regex did not compile.
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
