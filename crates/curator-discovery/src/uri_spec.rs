//! [`UriSpec`]: Curator's URI template of a service instance.

use std::collections::HashMap;
use std::fmt;

use curator_framework::{Error, Result};
use serde::{Deserialize, Serialize};

use crate::instance::ServiceInstance;

/// One piece of a [`UriSpec`]: literal text, or the name of a variable.
///
/// ```
/// use curator_discovery::UriPart;
/// let part = UriPart::variable("port");
/// assert!(part.is_variable());
/// assert_eq!(part.value(), "port");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UriPart {
    // Field order is Curator's JSON order: `value`, then `variable`.
    #[serde(default)]
    value: String,
    #[serde(default)]
    variable: bool,
}

impl UriPart {
    /// Literal text.
    pub fn literal(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            variable: false,
        }
    }

    /// A variable, replaced when the URI is built.
    pub fn variable(name: impl Into<String>) -> Self {
        Self {
            value: name.into(),
            variable: true,
        }
    }

    /// The text, or the variable's name.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether this part is a variable.
    pub fn is_variable(&self) -> bool {
        self.variable
    }
}

/// A URI template (Curator's `UriSpec`), such as `{scheme}://{address}:{port}/api`.
///
/// [`build`](Self::build) fills in the variables from an instance: `{scheme}` (`https` when
/// the instance has an SSL port, else `http`), `{name}`, `{id}`, `{address}`, `{port}`,
/// `{ssl-port}`, `{registration-time-utc}`, `{service-type}` (lower case), and `{[}`/`{]}` for
/// literal braces. Extra variables can be given to
/// [`build_with`](Self::build_with); an unknown variable is kept as `{name}`, and a known one
/// whose value the instance lacks (no port, say) becomes empty text.
///
/// It serialises as Curator does: `{"parts":[{"value":"scheme","variable":true},...]}`.
///
/// ```
/// use curator_discovery::{ServiceInstance, UriSpec};
/// let spec = UriSpec::parse("{scheme}://{address}:{port}/v1").unwrap();
/// let instance: ServiceInstance = ServiceInstance::builder("api")
///     .address("10.0.0.5")
///     .port(8080)
///     .build()
///     .unwrap();
/// assert_eq!(spec.build(&instance), "http://10.0.0.5:8080/v1");
/// assert_eq!(spec.to_string(), "{scheme}://{address}:{port}/v1");
/// assert!(UriSpec::parse("{oops").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct UriSpec {
    #[serde(default)]
    parts: Vec<UriPart>,
}

impl UriSpec {
    /// Parses a template: text in `{...}` is a variable (trimmed), the rest is literal.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `{` inside a variable, a `}` without its `{`, or a
    /// missing final `}` (Curator's rules).
    pub fn parse(template: &str) -> Result<Self> {
        let mut parts = Vec::new();
        let mut inside = false;
        let mut token = String::new();
        let flush = |token: &mut String, inside: bool, parts: &mut Vec<UriPart>| {
            if !token.is_empty() {
                let value = std::mem::take(token);
                parts.push(if inside {
                    UriPart::variable(value.trim())
                } else {
                    UriPart::literal(value)
                });
            }
        };
        for c in template.chars() {
            match c {
                '{' if inside => {
                    return Err(invalid(template, "'{' is not allowed inside a variable"));
                }
                '}' if !inside => return Err(invalid(template, "'}' must follow a '{'")),
                '{' | '}' => {
                    flush(&mut token, inside, &mut parts);
                    inside = c == '{';
                }
                c => token.push(c),
            }
        }
        if inside {
            return Err(invalid(template, "missing final '}'"));
        }
        flush(&mut token, inside, &mut parts);
        Ok(Self { parts })
    }

    /// A spec made of `parts`.
    pub fn from_parts(parts: Vec<UriPart>) -> Self {
        Self { parts }
    }

    /// The parts, in order.
    pub fn parts(&self) -> &[UriPart] {
        &self.parts
    }

    /// The URI for `instance`.
    pub fn build<P>(&self, instance: &ServiceInstance<P>) -> String {
        self.build_with(instance, &HashMap::new())
    }

    /// The URI for `instance`, with `variables` taking precedence over the instance's values.
    pub fn build_with<P>(
        &self,
        instance: &ServiceInstance<P>,
        variables: &HashMap<String, String>,
    ) -> String {
        let mut uri = String::new();
        for part in &self.parts {
            if !part.variable {
                uri.push_str(&part.value);
                continue;
            }
            if let Some(value) = variables.get(&part.value) {
                uri.push_str(value);
                continue;
            }
            let text = |value: Option<String>| value.unwrap_or_default();
            match part.value.as_str() {
                "scheme" => uri.push_str(if instance.ssl_port().is_some() {
                    "https"
                } else {
                    "http"
                }),
                "name" => uri.push_str(instance.name()),
                "id" => uri.push_str(instance.id()),
                "address" => uri.push_str(instance.address().unwrap_or_default()),
                "port" => uri.push_str(&text(instance.port().map(|p| p.to_string()))),
                "ssl-port" => uri.push_str(&text(instance.ssl_port().map(|p| p.to_string()))),
                "registration-time-utc" => {
                    uri.push_str(&instance.registration_time_utc().to_string());
                }
                "service-type" => uri.push_str(&instance.service_type().as_str().to_lowercase()),
                "[" => uri.push('{'),
                "]" => uri.push('}'),
                other => {
                    uri.push('{');
                    uri.push_str(other);
                    uri.push('}');
                }
            }
        }
        uri
    }
}

/// The template the spec was parsed from (variables in braces).
impl fmt::Display for UriSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            if part.variable {
                write!(f, "{{{}}}", part.value)?;
            } else {
                f.write_str(&part.value)?;
            }
        }
        Ok(())
    }
}

fn invalid(template: &str, reason: &str) -> Error {
    Error::InvalidArgument(format!("URI spec {template:?}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_curator() {
        let spec = UriSpec::parse("{a}/b/{ c }").unwrap();
        assert_eq!(
            spec.parts(),
            [
                UriPart::variable("a"),
                UriPart::literal("/b/"),
                UriPart::variable("c")
            ]
        );
        assert_eq!(
            serde_json::to_string(&spec).unwrap(),
            r#"{"parts":[{"value":"a","variable":true},{"value":"/b/","variable":false},{"value":"c","variable":true}]}"#
        );
        assert!(UriSpec::parse("a}").is_err());
        assert!(UriSpec::parse("{a{b}}").is_err());
        assert_eq!(UriSpec::parse("").unwrap().parts(), []);
    }

    #[test]
    fn builds_every_variable() {
        let instance: ServiceInstance = ServiceInstance::builder("svc")
            .id("i1")
            .address("h")
            .port(1)
            .ssl_port(2)
            .registration_time_utc(7)
            .service_type(crate::ServiceType::DynamicSequential)
            .build()
            .unwrap();
        let spec = UriSpec::parse(
            "{scheme}|{name}|{id}|{address}|{port}|{ssl-port}|{registration-time-utc}|{service-type}|{[}x{]}|{custom}|{unknown}",
        )
        .unwrap();
        let vars = HashMap::from([("custom".to_owned(), "c".to_owned())]);
        assert_eq!(
            spec.build_with(&instance, &vars),
            "https|svc|i1|h|1|2|7|dynamic_sequential|{x}|c|{unknown}"
        );
    }
}
