#![doc = include_str!("../README.md")]
// Background work goes through the recipe runtime (clippy.toml says why).
#![warn(clippy::disallowed_methods)]

mod core;
mod curator_cache;
mod engine;
mod event;
mod listener;
mod node_cache;
mod path_children_cache;
mod persistent_watcher;
mod selector;
mod store;
mod tree_cache;
mod typed;

pub use curator_cache::{CuratorCache, CuratorCacheBuilder};
pub use engine::WatchMode;
pub use event::{CacheError, CacheEvent, ChildData};
pub use listener::{CuratorCacheListener, CuratorCacheListenerBuilder};
pub use node_cache::{NodeCache, NodeCacheBuilder};
pub use path_children_cache::{
    PathChildrenCache, PathChildrenCacheBuilder, PathChildrenCacheEvent, StartMode,
};
pub use persistent_watcher::{PersistentWatcher, PersistentWatcherBuilder, PersistentWatcherEvent};
pub use selector::{FnSelector, TreeCacheSelector};
pub use tree_cache::{TreeCache, TreeCacheBuilder};
pub use typed::{TypedCache, TypedEvent};
