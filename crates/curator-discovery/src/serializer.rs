//! [`JsonInstanceSerializer`]: instances as the JSON Apache Curator reads and writes.

use curator_framework::codec::Codec;
use curator_framework::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};

use crate::instance::{ServiceInstance, ServiceType};
use crate::uri_spec::UriSpec;

/// When the serializer writes the `enabled` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum EnabledField {
    /// Only for disabled instances (the default): enabled instances are written byte for byte as
    /// Curator 5.4's default serializer writes them (it omits the field, "compatible mode"),
    /// and disabled ones keep their flag (`"enabled":false` at the end, as Curator writes it
    /// in non-compatible mode).
    #[default]
    WhenDisabled,
    /// Always, as Curator's `new JsonInstanceSerializer<>(cls, false)`.
    Always,
    /// Never, as Curator's default serializer; a disabled instance reads back as enabled.
    Never,
}

/// Turns instances into Curator's JSON and back (Curator's `JsonInstanceSerializer`).
///
/// Writing: compact UTF-8 JSON with the fields in Curator's order `name, id, address, port,
/// sslPort, payload, registrationTimeUTC, serviceType, uriSpec` (then `enabled`, see
/// [`EnabledField`]); absent values are `null`. The payload is written as serde writes it;
/// with [`payload_class`](Self::payload_class), an object payload gets Jackson's
/// `"@class":"<java class>"` as its first property, so Java peers whose payload class is a POJO
/// can read it (Java peers with payload class `Object` or `Map` read plain objects as maps).
///
/// Reading: missing fields take Curator's defaults (`""` for name and id, `0` for the
/// registration time, `DYNAMIC`, enabled), `null`s are absent values, unknown fields are
/// ignored, and Jackson's type hints on the payload are removed before it is decoded as `P`:
/// an object's `"@class"` property, and the `["java.lang.Long", 7]` wrapper arrays Jackson
/// writes for `Long`s and lists.
///
/// ```
/// use curator_discovery::{EnabledField, JsonInstanceSerializer, ServiceInstance};
/// let instance: ServiceInstance = ServiceInstance::builder("api")
///     .id("1")
///     .registration_time_utc(0)
///     .payload(serde_json::json!({"zone": "eu"}))
///     .build()
///     .unwrap();
/// let serializer = JsonInstanceSerializer::new()
///     .payload_class("com.example.Payload")
///     .enabled_field(EnabledField::Always);
/// let json = serializer.serialize(&instance).unwrap();
/// assert_eq!(
///     String::from_utf8(json.clone()).unwrap(),
///     r#"{"name":"api","id":"1","address":null,"port":null,"sslPort":null,"payload":{"@class":"com.example.Payload","zone":"eu"},"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}"#
/// );
/// let back: ServiceInstance = serializer.deserialize(&json).unwrap();
/// assert_eq!(back, instance);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonInstanceSerializer {
    payload_class: Option<String>,
    enabled: EnabledField,
}

impl JsonInstanceSerializer {
    /// Curator 5.4's default layout, with `enabled` written only for disabled instances.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `"@class":"<class>"` first in object payloads (Jackson's `@JsonTypeInfo(use =
    /// CLASS)`), for Java peers whose payload class is a POJO.
    pub fn payload_class(mut self, class: impl Into<String>) -> Self {
        self.payload_class = Some(class.into());
        self
    }

    /// When to write the `enabled` field (default [`EnabledField::WhenDisabled`]).
    pub fn enabled_field(mut self, enabled: EnabledField) -> Self {
        self.enabled = enabled;
        self
    }

    /// The instance's JSON.
    ///
    /// # Errors
    /// [`Error::Decode`] when the payload cannot be serialised by serde.
    pub fn serialize<P: Serialize>(&self, instance: &ServiceInstance<P>) -> Result<Vec<u8>> {
        let class = match (&self.payload_class, &instance.payload) {
            (Some(class), Some(payload)) => {
                let value = serde_json::to_value(payload).map_err(encode_error)?;
                value.is_object().then_some(class.as_str())
            }
            _ => None,
        };
        let enabled = match self.enabled {
            EnabledField::Always => Some(instance.enabled),
            EnabledField::WhenDisabled => (!instance.enabled).then_some(false),
            EnabledField::Never => None,
        };
        let wire = WireOut {
            name: &instance.name,
            id: &instance.id,
            address: instance.address.as_deref(),
            port: instance.port,
            ssl_port: instance.ssl_port,
            payload: instance
                .payload
                .as_ref()
                .map(|payload| PayloadOut { payload, class }),
            registration_time_utc: instance.registration_time_utc,
            service_type: instance.service_type,
            uri_spec: instance.uri_spec.as_ref(),
            enabled,
        };
        serde_json::to_vec(&wire).map_err(encode_error)
    }

    /// An instance from its JSON.
    ///
    /// # Errors
    /// [`Error::Decode`] (with an empty path) when `bytes` is not an instance or the payload is
    /// not a `P`.
    pub fn deserialize<P: DeserializeOwned>(&self, bytes: &[u8]) -> Result<ServiceInstance<P>> {
        // serde would also take a JSON array for the struct; Jackson takes only objects.
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return Err(Error::decode(
                "",
                "not a service instance: not a JSON object",
            ));
        }
        let wire: WireIn = serde_json::from_slice(bytes).map_err(decode_error)?;
        let payload = match wire.payload {
            None | Some(serde_json::Value::Null) => None,
            Some(value) => {
                Some(serde_json::from_value(without_type_hint(value)).map_err(decode_error)?)
            }
        };
        Ok(ServiceInstance {
            name: wire.name.unwrap_or_default(),
            id: wire.id.unwrap_or_default(),
            address: wire.address,
            port: wire.port,
            ssl_port: wire.ssl_port,
            payload,
            registration_time_utc: wire.registration_time_utc.unwrap_or(0),
            service_type: wire.service_type.unwrap_or_default(),
            uri_spec: wire.uri_spec,
            enabled: wire.enabled.unwrap_or(true),
        })
    }
}

/// The codec of a discovery's instance nodes
/// ([`ServiceDiscoveryBuilder::codec`](crate::ServiceDiscoveryBuilder::codec)).
///
/// ```
/// use curator_discovery::{JsonInstanceSerializer, ServiceInstance};
/// use curator_framework::codec::Codec;
/// let instance: ServiceInstance = ServiceInstance::builder("api").id("1").build().unwrap();
/// let codec = JsonInstanceSerializer::new();
/// let bytes = Codec::<ServiceInstance>::encode(&codec, &instance).unwrap();
/// assert_eq!(Codec::<ServiceInstance>::decode(&codec, &bytes).unwrap(), instance);
/// ```
impl<P: crate::Payload> Codec<ServiceInstance<P>> for JsonInstanceSerializer {
    fn encode(&self, instance: &ServiceInstance<P>) -> Result<Vec<u8>> {
        self.serialize(instance)
    }

    fn decode(&self, bytes: &[u8]) -> Result<ServiceInstance<P>> {
        self.deserialize(bytes)
    }
}

fn encode_error(error: serde_json::Error) -> Error {
    Error::decode("", format!("cannot encode the instance: {error}"))
}

fn decode_error(error: serde_json::Error) -> Error {
    Error::decode("", format!("not a service instance: {error}"))
}

/// The payload without Jackson's class information: an object's `@class` property, or the
/// `["<java class>", value]` wrapper of Longs and lists.
fn without_type_hint(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(mut map) => {
            map.remove("@class");
            Value::Object(map)
        }
        Value::Array(items) if is_type_wrapper(&items) => {
            items.into_iter().nth(1).unwrap_or(Value::Null)
        }
        other => other,
    }
}

fn is_type_wrapper(items: &[serde_json::Value]) -> bool {
    let [serde_json::Value::String(class), _] = items else {
        return false;
    };
    class.contains('.')
        && class.split('.').all(|segment| {
            segment
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && segment
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

#[derive(Serialize)]
struct WireOut<'a, P> {
    name: &'a str,
    id: &'a str,
    address: Option<&'a str>,
    port: Option<u16>,
    #[serde(rename = "sslPort")]
    ssl_port: Option<u16>,
    payload: Option<PayloadOut<'a, P>>,
    #[serde(rename = "registrationTimeUTC")]
    registration_time_utc: i64,
    #[serde(rename = "serviceType")]
    service_type: ServiceType,
    #[serde(rename = "uriSpec")]
    uri_spec: Option<&'a UriSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
}

/// A payload, with Jackson's `@class` first when it is an object and a class is set.
struct PayloadOut<'a, P> {
    payload: &'a P,
    class: Option<&'a str>,
}

impl<P: Serialize> Serialize for PayloadOut<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a, P> {
            #[serde(rename = "@class")]
            class: &'a str,
            #[serde(flatten)]
            payload: &'a P,
        }
        match self.class {
            Some(class) => Tagged {
                class,
                payload: self.payload,
            }
            .serialize(serializer),
            None => self.payload.serialize(serializer),
        }
    }
}

#[derive(Deserialize)]
struct WireIn {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    port: Option<u16>,
    #[serde(default, rename = "sslPort")]
    ssl_port: Option<u16>,
    #[serde(default)]
    payload: Option<serde_json::Value>,
    #[serde(default, rename = "registrationTimeUTC")]
    registration_time_utc: Option<i64>,
    #[serde(default, rename = "serviceType")]
    service_type: Option<ServiceType>,
    #[serde(default, rename = "uriSpec")]
    uri_spec: Option<UriSpec>,
    #[serde(default)]
    enabled: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_hints_are_removed() {
        assert_eq!(
            without_type_hint(json!({"@class": "java.util.LinkedHashMap", "1": "a"})),
            json!({"1": "a"})
        );
        assert_eq!(without_type_hint(json!(["java.lang.Long", 7])), json!(7));
        assert_eq!(
            without_type_hint(json!(["java.util.Arrays$ArrayList", ["x", "y"]])),
            json!(["x", "y"])
        );
        assert_eq!(
            without_type_hint(json!(["not a class", 7])),
            json!(["not a class", 7])
        );
        assert_eq!(without_type_hint(json!([1, 2])), json!([1, 2]));
        assert_eq!(without_type_hint(json!("x")), json!("x"));
    }
}
