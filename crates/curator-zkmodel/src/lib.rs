#![doc = include_str!("../README.md")]

pub mod acl;
mod config;
mod model;
pub mod path;
mod server;
mod tree;
mod watch;

pub use config::{ModelConfig, ServerRelease};
pub use model::{Connect, ConnectionId, Delivery, Message, Model, Outcome, Reply};
pub use server::{InProcessServer, InProcessServerBuilder, ServeError, Server};
