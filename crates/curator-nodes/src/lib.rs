#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod group_member;
mod partitioner;
mod persistent_node;
mod ttl_node;

pub use group_member::{GroupMember, MemberEvent};
pub use partitioner::{
    PartitionFn, PartitionState, SetPartitioner, SetPartitionerBuilder, round_robin,
};
pub use persistent_node::{PersistentNode, PersistentNodeBuilder};
pub use ttl_node::{PersistentTtlNode, TOUCH_NODE};
