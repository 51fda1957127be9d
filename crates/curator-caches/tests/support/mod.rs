//! Helpers for the cache tests (clients come from `curator-testkit`): logging, event recorders,
//! the server's tree and the replay of an event log.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::time::Duration;

use curator_caches::{CacheEvent, ChildData};
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::{CuratorFramework, Error, paths};
use curator_test::Timing;
use futures::StreamExt;
use tokio::time::Instant;

/// Logs to the test's output when `RUST_LOG` is set.
pub fn init_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Every event a cache publishes, in order, recorded from a stream.
pub struct Recorder {
    stream: ListenerStream<CacheEvent>,
    pub log: Vec<CacheEvent>,
}

impl Recorder {
    pub fn new(listenable: &Listenable<CacheEvent>) -> Self {
        Self {
            stream: listenable.stream(),
            log: Vec::new(),
        }
    }

    /// The next event, within the wait deadline.
    pub async fn next(&mut self) -> CacheEvent {
        let event = tokio::time::timeout(Timing::new().wait(), self.stream.next())
            .await
            .expect("a cache event in time")
            .expect("the event stream ended");
        self.log.push(event.clone());
        event
    }

    /// Records events until one matches `what`; returns it.
    pub async fn until(&mut self, what: &str, matches: impl Fn(&CacheEvent) -> bool) -> CacheEvent {
        let end = Instant::now() + Timing::new().wait();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let event = tokio::time::timeout(left, self.stream.next())
                .await
                .unwrap_or_else(|_| panic!("no {what} in time; saw {:#?}", self.log))
                .expect("the event stream ended");
            self.log.push(event.clone());
            if matches(&event) {
                return event;
            }
        }
    }

    /// Records whatever arrives within `quiet` (for checking that nothing more comes).
    pub async fn drain(&mut self, quiet: Duration) -> Vec<CacheEvent> {
        let mut extra = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout(quiet, self.stream.next()).await {
            self.log.push(event.clone());
            extra.push(event);
        }
        extra
    }
}

/// A node as the tests compare it: data and data version.
pub type Tree = BTreeMap<String, (String, i32)>;

/// The server's tree under `root` (inclusive), read node by node; nodes deleted while reading
/// are skipped.
pub async fn server_tree(client: &CuratorFramework, root: &str) -> Tree {
    let mut tree = Tree::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        match client.get_data().for_path(&path).await {
            Ok((data, stat)) => {
                tree.insert(path.clone(), (text(&data), stat.version));
            }
            Err(Error::NoNode) => continue,
            Err(error) => panic!("reading {path}: {error}"),
        }
        match client.get_children().for_path(&path).await {
            Ok((children, _)) => {
                pending.extend(children.iter().map(|child| paths::join(&path, child)));
            }
            Err(Error::NoNode) => {}
            Err(error) => panic!("listing {path}: {error}"),
        }
    }
    tree
}

/// A cache's content in the tests' form.
pub fn cache_tree(nodes: &[ChildData]) -> Tree {
    nodes
        .iter()
        .map(|n| {
            (
                n.path().to_owned(),
                (text(n.data().unwrap_or_default()), n.stat().version),
            )
        })
        .collect()
}

/// The tree an event log describes: replays it onto an empty map, checking on the way that
/// each path's history is valid (no create of a present node, no change or delete of an
/// absent one, versions only moving forward within an incarnation).
pub fn replay(log: &[CacheEvent]) -> Tree {
    let mut tree: BTreeMap<String, (String, i32, i64, i64)> = BTreeMap::new();
    for event in log {
        match event {
            CacheEvent::Created { node } => {
                let previous = tree.insert(node.path().to_owned(), entry(node));
                assert!(previous.is_none(), "created twice: {node:?}");
            }
            CacheEvent::Changed { old, node } => {
                let previous = tree
                    .insert(node.path().to_owned(), entry(node))
                    .unwrap_or_else(|| panic!("changed while absent: {node:?}"));
                assert_eq!(previous.2, node.stat().czxid, "changed across incarnations");
                assert_eq!(previous.3, old.stat().mzxid, "old value is the cached one");
                assert!(
                    node.stat().mzxid > previous.3,
                    "changes move forward: {old:?} -> {node:?}"
                );
            }
            CacheEvent::Deleted { old } => {
                let previous = tree.remove(old.path());
                assert!(previous.is_some(), "deleted while absent: {old:?}");
            }
            _ => {}
        }
    }
    tree.into_iter()
        .map(|(path, (data, version, _, _))| (path, (data, version)))
        .collect()
}

/// Node data as text, for readable failures.
pub fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn entry(node: &ChildData) -> (String, i32, i64, i64) {
    (
        text(node.data().unwrap_or_default()),
        node.stat().version,
        node.stat().czxid,
        node.stat().mzxid,
    )
}

/// Creates `root/dNN/nNNN` for `dirs` × `leaves` nodes, many requests in flight at once.
pub async fn build_tree(client: &CuratorFramework, root: &str, dirs: usize, leaves: usize) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(root, b"")
        .await
        .unwrap();
    let dirs: Vec<String> = (0..dirs).map(|d| format!("{root}/d{d:02}")).collect();
    let creates: Vec<_> = dirs
        .iter()
        .map(|dir| client.create().for_path(dir, b"").into_future())
        .collect();
    for result in futures::future::join_all(creates).await {
        result.unwrap();
    }
    let paths: Vec<String> = dirs
        .iter()
        .flat_map(|dir| (0..leaves).map(move |n| format!("{dir}/n{n:03}")))
        .collect();
    for batch in paths.chunks(1000) {
        let creates: Vec<_> = batch
            .iter()
            .map(|path| {
                client
                    .create()
                    .for_path(path, b"0123456789abcdef")
                    .into_future()
            })
            .collect();
        for result in futures::future::join_all(creates).await {
            result.unwrap();
        }
    }
}

/// The differences between a cache's tree and the server's, one line each.
pub fn diff(cache: &Tree, server: &Tree) -> String {
    let mut lines = Vec::new();
    for (path, value) in server {
        match cache.get(path) {
            None => lines.push(format!("missing {path} {value:?}")),
            Some(cached) if cached != value => {
                lines.push(format!("stale {path} cached {cached:?} server {value:?}"))
            }
            Some(_) => {}
        }
    }
    for (path, value) in cache {
        if !server.contains_key(path) {
            lines.push(format!("extra {path} {value:?}"));
        }
    }
    lines.join("\n")
}
