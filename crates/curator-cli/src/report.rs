//! Status lines for people (`curator: ...` on stderr) or programs (one JSON object per line).

use serde_json::{Map, Value, json};

/// Where status events and results go, in the chosen format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reporter {
    pub(crate) json: bool,
}

impl Reporter {
    /// A status event on stderr: `curator: <human>` or `{"event": <event>, ...fields}`.
    pub(crate) fn status(&self, event: &str, fields: Value, human: impl AsRef<str>) {
        if self.json {
            eprintln!("{}", Self::object(event, fields));
        } else {
            eprintln!("curator: {}", human.as_ref());
        }
    }

    /// A result on stdout: `human` as is, or the JSON value.
    pub(crate) fn result(&self, value: Value, human: impl AsRef<str>) {
        if self.json {
            println!("{value}");
        } else {
            println!("{}", human.as_ref());
        }
    }

    fn object(event: &str, fields: Value) -> Value {
        let mut object = Map::new();
        object.insert("event".into(), json!(event));
        if let Value::Object(fields) = fields {
            object.extend(fields);
        }
        Value::Object(object)
    }
}
