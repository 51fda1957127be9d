#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod cached;
mod modeled;
mod spec;
mod zpath;

pub use cached::{CachedModeled, ModeledEvent};
pub use modeled::{Modeled, ZNode};
pub use spec::{ModelSpec, ModelSpecBuilder, Parents};
pub use zpath::{NodeName, PathParams, TypedZPath, ZPath};
