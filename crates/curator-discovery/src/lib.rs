#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod cache;
mod discovery;
mod instance;
mod provider;
mod registration;
mod serializer;
mod strategy;
mod uri_spec;

pub use cache::{ServiceCache, ServiceCacheBuilder, ServiceCacheEvent};
pub use discovery::{ServiceDiscovery, ServiceDiscoveryBuilder};
pub use instance::{ServiceInstance, ServiceInstanceBuilder, ServiceType};
pub use provider::{DownInstancePolicy, ServiceProvider, ServiceProviderBuilder};
pub use serializer::{EnabledField, JsonInstanceSerializer};
pub use strategy::{ProviderStrategy, RandomStrategy, RoundRobinStrategy, StickyStrategy};
pub use uri_spec::{UriPart, UriSpec};

/// What an instance's payload can be: any serde type that is `Clone`, `Send` and `Sync`
/// (implemented for all of them). [`serde_json::Value`] takes any JSON; `()` stands for no
/// payload (it reads any payload as nothing only when it is `null` or absent).
///
/// ```
/// fn payload<P: curator_discovery::Payload>() {}
/// payload::<serde_json::Value>();
/// payload::<String>();
/// payload::<()>();
/// ```
pub trait Payload:
    serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static
{
}

impl<T> Payload for T where
    T: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static
{
}
