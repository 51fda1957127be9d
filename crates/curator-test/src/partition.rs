//! Member partitions: every ensemble member reaches every other member's quorum and election
//! ports through fault proxies of its own, so links between members can be cut.
//!
//! How it is wired (see [`TestingClusterBuilder::partitionable`](crate::TestingClusterBuilder::partitionable)):
//! - every member's configuration names members by host name, `zk-<id>`, the same text for
//!   every member (so it also works with dynamic reconfiguration, whose configuration is shared
//!   and rewritten by ZooKeeper);
//! - each member's JVM resolves those names through a hosts file of its own
//!   (`-Djdk.net.hosts.file`): its own name to `127.0.0.1`, where it binds its real ports, and
//!   member `b`'s name to `127.1.<a>.<b>` for member `a`;
//! - on `127.1.<a>.<b>`, at member `b`'s quorum and election port numbers, a [`FaultProxy`]
//!   forwards to `127.0.0.1`: one pair of proxies per ordered pair of members;
//! - the election proxy rewrites the election address in the connecting member's first message
//!   (ZooKeeper's `InitialMessage`), because the member with the higher id closes a connection
//!   from a lower id and connects back to the address in it, which would otherwise be the lower
//!   member's real port.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use crate::config::PeerPorts;
use crate::error::{Error, Result};
use crate::proxy::FaultProxy;

/// Member ids the hosts files name (every id a cluster may give out: members added with
/// `start_new_member` get the next ones). One octet of the proxies' addresses holds an id.
const MAX_ID: u64 = 250;

/// Member `id`'s host name in a partitionable ensemble's configuration.
pub(crate) fn peer_host(id: u64) -> String {
    format!("zk-{id}")
}

/// Where member `from` reaches member `to` (the address of their proxies).
fn pair_ip(from: u64, to: u64) -> Ipv4Addr {
    Ipv4Addr::new(127, 1, from as u8, to as u8)
}

/// Writes member `id`'s hosts file into `dir` and returns the JVM option that makes its JVM
/// resolve names through it.
pub(crate) fn write_hosts_file(dir: &Path, id: u64) -> Result<String> {
    if id > MAX_ID {
        return Err(Error::InvalidArgument(format!(
            "a partitionable ensemble names members up to id {MAX_ID}, not {id}"
        )));
    }
    let mut hosts = String::from("127.0.0.1 localhost\n");
    // The machine's own name, which the JVM looks up for its logs.
    if let Ok(name) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        let name = name.trim();
        if !name.is_empty() && name != "localhost" {
            let _ = writeln!(hosts, "127.0.0.1 {name}");
        }
    }
    for peer in 1..=MAX_ID {
        let ip = if peer == id {
            Ipv4Addr::LOCALHOST
        } else {
            pair_ip(id, peer)
        };
        let _ = writeln!(hosts, "{ip} {}", peer_host(peer));
    }
    let path = dir.join("hosts");
    std::fs::write(&path, hosts).map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(format!("-Djdk.net.hosts.file={}", path.display()))
}

/// The two proxies through which one member reaches another.
#[derive(Debug)]
struct PairLink {
    quorum: FaultProxy,
    election: FaultProxy,
}

impl PairLink {
    fn cut(&self) {
        self.quorum.cut();
        self.election.cut();
    }

    fn mend(&self) {
        self.quorum.mend();
        self.election.mend();
    }
}

/// Every ordered pair of members' links, by (from, to) member index.
#[derive(Debug, Default)]
pub(crate) struct PeerLinks {
    pairs: BTreeMap<(usize, usize), PairLink>,
}

/// A member as the links know it: index, id and ports.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkedMember {
    pub(crate) index: usize,
    pub(crate) id: u64,
    pub(crate) ports: PeerPorts,
}

impl PeerLinks {
    /// Starts the proxies between `member` and each of `others`, both ways (not cut).
    pub(crate) async fn connect(
        &mut self,
        member: LinkedMember,
        others: &[LinkedMember],
    ) -> Result<()> {
        for other in others {
            for (from, to) in [(member, *other), (*other, member)] {
                if self.pairs.contains_key(&(from.index, to.index)) {
                    continue;
                }
                let ip = pair_ip(from.id, to.id);
                let quorum = FaultProxy::start_peer(
                    SocketAddr::from((ip, to.ports.quorum)),
                    &format!("127.0.0.1:{}", to.ports.quorum),
                    None,
                )
                .await?;
                // `to` connects back to `from` through its own proxy for `from`.
                let back = pair_ip(to.id, from.id);
                let election = FaultProxy::start_peer(
                    SocketAddr::from((ip, to.ports.election)),
                    &format!("127.0.0.1:{}", to.ports.election),
                    Some(format!("{back}:{}", from.ports.election)),
                )
                .await?;
                self.pairs
                    .insert((from.index, to.index), PairLink { quorum, election });
            }
        }
        Ok(())
    }

    /// Stops the proxies to and from member `index` (before it is started again on other
    /// ports).
    pub(crate) fn disconnect(&mut self, index: usize) {
        self.pairs
            .retain(|&(from, to), _| from != index && to != index);
    }

    /// Cuts the links between members of different groups (by `group_of`, both ways) and mends
    /// the others.
    pub(crate) fn apply(&self, group_of: impl Fn(usize) -> usize) {
        for (&(from, to), link) in &self.pairs {
            if group_of(from) == group_of(to) {
                link.mend();
            } else {
                link.cut();
            }
        }
    }

    /// Whether the link from `from` to `to` is cut (`None` for no such link).
    pub(crate) fn is_cut(&self, from: usize, to: usize) -> Option<bool> {
        self.pairs
            .get(&(from, to))
            .map(|link| link.quorum.is_cut() && link.election.is_cut())
    }
}
