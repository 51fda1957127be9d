//! Status lines for people (`curator: ...` on stderr) or programs (one JSON object per line).

use serde_json::{Map, Value, json};

use crate::output::{self, WriteError};

/// Where status events and results go, in the chosen format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reporter {
    pub(crate) json: bool,
}

impl Reporter {
    /// A status event on stderr: `curator: <human>` or `{"event": <event>, ...fields}`.
    ///
    /// # Errors
    /// A failed write: standard error is gone (see [`output`]).
    pub(crate) fn status(
        &self,
        event: &str,
        fields: Value,
        human: impl AsRef<str>,
    ) -> Result<(), WriteError> {
        if self.json {
            output::err(Self::object(event, fields))
        } else {
            output::err(format_args!("curator: {}", human.as_ref()))
        }
    }

    /// A result on stdout: `human` as is, or the JSON value.
    ///
    /// # Errors
    /// A failed write: standard output is gone (see [`output`]).
    pub(crate) fn result(&self, value: Value, human: impl AsRef<str>) -> Result<(), WriteError> {
        if self.json {
            output::out(value)
        } else {
            output::out(human.as_ref())
        }
    }

    /// `{"event": <event>, ...fields}`.
    pub(crate) fn object(event: &str, fields: Value) -> Value {
        let mut object = Map::new();
        object.insert("event".into(), json!(event));
        if let Value::Object(fields) = fields {
            object.extend(fields);
        }
        Value::Object(object)
    }
}
