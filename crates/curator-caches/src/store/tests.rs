//! The store against its reference: a plain map of paths.

use std::collections::{BTreeMap, HashMap, HashSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::*;

fn stat(czxid: i64, mzxid: i64) -> Stat {
    Stat {
        czxid,
        mzxid,
        pzxid: czxid,
        ..Stat::default()
    }
}

fn paths_of(events: &[CacheEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.path().unwrap().to_owned())
        .collect()
}

#[test]
fn upsert_emits_only_differences() {
    let mut store = Store::new(Arc::from("/a"));
    let mut events = Vec::new();
    let a: Arc<str> = Arc::from("/a");
    let b: Arc<str> = Arc::from("/a/b");
    store.upsert(&a, stat(1, 1), None, &mut events);
    store.upsert(&b, stat(2, 2), None, &mut events);
    assert_eq!(store.child_paths("/a").unwrap(), vec![Arc::clone(&b)]);
    // The same state again, and an older one: nothing.
    store.upsert(&a, stat(1, 1), None, &mut events);
    store.upsert(&b, stat(2, 2), None, &mut events);
    assert_eq!(events.len(), 2);
    store.upsert(&a, stat(1, 3), None, &mut events);
    assert!(matches!(events[2], CacheEvent::Changed { .. }));
    store.upsert(&a, stat(1, 2), None, &mut events);
    assert_eq!(events.len(), 3, "a stale read changes nothing");
    // /a recreated at zxid 5: its old child goes, deepest first.
    store.upsert(&a, stat(5, 5), None, &mut events);
    assert_eq!(paths_of(&events[3..]), ["/a/b", "/a", "/a"]);
    assert!(matches!(events[3], CacheEvent::Deleted { .. }));
    assert!(matches!(events[4], CacheEvent::Deleted { .. }));
    assert!(matches!(events[5], CacheEvent::Created { .. }));
    assert!(!store.contains("/a/b"));
    assert_eq!(store.len(), 1);
    // A path outside the root (the engine stores none) is still one node.
    let outside: Arc<str> = Arc::from("/ab");
    store.upsert(&outside, stat(9, 9), None, &mut events);
    store.upsert(&outside, stat(9, 9), None, &mut events);
    assert_eq!(store.len(), 2);
    assert_eq!(store.get("/ab").unwrap().stat().czxid, 9);
}

#[test]
fn remove_subtree_goes_deepest_first() {
    let mut store = Store::new(Arc::from("/r"));
    let mut events = Vec::new();
    for (i, p) in ["/r", "/r/a", "/r/a/x", "/r/b", "/r/a/w"]
        .iter()
        .enumerate()
    {
        let z = i as i64 + 1;
        store.upsert(&Arc::from(*p), stat(z, z), None, &mut events);
    }
    events.clear();
    store.remove_subtree("/r", &mut events);
    assert_eq!(
        paths_of(&events),
        ["/r/a/w", "/r/a/x", "/r/a", "/r/b", "/r"]
    );
    assert_eq!(store.len(), 0);
    assert!(store.snapshot().is_empty());
}

#[test]
fn a_node_read_before_its_parent_joins_it_when_read_again() {
    let mut store = Store::new(Arc::from("/"));
    let mut events = Vec::new();
    let deep: Arc<str> = Arc::from("/a/b/c");
    store.upsert(&deep, stat(3, 3), Some(Arc::from(&b"c"[..])), &mut events);
    store.upsert(&Arc::from("/a/b/c/d"), stat(4, 4), None, &mut events);
    assert_eq!(store.get("/a/b/c/d").unwrap().path(), "/a/b/c/d");
    assert_eq!(store.get("/a/b/c").unwrap().data(), Some(&b"c"[..]));
    assert!(store.children("/a/b").is_empty());
    store.upsert(&Arc::from("/"), stat(0, 0), None, &mut events);
    store.upsert(&Arc::from("/a"), stat(1, 1), None, &mut events);
    store.upsert(&Arc::from("/a/b"), stat(2, 2), None, &mut events);
    assert!(
        store.children("/a/b").is_empty(),
        "not before it is read again"
    );
    store.upsert(&deep, stat(3, 3), Some(Arc::from(&b"c"[..])), &mut events);
    let children = store.children("/a/b");
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].data(), Some(&b"c"[..]));
    assert_eq!(store.detached, 0);
    events.clear();
    store.remove_subtree("/a", &mut events);
    assert_eq!(paths_of(&events), ["/a/b/c/d", "/a/b/c", "/a/b", "/a"]);
    let left: Vec<String> = store.snapshot().iter().map(|n| n.path().into()).collect();
    assert_eq!(left, ["/"]);
}

#[test]
fn big_records_rewrites_and_compaction_keep_every_node() {
    let mut store = Store::new(Arc::from("/big"));
    let mut events = Vec::new();
    store.upsert(&Arc::from("/big"), stat(1, 1), None, &mut events);
    let mut expected = BTreeMap::new();
    for round in 0..40i64 {
        for n in 0..50i64 {
            let path: Arc<str> = Arc::from(format!("/big/n{n}"));
            // Sizes from empty to 20 KiB: small and big records, growing and shrinking.
            let len = ((n * 977 + round * 131) % 20_000) as usize;
            let data: Arc<[u8]> = vec![(n + round) as u8; len].into();
            let mut st = stat(10 + n, 100 + round);
            st.data_length = len as i32;
            store.upsert(&path, st, Some(Arc::clone(&data)), &mut events);
            expected.insert(path.to_string(), data);
        }
    }
    for (path, data) in &expected {
        assert_eq!(store.get(path).unwrap().data(), Some(&data[..]), "{path}");
    }
    let (live, dead) = store.nodes.arena_usage();
    assert!(dead <= live.max(CHUNK), "compacted: {store:?}");
}

/// The store against a plain map of paths (the cache's previous representation), through
/// random reads: same events, same content.
#[test]
fn the_store_behaves_as_a_map_of_paths() {
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let root = if seed % 2 == 0 { "/" } else { "/r" };
        let mut store = Store::new(Arc::from(root));
        let mut model = model::Model::default();
        let names = ["a", "b", "c"];
        let mut zxid = 1;
        for step in 0..2000 {
            let depth = rng.random_range(0..4);
            let mut path = root.to_owned();
            for _ in 0..depth {
                path = paths::join(&path, names[rng.random_range(0..names.len())]);
            }
            let path: Arc<str> = Arc::from(path);
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            if rng.random_bool(0.2) {
                store.remove_subtree(&path, &mut ours);
                model.remove_subtree(&path, &mut theirs);
            } else {
                zxid += 1;
                let czxid = if rng.random_bool(0.7) {
                    model.czxid(&path).unwrap_or(zxid)
                } else {
                    zxid - rng.random_range(0..3)
                };
                let mzxid = czxid.max(zxid - rng.random_range(0..3));
                let mut st = stat(czxid, mzxid);
                st.pzxid = mzxid + rng.random_range(0..2);
                // Small records, rewrites that compact the arena, records of their own.
                let len = rng.random_range(0..[40, 600, 6000][seed as usize % 3]);
                st.data_length = len as i32;
                let data: Option<Arc<[u8]>> =
                    rng.random_bool(0.9).then(|| vec![step as u8; len].into());
                let a = store.upsert(&path, st, data.clone(), &mut ours);
                let b = model.upsert(&path, st, data, &mut theirs);
                assert_eq!(a, b, "seed {seed} step {step} {path}");
            }
            assert_eq!(ours, theirs, "seed {seed} step {step} {path}");
            assert_eq!(store.len(), model.nodes.len());
        }
        assert_eq!(store.snapshot(), model.snapshot(), "seed {seed}");
        for path in model.nodes.keys() {
            assert_eq!(store.children(path), model.children(path), "{path}");
            let mut ours = store.child_paths(path).unwrap();
            ours.sort();
            let mut theirs = model.child_paths(path);
            theirs.sort();
            assert_eq!(ours, theirs);
        }
    }
}

#[test]
fn a_big_tree_costs_under_fifty_bytes_a_node_besides_its_data() {
    // The benchmark's tree: a root, 100 directories, 99 leaves of 32 bytes in each.
    let mut store = Store::new(Arc::from("/bench/tree"));
    let mut events = Vec::new();
    let mut zxid = 0x5_0000_0000;
    let mut time = 1_700_000_000_000;
    let mut add = |store: &mut Store, path: String, data: Option<Vec<u8>>| {
        zxid += 1;
        time += 1;
        let mut st = stat(zxid, zxid);
        st.ctime = time;
        st.mtime = time;
        st.data_length = data.as_ref().map_or(0, |d| d.len() as i32);
        store.upsert(&Arc::from(path), st, data.map(Arc::from), &mut events);
        events.clear();
    };
    add(&mut store, "/bench/tree".into(), None);
    for d in 0..100 {
        add(&mut store, format!("/bench/tree/d{d:02}"), None);
    }
    for n in 0..99 {
        for d in 0..100 {
            add(
                &mut store,
                format!("/bench/tree/d{d:02}/n{n:03}"),
                Some(vec![7; 32]),
            );
        }
    }
    assert_eq!(store.len(), 10_001);
    let per_node = (store.heap_bytes() - 10_001 * 32) / 10_001;
    assert!(per_node < 50, "{per_node} bytes a node besides the data");
}

/// The cache's previous node map, kept as the reference the store is checked against.
mod model {
    use super::*;

    fn upserted(fresh: bool, had_children: bool) -> Upserted {
        Upserted {
            fresh,
            had_children,
        }
    }

    #[derive(Default)]
    pub(super) struct Model {
        pub(super) nodes: HashMap<Arc<str>, Node>,
    }

    pub(super) struct Node {
        stat: Stat,
        data: Option<Arc<[u8]>>,
        children: HashSet<Arc<str>>,
    }

    impl Model {
        pub(super) fn czxid(&self, path: &str) -> Option<i64> {
            self.nodes.get(path).map(|n| n.stat.czxid)
        }

        pub(super) fn snapshot(&self) -> Vec<ChildData> {
            let mut out: Vec<ChildData> = self
                .nodes
                .iter()
                .map(|(k, n)| ChildData::shared(Arc::clone(k), n.stat, n.data.clone()))
                .collect();
            out.sort_by(|a, b| a.path().cmp(b.path()));
            out
        }

        pub(super) fn children(&self, path: &str) -> Vec<ChildData> {
            let mut out: Vec<ChildData> = self.nodes[path]
                .children
                .iter()
                .map(|c| {
                    let n = &self.nodes[c];
                    ChildData::shared(Arc::clone(c), n.stat, n.data.clone())
                })
                .collect();
            out.sort_by(|a, b| a.path().cmp(b.path()));
            out
        }

        pub(super) fn child_paths(&self, path: &str) -> Vec<Arc<str>> {
            self.nodes[path].children.iter().cloned().collect()
        }

        pub(super) fn upsert(
            &mut self,
            path: &Arc<str>,
            stat: Stat,
            data: Option<Arc<[u8]>>,
            events: &mut Vec<CacheEvent>,
        ) -> Upserted {
            if !self.nodes.contains_key(path) {
                self.link(path);
                self.nodes.insert(
                    Arc::clone(path),
                    Node {
                        stat,
                        data: data.clone(),
                        children: HashSet::new(),
                    },
                );
                events.push(CacheEvent::Created {
                    node: ChildData::shared(Arc::clone(path), stat, data),
                });
                return upserted(true, false);
            }
            // (The previous map linked a node read before its parent only when the read
            // found the same incarnation; the store links it whatever the read found.)
            self.link(path);
            let node = self.nodes.get_mut(path).unwrap();
            let had_children = !node.children.is_empty();
            if node.stat.czxid == stat.czxid {
                if stat.mzxid > node.stat.mzxid {
                    let old = ChildData::shared(Arc::clone(path), node.stat, node.data.take());
                    node.stat = stat;
                    node.data = data.clone();
                    events.push(CacheEvent::Changed {
                        old,
                        node: ChildData::shared(Arc::clone(path), stat, data),
                    });
                } else if stat.mzxid == node.stat.mzxid && stat.pzxid >= node.stat.pzxid {
                    node.stat = stat;
                }
                return upserted(false, had_children);
            }
            if stat.czxid < node.stat.czxid {
                return upserted(false, had_children);
            }
            let old_children: Vec<Arc<str>> = node.children.iter().cloned().collect();
            let mut old_children: Vec<Arc<str>> = old_children
                .into_iter()
                .filter(|c| self.nodes.get(c).is_none_or(|n| n.stat.czxid < stat.czxid))
                .collect();
            old_children.sort();
            for child in old_children {
                self.remove_subtree(&child, events);
            }
            let node = self.nodes.get_mut(path).unwrap();
            let old = ChildData::shared(Arc::clone(path), node.stat, node.data.take());
            node.stat = stat;
            node.data = data.clone();
            events.push(CacheEvent::Deleted { old });
            events.push(CacheEvent::Created {
                node: ChildData::shared(Arc::clone(path), stat, data),
            });
            upserted(true, !node.children.is_empty())
        }

        fn link(&mut self, path: &Arc<str>) {
            if let Some(parent) = paths::parent(path).and_then(|p| self.nodes.get_mut(p)) {
                parent.children.insert(Arc::clone(path));
            }
        }

        pub(super) fn remove_subtree(&mut self, path: &str, events: &mut Vec<CacheEvent>) {
            let Some((key, node)) = self.nodes.remove_entry(path) else {
                return;
            };
            if let Some(parent) = paths::parent(path).and_then(|p| self.nodes.get_mut(p)) {
                parent.children.remove(path);
            }
            let mut children: Vec<Arc<str>> = node.children.into_iter().collect();
            children.sort();
            for child in children {
                if self.nodes.contains_key(&child) {
                    self.remove_subtree(&child, events);
                }
            }
            events.push(CacheEvent::Deleted {
                old: ChildData::shared(key, node.stat, node.data),
            });
        }
    }
}
