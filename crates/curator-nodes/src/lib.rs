#![doc = include_str!("../README.md")]

mod persistent_node;
mod ttl_node;

pub use persistent_node::PersistentNode;
pub use ttl_node::{PersistentTtlNode, TOUCH_NODE};
