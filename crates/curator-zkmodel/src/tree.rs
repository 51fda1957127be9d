//! The data tree: nodes with the stat fields ZooKeeper persists, the indexes of ephemerals,
//! containers and TTL nodes, and an undo log so that a multi can be taken back.

use std::collections::{BTreeMap, BTreeSet};

use curator_wire::proto::{Acl, Id, Perms, Stat};

use crate::path;

/// The ephemeral owner ZooKeeper stores for a container.
pub(crate) const CONTAINER_OWNER: i64 = i64::MIN;
/// The high byte that marks an extended ephemeral owner (a TTL node).
const EXTENDED_MASK: u64 = 0xff00_0000_0000_0000;
/// The bits of an extended owner reserved for the feature (0 for TTL).
const RESERVED_MASK: u64 = 0x00ff_ff00_0000_0000;
/// The longest TTL ZooKeeper accepts (what fits below the reserved bits).
pub(crate) const MAX_TTL: i64 = !(EXTENDED_MASK | RESERVED_MASK) as i64;

/// What a node's stored ephemeral owner makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Persistent,
    Ephemeral(i64),
    Container,
    Ttl(i64),
}

impl Kind {
    pub(crate) fn of(owner: i64, extended: bool) -> Kind {
        let raw = owner as u64;
        if extended && raw & EXTENDED_MASK == EXTENDED_MASK && raw & RESERVED_MASK == 0 {
            return Kind::Ttl((raw & !(EXTENDED_MASK | RESERVED_MASK)) as i64);
        }
        match owner {
            0 => Kind::Persistent,
            CONTAINER_OWNER => Kind::Container,
            session => Kind::Ephemeral(session),
        }
    }

    pub(crate) fn owner(self) -> i64 {
        match self {
            Kind::Persistent => 0,
            Kind::Ephemeral(session) => session,
            Kind::Container => CONTAINER_OWNER,
            Kind::Ttl(ttl) => (EXTENDED_MASK | ttl as u64) as i64,
        }
    }
}

/// The stat as ZooKeeper stores it (`StatPersisted`): `cversion` counts the creates of
/// children only; clients see `2 * cversion - numChildren` (creates plus deletes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Persisted {
    pub(crate) czxid: i64,
    pub(crate) mzxid: i64,
    pub(crate) ctime: i64,
    pub(crate) mtime: i64,
    pub(crate) version: i32,
    pub(crate) cversion: i32,
    pub(crate) aversion: i32,
    pub(crate) owner: i64,
    pub(crate) pzxid: i64,
}

/// One node.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) data: Vec<u8>,
    pub(crate) acl: Vec<Acl>,
    pub(crate) stat: Persisted,
    pub(crate) children: BTreeSet<String>,
}

impl Node {
    fn system(acl: Vec<Acl>) -> Node {
        Node {
            data: Vec::new(),
            acl,
            stat: Persisted::default(),
            children: BTreeSet::new(),
        }
    }

    /// The stat a client sees (`DataNode.copyStat`).
    pub(crate) fn stat(&self, extended: bool) -> Stat {
        let children = i32::try_from(self.children.len()).unwrap_or(i32::MAX);
        let owner = match Kind::of(self.stat.owner, extended) {
            Kind::Ephemeral(session) => session,
            _ => 0,
        };
        Stat {
            czxid: self.stat.czxid,
            mzxid: self.stat.mzxid,
            ctime: self.stat.ctime,
            mtime: self.stat.mtime,
            version: self.stat.version,
            cversion: self.stat.cversion.wrapping_mul(2).wrapping_sub(children),
            aversion: self.stat.aversion,
            ephemeral_owner: owner,
            data_length: i32::try_from(self.data.len()).unwrap_or(i32::MAX),
            num_children: children,
            pzxid: self.stat.pzxid,
        }
    }
}

/// One step to take back.
#[derive(Debug)]
enum Undo {
    /// The node at this path was inserted.
    Inserted(String),
    /// This node was removed.
    Removed(String, Node),
    /// The node's stat was this.
    Stat(String, Persisted),
    /// The node's data and stat were these.
    Data(String, Vec<u8>, Persisted),
    /// The node's ACL and stat were these.
    Acl(String, Vec<Acl>, Persisted),
}

/// The tree.
#[derive(Debug)]
pub(crate) struct Tree {
    nodes: BTreeMap<String, Node>,
    ephemerals: BTreeMap<i64, BTreeSet<String>>,
    containers: BTreeSet<String>,
    ttls: BTreeSet<String>,
    extended: bool,
    undo: Vec<Undo>,
}

/// The paths ZooKeeper keeps for itself: they cannot be deleted.
pub(crate) const SPECIAL_PATHS: [&str; 4] = [
    "/",
    "/zookeeper",
    "/zookeeper/quota",
    curator_wire::proto::CONFIG_NODE,
];

impl Tree {
    /// A tree as a new server has it: `/`, `/zookeeper`, `/zookeeper/quota` and
    /// `/zookeeper/config` (readable by anyone, writable by no one but a super user).
    pub(crate) fn new(extended: bool, config: Vec<u8>) -> Tree {
        let mut nodes = BTreeMap::new();
        let mut root = Node::system(Acl::open_unsafe());
        root.children.insert("zookeeper".to_owned());
        let mut proc = Node::system(Acl::open_unsafe());
        proc.children.insert("quota".to_owned());
        proc.children.insert("config".to_owned());
        let mut config_node = Node::system(vec![Acl {
            perms: Perms::READ,
            id: Id::new("world", "anyone"),
        }]);
        config_node.data = config;
        nodes.insert("/".to_owned(), root);
        nodes.insert("/zookeeper".to_owned(), proc);
        nodes.insert(
            "/zookeeper/quota".to_owned(),
            Node::system(Acl::open_unsafe()),
        );
        nodes.insert(curator_wire::proto::CONFIG_NODE.to_owned(), config_node);
        Tree {
            nodes,
            ephemerals: BTreeMap::new(),
            containers: BTreeSet::new(),
            ttls: BTreeSet::new(),
            extended,
            undo: Vec::new(),
        }
    }

    pub(crate) fn extended(&self) -> bool {
        self.extended
    }

    /// The node at `path`. The empty path is the root, as in ZooKeeper's `DataTree`, which
    /// keeps the root under both `""` and `"/"`: reads of `""` (which no write accepts) answer
    /// with the root.
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        let path = if path.is_empty() { "/" } else { path };
        self.nodes.get(path)
    }

    pub(crate) fn kind(&self, node: &Node) -> Kind {
        Kind::of(node.stat.owner, self.extended)
    }

    /// How many nodes are below `path`, at any depth (`/`: every node but the root).
    pub(crate) fn descendants(&self, path: &str) -> usize {
        if path == "/" {
            return self.nodes.len() - 1;
        }
        let prefix = format!("{path}/");
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .count()
    }

    /// The ephemeral nodes of a session.
    pub(crate) fn ephemerals(&self, session: i64) -> impl Iterator<Item = &String> {
        self.ephemerals.get(&session).into_iter().flatten()
    }

    pub(crate) fn containers(&self) -> impl Iterator<Item = &String> {
        self.containers.iter()
    }

    pub(crate) fn ttls(&self) -> impl Iterator<Item = &String> {
        self.ttls.iter()
    }

    /// Inserts a new node below its (existing) parent, with the parent's stat already
    /// updated by the caller.
    pub(crate) fn insert(&mut self, path: &str, node: Node) {
        let parent = path::parent(path).expect("a checked path");
        if let Some(parent) = self.nodes.get_mut(parent) {
            parent.children.insert(path::name(path).to_owned());
        }
        self.index(path, node.stat.owner, true);
        self.nodes.insert(path.to_owned(), node);
        self.undo.push(Undo::Inserted(path.to_owned()));
    }

    /// Removes a node (childless) and its name from its parent; returns its ACL.
    pub(crate) fn remove(&mut self, path: &str) -> Option<Vec<Acl>> {
        let node = self.nodes.remove(path)?;
        if let Some(parent) = path::parent(path).and_then(|parent| self.nodes.get_mut(parent)) {
            parent.children.remove(path::name(path));
        }
        self.index(path, node.stat.owner, false);
        let acl = node.acl.clone();
        self.undo.push(Undo::Removed(path.to_owned(), node));
        Some(acl)
    }

    /// Changes a node's stat.
    pub(crate) fn update_stat(&mut self, path: &str, change: impl FnOnce(&mut Persisted)) {
        if let Some(node) = self.nodes.get_mut(path) {
            self.undo.push(Undo::Stat(path.to_owned(), node.stat));
            change(&mut node.stat);
        }
    }

    /// Replaces a node's data and changes its stat.
    pub(crate) fn set_data(
        &mut self,
        path: &str,
        data: Vec<u8>,
        change: impl FnOnce(&mut Persisted),
    ) {
        if let Some(node) = self.nodes.get_mut(path) {
            let old = std::mem::replace(&mut node.data, data);
            self.undo.push(Undo::Data(path.to_owned(), old, node.stat));
            change(&mut node.stat);
        }
    }

    /// Replaces a node's ACL and changes its stat.
    pub(crate) fn set_acl(
        &mut self,
        path: &str,
        acl: Vec<Acl>,
        change: impl FnOnce(&mut Persisted),
    ) {
        if let Some(node) = self.nodes.get_mut(path) {
            let old = std::mem::replace(&mut node.acl, acl);
            self.undo.push(Undo::Acl(path.to_owned(), old, node.stat));
            change(&mut node.stat);
        }
    }

    /// Forgets the undo log: what was done stays.
    pub(crate) fn commit(&mut self) {
        self.undo.clear();
    }

    /// Takes back everything done since the last commit, newest first.
    pub(crate) fn rollback(&mut self) {
        while let Some(step) = self.undo.pop() {
            match step {
                Undo::Inserted(path) => {
                    if let Some(node) = self.nodes.remove(&path) {
                        self.index(&path, node.stat.owner, false);
                    }
                    if let Some(parent) =
                        path::parent(&path).and_then(|parent| self.nodes.get_mut(parent))
                    {
                        parent.children.remove(path::name(&path));
                    }
                }
                Undo::Removed(path, node) => {
                    if let Some(parent) =
                        path::parent(&path).and_then(|parent| self.nodes.get_mut(parent))
                    {
                        parent.children.insert(path::name(&path).to_owned());
                    }
                    self.index(&path, node.stat.owner, true);
                    self.nodes.insert(path, node);
                }
                Undo::Stat(path, stat) => {
                    if let Some(node) = self.nodes.get_mut(&path) {
                        node.stat = stat;
                    }
                }
                Undo::Data(path, data, stat) => {
                    if let Some(node) = self.nodes.get_mut(&path) {
                        node.data = data;
                        node.stat = stat;
                    }
                }
                Undo::Acl(path, acl, stat) => {
                    if let Some(node) = self.nodes.get_mut(&path) {
                        node.acl = acl;
                        node.stat = stat;
                    }
                }
            }
        }
    }

    fn index(&mut self, path: &str, owner: i64, add: bool) {
        let set = match Kind::of(owner, self.extended) {
            Kind::Persistent => return,
            Kind::Container => &mut self.containers,
            Kind::Ttl(_) => &mut self.ttls,
            Kind::Ephemeral(session) => self.ephemerals.entry(session).or_default(),
        };
        if add {
            set.insert(path.to_owned());
        } else {
            set.remove(path);
        }
        if let Kind::Ephemeral(session) = Kind::of(owner, self.extended) {
            if self
                .ephemerals
                .get(&session)
                .is_some_and(BTreeSet::is_empty)
            {
                self.ephemerals.remove(&session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(owner: i64) -> Node {
        Node {
            data: b"x".to_vec(),
            acl: Acl::open_unsafe(),
            stat: Persisted {
                owner,
                ..Persisted::default()
            },
            children: BTreeSet::new(),
        }
    }

    #[test]
    fn kinds_round_trip_through_the_owner() {
        for kind in [
            Kind::Persistent,
            Kind::Ephemeral(0x1234),
            Kind::Container,
            Kind::Ttl(60_000),
        ] {
            assert_eq!(Kind::of(kind.owner(), true), kind);
        }
        assert_eq!(
            Kind::of(Kind::Ttl(5).owner(), false),
            Kind::Ephemeral(Kind::Ttl(5).owner())
        );
        assert_eq!(MAX_TTL, 0x0000_00ff_ffff_ffff);
    }

    #[test]
    fn rollback_restores_nodes_stats_and_indexes() {
        let mut tree = Tree::new(true, Vec::new());
        tree.insert("/a", node(0));
        tree.commit();
        let before = tree.get("/a").unwrap().stat(true);
        tree.update_stat("/a", |stat| stat.cversion += 1);
        tree.insert("/a/e", node(7));
        tree.insert("/c", node(CONTAINER_OWNER));
        tree.set_data("/a", b"new".to_vec(), |stat| stat.version += 1);
        assert_eq!(tree.ephemerals(7).count(), 1);
        tree.rollback();
        assert!(tree.get("/a/e").is_none() && tree.get("/c").is_none());
        assert_eq!(tree.get("/a").unwrap().stat(true), before);
        assert_eq!(tree.get("/a").unwrap().data, b"x");
        assert_eq!(tree.ephemerals(7).count(), 0);
        assert_eq!(tree.containers().count(), 0);
        assert_eq!(tree.descendants("/"), 4);
        assert_eq!(tree.descendants("/zookeeper"), 2);
    }
}
