//! The annotated tree under a path: the Inspector's report for each node that is a recipe's
//! root, plain znodes (name, data size, children) everywhere else.

use curator_framework::{CuratorFramework, Error, Result};
use curator_inspect::{Layout, Participant, Report, Who};
use futures::future::BoxFuture;
use serde::Serialize;

/// At most this many nodes are read per snapshot (each costs an `inspect`): the page stays
/// readable and the process's memory bounded on a large tree; past it the snapshot says
/// `truncated`.
pub(crate) const MAX_NODES: usize = 2_000;

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Node {
    pub(crate) path: String,
    /// The last segment of the path (the whole path for the root).
    pub(crate) name: String,
    /// The recipe recognized (`mutex`, `leader_latch`, `simple_queue`, …), `generic` for a
    /// plain znode.
    pub(crate) kind: Layout,
    /// `kind` for a person (`leader latch`, `unrecognized`).
    pub(crate) label: String,
    pub(crate) data_len: usize,
    pub(crate) children: usize,
    /// What the Inspector found at a recipe's root; `None` for a plain znode.
    pub(crate) recipe: Option<Recipe>,
    /// Plain znodes' children, and the locks of several or the services of a discovery base.
    /// A recipe's own nodes (lock nodes, queue items) are summarized in `recipe` instead.
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
    /// Who made the node itself (a barrier's raiser).
    pub(crate) made_by: Option<String>,
}

/// A holder, waiter, leader or member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Person {
    /// Its node (relative to the recipe's path).
    pub(crate) node: String,
    /// Who: `name on host (pid N)`, or the participant id or address text Java Curator writes.
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
            who: who(&participant.who),
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

/// What [`read`] found: the root's node (`None`: no node there) and whether [`MAX_NODES`] cut
/// it short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    pub(crate) root: Option<Node>,
    pub(crate) nodes: usize,
    pub(crate) truncated: bool,
}

struct Budget {
    read: usize,
    truncated: bool,
}

/// Reads the tree under `root`, recognizing recipes.
///
/// Nodes that vanish while being read are left out.
///
/// # Errors
/// Connection and session errors, after the client's retry policy gave up.
pub(crate) async fn read(client: &CuratorFramework, root: &str) -> Result<Tree> {
    let mut budget = Budget {
        read: 0,
        truncated: false,
    };
    let node = node(client, root.to_owned(), &mut budget).await?;
    Ok(Tree {
        root: node,
        nodes: budget.read,
        truncated: budget.truncated,
    })
}

fn node<'a>(
    client: &'a CuratorFramework,
    path: String,
    budget: &'a mut Budget,
) -> BoxFuture<'a, Result<Option<Node>>> {
    Box::pin(async move {
        if budget.read >= MAX_NODES {
            budget.truncated = true;
            return Ok(None);
        }
        budget.read += 1;
        let mut report = curator_inspect::inspect(client, &path).await?;
        match report.layout {
            Layout::Missing => Ok(None),
            Layout::Generic => {
                let mut names = match client.get_children().for_path(&path).await {
                    Ok((names, _)) => names,
                    Err(Error::NoNode) => return Ok(None),
                    Err(error) => return Err(error),
                };
                names.sort();
                let mut nodes = Vec::with_capacity(names.len());
                for name in names {
                    let child = if path == "/" {
                        format!("/{name}")
                    } else {
                        format!("{path}/{name}")
                    };
                    if let Some(node) = node(client, child, budget).await? {
                        nodes.push(node);
                    }
                }
                let mut generic = plain(&report);
                generic.nodes = nodes;
                Ok(Some(generic))
            }
            // Several recipes under one path: each its own node.
            _ => {
                let sections = std::mem::take(&mut report.sections);
                let mut recipe = recipe(&report);
                for section in &sections {
                    if budget.read >= MAX_NODES {
                        budget.truncated = true;
                        break;
                    }
                    budget.read += 1;
                    recipe.nodes.push(self::recipe(section));
                }
                Ok(Some(recipe))
            }
        }
    })
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
        label: report.layout.to_string(),
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
            "session_id": 0x0100_0000_0000_0001_i64,
            "since_ms": 5,
            "role": null,
        }))
        .unwrap();
        let person = Person::from(&participant);
        assert_eq!(person.session, "0x100000000000001");
        assert_eq!(person.who, "worker-1");
    }
}
