#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod builder;
mod client;
mod error;
mod session;
mod wire;

// Stand-ins for the optional features' modules when they are compiled out.
mod off;
#[cfg(not(feature = "compression"))]
use off::compression;
#[cfg(not(feature = "schema"))]
use off::schema;

pub mod acl;
pub mod codec;
#[cfg(feature = "compression")]
pub mod compression;
pub mod ensemble;
pub mod identity;
pub mod listen;
pub mod metrics;
pub mod ops;
pub mod paths;
pub mod random;
pub mod recipe;
pub mod retry;
#[cfg(feature = "schema")]
pub mod schema;
pub mod security;
pub mod state;
pub mod transport;
pub mod types;
pub mod watcher;

pub use builder::CuratorFrameworkBuilder;
pub use client::CuratorFramework;
pub use error::{Error, JAVA_MAX_BUFFER, Result};
pub use state::ConnectionState;
pub use types::{CreateMode, Stat, WatchedEvent};
