//! [`ServiceInstance`]: one registered instance of a service, and its builder.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use curator_framework::{CreateMode, Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::serializer::JsonInstanceSerializer;
use crate::uri_spec::UriSpec;

/// How an instance's node lives (Curator's `ServiceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum ServiceType {
    /// An ephemeral node, kept while the registering discovery runs (the default).
    #[default]
    Dynamic,
    /// A persistent node, deleted by the registering discovery's `close`.
    Static,
    /// A persistent node that outlives the registering discovery: `close` leaves it; only
    /// `unregister_service` deletes it.
    Permanent,
    /// An ephemeral sequential node: the node name is the id followed by the server's
    /// 10-digit sequence number (the instance's JSON keeps the plain id).
    DynamicSequential,
}

impl ServiceType {
    /// Curator's name: `DYNAMIC`, `STATIC`, `PERMANENT` or `DYNAMIC_SEQUENTIAL`.
    ///
    /// ```
    /// assert_eq!(curator_discovery::ServiceType::DynamicSequential.as_str(), "DYNAMIC_SEQUENTIAL");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::Dynamic => "DYNAMIC",
            ServiceType::Static => "STATIC",
            ServiceType::Permanent => "PERMANENT",
            ServiceType::DynamicSequential => "DYNAMIC_SEQUENTIAL",
        }
    }

    /// Whether the node is ephemeral (`Dynamic` and `DynamicSequential`).
    ///
    /// ```
    /// assert!(curator_discovery::ServiceType::Dynamic.is_dynamic());
    /// assert!(!curator_discovery::ServiceType::Permanent.is_dynamic());
    /// ```
    pub fn is_dynamic(self) -> bool {
        matches!(self, ServiceType::Dynamic | ServiceType::DynamicSequential)
    }

    /// The create mode of the instance's node (as Curator's `ServiceDiscoveryImpl`).
    pub(crate) fn create_mode(self) -> CreateMode {
        match self {
            ServiceType::Dynamic => CreateMode::Ephemeral,
            ServiceType::DynamicSequential => CreateMode::EphemeralSequential,
            ServiceType::Static | ServiceType::Permanent => CreateMode::Persistent,
        }
    }
}

/// One instance of a service (Curator's `ServiceInstance`), stored as JSON at
/// `<base path>/<name>/<id>`.
///
/// `P` is the payload type, any serde type; the default, [`serde_json::Value`], takes whatever
/// JSON the registering side wrote (Jackson's `@class` type hints removed, see the
/// [crate docs](crate)). Build one with [`ServiceInstance::builder`]; change one with
/// [`to_builder`](Self::to_builder).
///
/// `Debug` never prints the payload.
///
/// ```
/// use curator_discovery::{ServiceInstance, ServiceType};
/// let instance = ServiceInstance::builder("api")
///     .address("10.0.0.5")
///     .port(8080)
///     .payload(serde_json::json!({"zone": "eu-1"}))
///     .build()
///     .unwrap();
/// assert_eq!(instance.name(), "api");
/// assert_eq!(instance.id().len(), 36); // a random UUID
/// assert_eq!(instance.service_type(), ServiceType::Dynamic);
/// assert!(instance.is_enabled());
/// let json = instance.to_json().unwrap();
/// assert_eq!(ServiceInstance::from_json(&json).unwrap(), instance);
/// ```
#[derive(Clone, PartialEq)]
pub struct ServiceInstance<P = serde_json::Value> {
    pub(crate) name: String,
    pub(crate) id: String,
    pub(crate) address: Option<String>,
    pub(crate) port: Option<u16>,
    pub(crate) ssl_port: Option<u16>,
    pub(crate) payload: Option<P>,
    pub(crate) registration_time_utc: i64,
    pub(crate) service_type: ServiceType,
    pub(crate) uri_spec: Option<UriSpec>,
    pub(crate) enabled: bool,
}

impl<P> fmt::Debug for ServiceInstance<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceInstance")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("address", &self.address)
            .field("port", &self.port)
            .field("ssl_port", &self.ssl_port)
            .field("has_payload", &self.payload.is_some())
            .field("registration_time_utc", &self.registration_time_utc)
            .field("service_type", &self.service_type)
            .field("uri_spec", &self.uri_spec.as_ref().map(ToString::to_string))
            .field("enabled", &self.enabled)
            .finish()
    }
}

impl ServiceInstance {
    /// A builder for an instance of the service `name`, with Curator's defaults: a random UUID
    /// as id, the registration time now, [`ServiceType::Dynamic`], enabled; no address, ports,
    /// payload or URI spec.
    ///
    /// The builder starts with the default payload type, [`serde_json::Value`], so it needs no
    /// type annotation; [`payload`](ServiceInstanceBuilder::payload) switches it to the type of
    /// the payload given. For a typed instance without a payload, use
    /// [`ServiceInstanceBuilder::new`].
    ///
    /// ```
    /// use curator_discovery::ServiceInstance;
    /// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
    /// struct Zone { zone: String }
    /// let plain = ServiceInstance::builder("api").port(80).build().unwrap();
    /// let typed = ServiceInstance::builder("api").payload(Zone { zone: "eu-1".into() }).build().unwrap();
    /// assert_eq!(typed.payload().unwrap().zone, "eu-1");
    /// # let _ = plain;
    /// ```
    pub fn builder(name: impl Into<String>) -> ServiceInstanceBuilder {
        ServiceInstanceBuilder::new(name)
    }
}

impl<P> ServiceInstance<P> {
    /// A builder holding this instance's values, to make a changed copy (for
    /// `update_service`).
    ///
    /// ```
    /// use curator_discovery::ServiceInstance;
    /// let v1: ServiceInstance = ServiceInstance::builder("api").port(80).build().unwrap();
    /// let v2 = v1.to_builder().port(81).enabled(false).build().unwrap();
    /// assert_eq!((v2.id(), v2.port(), v2.is_enabled()), (v1.id(), Some(81), false));
    /// ```
    pub fn to_builder(&self) -> ServiceInstanceBuilder<P>
    where
        P: Clone,
    {
        ServiceInstanceBuilder {
            instance: self.clone(),
        }
    }

    /// The service's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The instance's id (unique within the service).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The address, when set.
    pub fn address(&self) -> Option<&str> {
        self.address.as_deref()
    }

    /// The port, when set.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The SSL port, when set.
    pub fn ssl_port(&self) -> Option<u16> {
        self.ssl_port
    }

    /// The payload, when set.
    pub fn payload(&self) -> Option<&P> {
        self.payload.as_ref()
    }

    /// The registration time, in milliseconds since the Unix epoch (Curator's
    /// `registrationTimeUTC`).
    pub fn registration_time_utc(&self) -> i64 {
        self.registration_time_utc
    }

    /// The registration time as a [`SystemTime`].
    pub fn registration_time(&self) -> SystemTime {
        let millis = self.registration_time_utc.unsigned_abs();
        let offset = std::time::Duration::from_millis(millis);
        if self.registration_time_utc >= 0 {
            UNIX_EPOCH + offset
        } else {
            UNIX_EPOCH - offset
        }
    }

    /// How the instance's node lives.
    pub fn service_type(&self) -> ServiceType {
        self.service_type
    }

    /// The URI template, when set.
    pub fn uri_spec(&self) -> Option<&UriSpec> {
        self.uri_spec.as_ref()
    }

    /// The URI built from the URI spec (`None` without one).
    pub fn build_uri(&self) -> Option<String> {
        self.uri_spec.as_ref().map(|spec| spec.build(self))
    }

    /// Whether the instance takes work. Providers skip disabled instances.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
}

impl<P: Serialize> ServiceInstance<P> {
    /// The JSON Apache Curator 5.4's default `JsonInstanceSerializer` writes (see
    /// [`JsonInstanceSerializer`] for the `enabled` field and Java payload classes).
    ///
    /// # Errors
    /// [`Error::Decode`] when the payload cannot be serialised.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        JsonInstanceSerializer::new().serialize(self)
    }
}

impl<P: DeserializeOwned> ServiceInstance<P> {
    /// Reads an instance from JSON as Curator writes it, tolerating missing fields, `null`s,
    /// unknown fields and Jackson's type hints on the payload.
    ///
    /// # Errors
    /// [`Error::Decode`] when `bytes` is not such JSON or the payload is not a `P`.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        JsonInstanceSerializer::new().deserialize(bytes)
    }
}

/// Builds a [`ServiceInstance`]; invalid input is reported by [`build`](Self::build).
///
/// ```
/// use curator_discovery::{ServiceInstance, ServiceType, UriSpec};
/// let instance: ServiceInstance<String> = ServiceInstance::builder("api")
///     .id("host-1")
///     .address("10.0.0.5")
///     .port(8080)
///     .ssl_port(8443)
///     .payload("blue".to_owned())
///     .service_type(ServiceType::Static)
///     .uri_spec(UriSpec::parse("{scheme}://{address}:{ssl-port}").unwrap())
///     .build()
///     .unwrap();
/// assert_eq!(instance.build_uri().unwrap(), "https://10.0.0.5:8443");
/// assert!(ServiceInstance::builder("a/b").build().is_err());
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct ServiceInstanceBuilder<P = serde_json::Value> {
    instance: ServiceInstance<P>,
}

impl<P> fmt::Debug for ServiceInstanceBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceInstanceBuilder")
            .field("instance", &self.instance)
            .finish()
    }
}

impl<P> ServiceInstanceBuilder<P> {
    /// A builder for an instance of the service `name` with payload type `P`, with Curator's
    /// defaults (see [`ServiceInstance::builder`], which starts with the default payload type).
    ///
    /// ```
    /// use curator_discovery::{ServiceInstance, ServiceInstanceBuilder};
    /// let bare: ServiceInstance<()> = ServiceInstanceBuilder::new("worker").build().unwrap();
    /// assert!(bare.payload().is_none());
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        ServiceInstanceBuilder {
            instance: ServiceInstance {
                name: name.into(),
                id: curator_framework::random::uuid().to_string(),
                address: None,
                port: None,
                ssl_port: None,
                payload: None,
                registration_time_utc: now_millis(),
                service_type: ServiceType::Dynamic,
                uri_spec: None,
                enabled: true,
            },
        }
    }

    /// The service's name (a valid ZooKeeper node name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.instance.name = name.into();
        self
    }

    /// The instance's id (a valid ZooKeeper node name; default a random UUID).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.instance.id = id.into();
        self
    }

    /// The address (default none: unlike Curator, no local IP address is guessed).
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.instance.address = Some(address.into());
        self
    }

    /// The port.
    pub fn port(mut self, port: u16) -> Self {
        self.instance.port = Some(port);
        self
    }

    /// The SSL port.
    pub fn ssl_port(mut self, port: u16) -> Self {
        self.instance.ssl_port = Some(port);
        self
    }

    /// The payload; the builder's payload type becomes the payload's.
    pub fn payload<Q>(self, payload: Q) -> ServiceInstanceBuilder<Q> {
        let ServiceInstance {
            name,
            id,
            address,
            port,
            ssl_port,
            payload: _,
            registration_time_utc,
            service_type,
            uri_spec,
            enabled,
        } = self.instance;
        ServiceInstanceBuilder {
            instance: ServiceInstance {
                name,
                id,
                address,
                port,
                ssl_port,
                payload: Some(payload),
                registration_time_utc,
                service_type,
                uri_spec,
                enabled,
            },
        }
    }

    /// The registration time in milliseconds since the Unix epoch (default now).
    pub fn registration_time_utc(mut self, millis: i64) -> Self {
        self.instance.registration_time_utc = millis;
        self
    }

    /// How the node lives (default [`ServiceType::Dynamic`]).
    pub fn service_type(mut self, service_type: ServiceType) -> Self {
        self.instance.service_type = service_type;
        self
    }

    /// The URI template.
    pub fn uri_spec(mut self, spec: UriSpec) -> Self {
        self.instance.uri_spec = Some(spec);
        self
    }

    /// Whether the instance takes work (default `true`).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.instance.enabled = enabled;
        self
    }

    /// The instance.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the name or the id is not a valid ZooKeeper node name
    /// (empty, `.`, `..`, containing `/` or a character ZooKeeper rejects).
    pub fn build(self) -> Result<ServiceInstance<P>> {
        validate_node_name("service name", &self.instance.name)?;
        validate_node_name("instance id", &self.instance.id)?;
        Ok(self.instance)
    }
}

/// Checks that `name` can be one path segment.
pub(crate) fn validate_node_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') {
        return Err(Error::InvalidArgument(format!(
            "{what} {name:?} must be a non-empty node name without '/'"
        )));
    }
    curator_framework::paths::validate(&format!("/{name}"))
        .map_err(|error| Error::InvalidArgument(format!("{what} {name:?}: {error}")))
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
