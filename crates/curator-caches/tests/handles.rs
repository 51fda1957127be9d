//! Handles, events and listeners can move between tasks and threads.

use curator_caches::{
    CacheError, CacheEvent, ChildData, CuratorCache, CuratorCacheListener, NodeCache,
    PathChildrenCache, PathChildrenCacheEvent, PersistentWatcher, PersistentWatcherBuilder,
    PersistentWatcherEvent, TreeCache, TypedCache, TypedEvent,
};
use curator_framework::codec::Json;

fn send_sync<T: Send + Sync + 'static>() {}

#[test]
fn handles_events_and_listeners_are_send_and_sync() {
    send_sync::<CuratorCache>();
    send_sync::<TreeCache>();
    send_sync::<PathChildrenCache>();
    send_sync::<NodeCache>();
    send_sync::<TypedCache<Vec<u32>, Json>>();
    send_sync::<CuratorCacheListener>();
    send_sync::<CacheEvent>();
    send_sync::<CacheError>();
    send_sync::<ChildData>();
    send_sync::<PathChildrenCacheEvent>();
    send_sync::<TypedEvent<Vec<u32>>>();
    send_sync::<PersistentWatcher>();
    send_sync::<PersistentWatcherBuilder>();
    send_sync::<PersistentWatcherEvent>();
}

/// Compiled, never run: the watcher's futures can be spawned.
#[allow(dead_code)]
fn persistent_watcher_futures_are_send(watcher: &PersistentWatcher) {
    fn send<T: Send>(_: T) {}
    send(watcher.start());
    send(watcher.close());
}

#[test]
fn child_data_debug_never_prints_the_payload() {
    let node = ChildData::new("/a/secret", Default::default(), Some(b"hunter2".to_vec()));
    let printed = format!("{node:?}");
    assert!(!printed.contains("hunter2"), "{printed}");
    assert!(printed.contains("data_len: Some(7)"), "{printed}");
    assert_eq!(ChildData::new("/", Default::default(), None).name(), "/");
}
