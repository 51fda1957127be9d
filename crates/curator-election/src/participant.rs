//! Who takes part in an election: what [`LeaderLatch`](crate::LeaderLatch) and
//! [`LeaderSelector`](crate::LeaderSelector) both read from their participants' nodes.

use std::future::IntoFuture;

use curator_framework::types::Stat;
use curator_framework::{CuratorFramework, Error, Result};

/// A participant of an election, as read from its node.
///
/// ```no_run
/// # async fn demo(latch: curator_election::LeaderLatch) -> curator_framework::Result<()> {
/// for participant in latch.participants().await? {
///     println!("{} leads: {} (epoch {:#x})", participant.id, participant.is_leader, participant.epoch);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// The id it gave (its node's data).
    pub id: String,
    /// Whether it leads (its node is first).
    pub is_leader: bool,
    /// Its node's full path (as `participant_nodes()` lists it).
    pub node: String,
    /// Its node's creation zxid: the epoch of its leadership when it leads (see the crate's
    /// "Leader epochs"), the same number as the leader's fencing token.
    pub epoch: i64,
}

pub(crate) fn participant(node: String, data: &[u8], stat: &Stat, is_leader: bool) -> Participant {
    Participant {
        id: String::from_utf8_lossy(data).into_owned(),
        is_leader,
        node,
        epoch: stat.czxid,
    }
}

/// Reads the participants' ids from their `nodes` (full paths, in election order); nodes gone
/// meanwhile are left out, and the first node still there leads.
pub(crate) async fn read_all(
    client: &CuratorFramework,
    nodes: Vec<String>,
) -> Result<Vec<Participant>> {
    // Every read goes out before the first answer is awaited.
    let reads: Vec<_> = nodes
        .iter()
        .map(|node| client.get_data().for_path(node).into_future())
        .collect();
    let mut participants = Vec::with_capacity(reads.len());
    for (node, read) in nodes.into_iter().zip(reads) {
        match read.await {
            Ok((data, stat)) => {
                let is_leader = participants.is_empty();
                participants.push(participant(node, &data, &stat, is_leader));
            }
            Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(participants)
}

/// The leader among `nodes` (full paths, in election order): the first node still there.
pub(crate) async fn read_leader(
    client: &CuratorFramework,
    nodes: Vec<String>,
) -> Result<Option<Participant>> {
    for node in nodes {
        match client.get_data().for_path(&node).await {
            Ok((data, stat)) => return Ok(Some(participant(node, &data, &stat, true))),
            Err(Error::NoNode) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}
