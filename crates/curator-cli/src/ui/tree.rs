//! The annotated tree under a path: the Inspector's report for each node that is a recipe's
//! root, plain znodes (name, data, children) everywhere else, and the nodes this session may
//! not read marked as such.
//!
//! A [`Cache`] keeps what each node's last read found, so that after a change only the nodes
//! the change can touch are read again ([`Changes`]).

use std::collections::{HashMap, HashSet};

use curator_framework::{CuratorFramework, Error, Result, paths};
use curator_inspect::{Layout, Participant, Report, Who};
use futures::future::BoxFuture;
use serde::Serialize;

/// At most this many nodes are shown per snapshot: the page stays readable and the process's
/// memory bounded on a large tree; past it the snapshot says `truncated`.
pub(crate) const MAX_NODES: usize = 2_000;

/// How far above a changed node a recipe's report may depend on it: a set partitioner's root
/// reads `locks/<item>/lock-<seq>`, three levels down.
const REPORT_DEPTH: usize = 3;

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Node {
    pub(crate) path: String,
    /// The last segment of the path (the whole path for the root).
    pub(crate) name: String,
    /// The recipe recognized (`mutex`, `leader_latch`, `simple_queue`, …), `generic` for a
    /// plain znode.
    pub(crate) kind: Layout,
    /// `kind` for a person (`leader latch`, `shared count (a guess)`, `no read permission`).
    pub(crate) label: String,
    /// `kind` is a guess from the node's data or stat: its children are shown too.
    pub(crate) guess: bool,
    /// This session may not read the node: only its data size and number of children are
    /// known.
    pub(crate) no_read_permission: bool,
    /// Not even those are known: the server refused the node's stat too (`exists` needs READ
    /// permission from ZooKeeper 3.8.4 and 3.9.2); `data_len` and `children` are 0.
    pub(crate) stat_unknown: bool,
    /// The node's data for people (quoted text or hex, cut short); `None` for none.
    pub(crate) data: Option<String>,
    pub(crate) data_len: usize,
    pub(crate) children: usize,
    /// What the Inspector found at a recipe's root; `None` for a plain znode.
    pub(crate) recipe: Option<Recipe>,
    /// Plain znodes' children (and a guess's), and the locks of several or the services of a
    /// discovery base. A recipe's own nodes (lock nodes, queue items) are summarized in
    /// `recipe` instead.
    pub(crate) nodes: Vec<Node>,
}

/// A recipe's state, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Recipe {
    pub(crate) holders: Vec<Person>,
    /// In the order they will get it.
    pub(crate) waiters: Vec<Person>,
    pub(crate) leader: Option<Person>,
    pub(crate) members: Vec<Person>,
    /// A queue's depth.
    pub(crate) depth: Option<usize>,
    /// A queue's oldest item.
    pub(crate) oldest: Option<String>,
    pub(crate) oldest_since_ms: Option<i64>,
    /// A counter's value.
    pub(crate) value: Option<i64>,
    /// A double barrier's `ready` node exists.
    pub(crate) ready: Option<bool>,
    /// Who made the node itself (a barrier's raiser, a lease's last taker).
    pub(crate) made_by: Option<String>,
    /// When a lease's interval ends (ms since the epoch, the server's clock).
    pub(crate) until_ms: Option<i64>,
    /// A lease's fencing token, or the highest token a fencing gate admitted.
    pub(crate) token: Option<i64>,
    /// The recipe's nodes this session may not read.
    pub(crate) unreadable: Vec<String>,
}

/// A holder, waiter, leader or member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Person {
    /// Its node (relative to the recipe's path).
    pub(crate) node: String,
    /// Who: `name on host (pid N)`, the participant id or address text Java Curator writes, or
    /// `(no read permission)`.
    pub(crate) who: String,
    /// The session id in hex (`0x…`): a JSON number would lose digits in a browser.
    pub(crate) session: String,
    pub(crate) since_ms: i64,
    pub(crate) role: Option<String>,
}

impl From<&Participant> for Person {
    fn from(participant: &Participant) -> Self {
        Self {
            node: participant.node.clone(),
            who: if participant.no_read_permission {
                "(no read permission)".to_owned()
            } else {
                who(&participant.who)
            },
            session: format!("0x{:x}", participant.session_id),
            since_ms: participant.since_ms,
            role: participant.role.clone(),
        }
    }
}

fn who(who: &Who) -> String {
    match (&who.name, &who.text) {
        (Some(_), _) => who.to_string(),
        (None, Some(text)) => text.clone(),
        (None, None) => who.to_string(),
    }
}

/// What [`Cache::read`] found: the root's node (`None`: no node there) and whether
/// [`MAX_NODES`] cut it short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    pub(crate) root: Option<Node>,
    pub(crate) nodes: usize,
    pub(crate) truncated: bool,
}

/// The nodes to read again, from the events of a persistent recursive watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Everything (the first read, or after a reconnect: events may have been missed).
    all: bool,
    /// Read again.
    nodes: HashSet<String>,
    /// Read again if the last read found a recipe (or a guess) there: its report may cover the
    /// changed data below it.
    reports: HashSet<String>,
}

impl Changes {
    /// Every node.
    pub(crate) fn everything() -> Self {
        Self {
            all: true,
            ..Self::default()
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.all && self.nodes.is_empty() && self.reports.is_empty()
    }

    pub(crate) fn merge(&mut self, other: Changes) {
        self.all |= other.all;
        self.nodes.extend(other.nodes);
        self.reports.extend(other.reports);
    }

    /// Notes a change at `path` (under `root`): the node itself, and the nodes up to
    /// [`REPORT_DEPTH`] above it (within `root`) whose recognition or report may depend on
    /// it. A node made or deleted (`structural`) changes its parents' children, so they are read
    /// again whatever they are; new data matters only to a recipe's report.
    pub(crate) fn note(&mut self, root: &str, path: &str, structural: bool) {
        let inside = path == root
            || root == "/"
            || path
                .strip_prefix(root)
                .is_some_and(|rest| rest.starts_with('/'));
        if !inside {
            return;
        }
        self.nodes.insert(path.to_owned());
        let mut current = path;
        for _ in 0..REPORT_DEPTH {
            if current == root {
                break;
            }
            let Some(parent) = paths::parent(current) else {
                break;
            };
            if structural {
                self.nodes.insert(parent.to_owned());
            } else {
                self.reports.insert(parent.to_owned());
            }
            current = parent;
        }
    }
}

/// What the last read of one node found.
#[derive(Debug, Clone)]
struct Entry {
    /// The node without its children (a recipe's sections included).
    node: Node,
    /// The children to show below it (sorted); `None` for a recipe, whose report covers them,
    /// and for a node this session may not read.
    children: Option<Vec<String>>,
    /// A recipe or a guess: its report depends on the nodes below it.
    report: bool,
}

/// What each node's last read found, so that a new snapshot reads only what changed.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: HashMap<String, Entry>,
}

struct Walk<'a> {
    client: &'a CuratorFramework,
    changes: &'a Changes,
    shown: usize,
    truncated: bool,
    visited: HashSet<String>,
}

impl Cache {
    /// Reads the tree under `root`: the nodes `changes` names (and nodes not read before)
    /// anew, the others as last read. Nodes gone since are forgotten.
    ///
    /// Nodes that vanish while being read are left out; nodes this session may not read are
    /// shown as such.
    ///
    /// # Errors
    /// Connection and session errors, after the client's retry policy gave up.
    pub(crate) async fn read(
        &mut self,
        client: &CuratorFramework,
        root: &str,
        changes: &Changes,
    ) -> Result<Tree> {
        let mut walk = Walk {
            client,
            changes,
            shown: 0,
            truncated: false,
            visited: HashSet::new(),
        };
        let node = self.node(&mut walk, root.to_owned()).await?;
        let visited = walk.visited;
        self.entries.retain(|path, _| visited.contains(path));
        Ok(Tree {
            root: node,
            nodes: walk.shown,
            truncated: walk.truncated,
        })
    }

    fn node<'a>(
        &'a mut self,
        walk: &'a mut Walk<'_>,
        path: String,
    ) -> BoxFuture<'a, Result<Option<Node>>> {
        Box::pin(async move {
            if walk.shown >= MAX_NODES {
                walk.truncated = true;
                return Ok(None);
            }
            let stale = match self.entries.get(&path) {
                None => true,
                Some(entry) => {
                    walk.changes.all
                        || walk.changes.nodes.contains(&path)
                        || (entry.report && walk.changes.reports.contains(&path))
                }
            };
            if stale {
                match load(walk.client, &path).await? {
                    Some(entry) => {
                        self.entries.insert(path.clone(), entry);
                    }
                    None => {
                        self.entries.remove(&path);
                        return Ok(None);
                    }
                }
            }
            let Some(entry) = self.entries.get(&path) else {
                return Ok(None);
            };
            walk.visited.insert(path.clone());
            walk.shown += 1;
            let mut node = entry.node.clone();
            let children = entry.children.clone();
            // Several recipes under one path: each its own node, within the budget.
            let room = MAX_NODES.saturating_sub(walk.shown);
            if node.nodes.len() > room {
                node.nodes.truncate(room);
                walk.truncated = true;
            }
            walk.shown += node.nodes.len();
            for name in children.into_iter().flatten() {
                if let Some(child) = self.node(walk, paths::join(&path, &name)).await? {
                    node.nodes.push(child);
                }
            }
            Ok(Some(node))
        })
    }
}

/// Reads one node through the Inspector; `None` when there is none.
async fn load(client: &CuratorFramework, path: &str) -> Result<Option<Entry>> {
    let mut report = curator_inspect::inspect(client, path).await?;
    if report.layout == Layout::Missing {
        return Ok(None);
    }
    if report.no_read_permission {
        return Ok(Some(Entry {
            node: plain(&report),
            children: None,
            report: false,
        }));
    }
    let descend = report.layout == Layout::Generic || report.guess;
    let children = if descend {
        match client.get_children().for_path(path).await {
            Ok((mut names, _)) => {
                names.sort();
                Some(names)
            }
            Err(Error::NoNode) => return Ok(None),
            // Taken away since the Inspector read it.
            Err(Error::NoAuth) => None,
            Err(error) => return Err(error),
        }
    } else {
        None
    };
    let node = if report.layout == Layout::Generic {
        plain(&report)
    } else {
        let sections = std::mem::take(&mut report.sections);
        let mut node = recipe(&report);
        node.nodes = sections.iter().map(recipe).collect();
        node
    };
    Ok(Some(Entry {
        node,
        children,
        report: report.layout != Layout::Generic,
    }))
}

fn plain(report: &Report) -> Node {
    let name = match report.path.rsplit_once('/') {
        Some((_, "")) | None => report.path.clone(),
        Some((_, name)) => name.to_owned(),
    };
    Node {
        path: report.path.clone(),
        name,
        kind: report.layout,
        label: report.label(),
        guess: report.guess,
        no_read_permission: report.no_read_permission,
        stat_unknown: report.stat_unknown,
        data: report.data.clone(),
        data_len: report.data_len,
        children: report.children,
        recipe: None,
        nodes: Vec::new(),
    }
}

fn recipe(report: &Report) -> Node {
    let people = |list: &[Participant]| list.iter().map(Person::from).collect();
    let mut node = plain(report);
    node.recipe = Some(Recipe {
        holders: people(&report.holders),
        waiters: people(&report.waiters),
        leader: report.leader.as_ref().map(Person::from),
        members: people(&report.members),
        depth: report.queue.as_ref().map(|queue| queue.depth),
        oldest: report.queue.as_ref().and_then(|queue| queue.oldest.clone()),
        oldest_since_ms: report
            .queue
            .as_ref()
            .and_then(|queue| queue.oldest_since_ms),
        value: report.value,
        ready: report.ready,
        made_by: report.who.as_ref().filter(|who| !who.is_empty()).map(who),
        until_ms: report.until_ms,
        token: report.token,
        unreadable: report.unreadable.clone(),
    });
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_hex_text_and_who_is_said_plainly() {
        let participant: Participant = serde_json::from_value(serde_json::json!({
            "node": "latch-0000000001",
            "who": { "host": null, "pid": null, "name": null, "text": "worker-1" },
            "session_id": "0x100000000000001",
            "since_ms": 5,
            "role": null,
        }))
        .unwrap();
        let person = Person::from(&participant);
        assert_eq!(person.session, "0x100000000000001");
        assert_eq!(person.who, "worker-1");
    }

    #[test]
    fn a_change_reads_the_node_and_the_reports_above_it_again() {
        let mut changes = Changes::default();
        changes.note("/app", "/app/a/b/c/d", false);
        assert_eq!(changes.nodes, HashSet::from(["/app/a/b/c/d".to_owned()]));
        assert_eq!(
            changes.reports,
            HashSet::from(["/app/a/b/c", "/app/a/b", "/app/a"].map(str::to_owned))
        );
        let mut changes = Changes::default();
        changes.note("/app", "/app/a/b", true);
        assert_eq!(
            changes.nodes,
            HashSet::from(["/app/a/b", "/app/a", "/app"].map(str::to_owned))
        );
        // Nothing above the root, nothing outside it.
        let mut changes = Changes::default();
        changes.note("/app", "/app", true);
        changes.note("/app", "/apple", true);
        assert_eq!(changes.nodes, HashSet::from(["/app".to_owned()]));
        let mut changes = Changes::default();
        changes.note("/", "/x", true);
        assert_eq!(changes.nodes, HashSet::from(["/x", "/"].map(str::to_owned)));
        assert!(!changes.is_empty() && Changes::default().is_empty());
    }
}
