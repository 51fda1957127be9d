//! The fault schedule: a seeded sequence of faults, and the links (one fault proxy per client and
//! ensemble member) through which single clients are partitioned.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_test::{Expiry, FaultProxy, SessionCredentials, TestingCluster, expire_session};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The kinds of fault the schedule injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// A client's session is closed at the server (the classic expiry).
    ExpireSession,
    /// A client's links are black-holed for a while, then let through again.
    Partition,
    /// A client's connections are cut; it reconnects.
    DropConnections,
    /// An ensemble member is restarted (killed and started again).
    RestartMember,
    /// The ensemble's leader is killed, the others elect a new one, and it comes back.
    KillLeader,
    /// A member is replaced: a fresh server joins and the member leaves, in one
    /// reconfiguration, and the member is stopped. The clients' proxies for it lead to the new
    /// server from then on (the same address, a new server behind it).
    ReplaceMember,
    /// A member is cut off from the other members (its quorum and election links, both ways)
    /// for a while, then the partition heals; its clients stay attached to it, and it rejoins.
    IsolateMember,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::ExpireSession,
        FaultKind::Partition,
        FaultKind::DropConnections,
        FaultKind::RestartMember,
        FaultKind::KillLeader,
        FaultKind::ReplaceMember,
        FaultKind::IsolateMember,
    ];
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FaultKind::ExpireSession => "session expiry",
            FaultKind::Partition => "client partition",
            FaultKind::DropConnections => "dropped connections",
            FaultKind::RestartMember => "member restart",
            FaultKind::KillLeader => "leader kill",
            FaultKind::ReplaceMember => "member replaced",
            FaultKind::IsolateMember => "member partition",
        })
    }
}

/// One fault, with its target and timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Expire client `client`'s session.
    ExpireSession {
        /// The client.
        client: usize,
    },
    /// Partition client `client` from every member for `duration`.
    Partition {
        /// The client.
        client: usize,
        /// How long.
        duration: Duration,
    },
    /// Cut client `client`'s connections.
    DropConnections {
        /// The client.
        client: usize,
    },
    /// Restart member `member`.
    RestartMember {
        /// The member (0-based, of the current members).
        member: usize,
    },
    /// Replace member `member` with a fresh server.
    ReplaceMember {
        /// The member (0-based, of the current members).
        member: usize,
    },
    /// Cut member `member` (the leader for `None`) off from the other members for `duration`.
    IsolateMember {
        /// The member (0-based, of the current members), or `None` for whichever leads when
        /// the fault is injected.
        member: Option<usize>,
        /// How long.
        duration: Duration,
    },
    /// Kill the leader and start it again after `down`.
    KillLeader {
        /// How long it stays down.
        down: Duration,
    },
}

impl Fault {
    /// The fault's kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::ExpireSession { .. } => FaultKind::ExpireSession,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::DropConnections { .. } => FaultKind::DropConnections,
            Fault::RestartMember { .. } => FaultKind::RestartMember,
            Fault::KillLeader { .. } => FaultKind::KillLeader,
            Fault::ReplaceMember { .. } => FaultKind::ReplaceMember,
            Fault::IsolateMember { .. } => FaultKind::IsolateMember,
        }
    }
}

/// The schedule: from a seed, the same faults in the same order with the same gaps (how long
/// each takes to inject and heal depends on the machine).
#[derive(Debug)]
pub struct FaultPlan {
    rng: StdRng,
    clients: usize,
    members: usize,
    session_timeout: Duration,
}

impl FaultPlan {
    /// A plan for `clients` clients of a `members`-member ensemble whose sessions time out after
    /// `session_timeout` (partitions last from a fraction of it to well over it, so some end in
    /// expiry and some do not).
    pub fn new(seed: u64, clients: usize, members: usize, session_timeout: Duration) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            clients,
            members,
            session_timeout,
        }
    }

    /// The pause before the next fault, and the fault.
    pub fn next_fault(&mut self) -> (Duration, Fault) {
        let gap = Duration::from_millis(self.rng.random_range(200..2_000));
        let client = self.rng.random_range(0..self.clients);
        let fault = match self.rng.random_range(0..100) {
            0..=21 => Fault::ExpireSession { client },
            22..=41 => Fault::Partition {
                client,
                duration: self
                    .session_timeout
                    .mul_f64(self.rng.random_range(0.2..1.6)),
            },
            42..=55 => Fault::DropConnections { client },
            56..=68 => Fault::RestartMember {
                member: self.rng.random_range(0..self.members),
            },
            69..=79 => Fault::KillLeader {
                down: Duration::from_millis(self.rng.random_range(300..3_000)),
            },
            80..=87 => Fault::ReplaceMember {
                member: self.rng.random_range(0..self.members),
            },
            _ => Fault::IsolateMember {
                // A third of them the leader; the others any member (the leader again, a
                // third of the time, with three members).
                member: if self.rng.random_bool(1.0 / 3.0) {
                    None
                } else {
                    Some(self.rng.random_range(0..self.members))
                },
                // From well under a session timeout to over it: the isolated member's clients
                // move to the majority in their sessions, or lose them.
                duration: self
                    .session_timeout
                    .mul_f64(self.rng.random_range(0.2..1.6)),
            },
        };
        (gap, fault)
    }
}

/// One client's way to the ensemble: a fault proxy in front of each member.
#[derive(Debug)]
pub struct Link {
    proxies: Vec<FaultProxy>,
}

impl Link {
    /// Proxies in front of every member of `cluster`.
    ///
    /// # Errors
    /// When a proxy cannot bind a port.
    pub async fn start(cluster: &TestingCluster) -> curator_test::Result<Self> {
        let mut proxies = Vec::with_capacity(cluster.len());
        for member in 0..cluster.len() {
            proxies.push(FaultProxy::start(&cluster.member_connect_string(member)).await?);
        }
        Ok(Self { proxies })
    }

    /// The connect string for the client: every proxy.
    pub fn connect_string(&self) -> String {
        self.proxies
            .iter()
            .map(FaultProxy::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Black-holes every link.
    pub fn pause(&self) {
        self.proxies.iter().for_each(FaultProxy::pause);
    }

    /// Lets every link through again.
    pub fn resume(&self) {
        self.proxies.iter().for_each(FaultProxy::resume);
    }

    /// Cuts every connection.
    pub fn drop_connections(&self) {
        self.proxies.iter().for_each(FaultProxy::drop_connections);
    }

    /// Sends the links to member `member` (an index into the members the link was started
    /// with) to `address` from now on.
    pub fn retarget(&self, member: usize, address: &str) {
        self.proxies[member].retarget(address);
    }

    /// The credentials of session `id`, as the proxies saw the server grant it.
    pub fn credentials(&self, id: i64) -> Option<SessionCredentials> {
        self.proxies
            .iter()
            .flat_map(FaultProxy::sessions)
            .find(|s| s.id == id)
    }
}

/// Faults injected and skipped, by kind.
#[derive(Debug, Clone, Default)]
pub struct FaultCounts {
    /// Injected.
    pub injected: BTreeMap<FaultKind, u64>,
    /// Skipped because their target was not there (a client between sessions).
    pub skipped: BTreeMap<FaultKind, u64>,
}

impl FaultCounts {
    /// Faults injected, all kinds.
    pub fn total(&self) -> u64 {
        self.injected.values().sum()
    }
}

/// What the injector works on.
#[derive(Debug)]
pub struct Target<'a> {
    /// The ensemble (started with dynamic reconfiguration, partitionable).
    pub cluster: &'a mut TestingCluster,
    /// The current members: for each member the faults and the links number (0-based, as
    /// the links were started), its index in `cluster`. A replacement changes it.
    pub members: &'a mut Vec<usize>,
    /// A client allowed to reconfigure the ensemble (the super user).
    pub admin: &'a CuratorFramework,
    /// The clients' links, by client.
    pub links: &'a [Link],
    /// The clients.
    pub clients: &'a [CuratorFramework],
    /// Deadlines.
    pub timing: curator_test::Timing,
}

/// Injects `fault` and heals it (a partition ends, a member is back and the ensemble has a
/// leader) before returning; `Ok(false)` when it was skipped.
///
/// # Errors
/// When the ensemble cannot be brought back.
pub async fn inject(fault: Fault, target: &mut Target<'_>) -> curator_test::Result<bool> {
    match fault {
        Fault::ExpireSession { client } => {
            let Some(id) = target.clients[client].session_id() else {
                return Ok(false);
            };
            let Some(credentials) = target.links[client].credentials(id) else {
                return Ok(false);
            };
            let expired = expire_session(
                &target.cluster.connect_string(),
                &credentials,
                target.timing.wait(),
            )
            .await;
            Ok(matches!(expired, Ok(Expiry::Expired)))
        }
        Fault::Partition { client, duration } => {
            target.links[client].pause();
            tokio::time::sleep(duration).await;
            target.links[client].resume();
            Ok(true)
        }
        Fault::DropConnections { client } => {
            target.links[client].drop_connections();
            Ok(true)
        }
        Fault::RestartMember { member } => {
            target.cluster.restart(target.members[member]).await?;
            target.cluster.await_leader().await?;
            Ok(true)
        }
        Fault::KillLeader { down } => {
            let leader = target.cluster.await_leader().await?;
            target.cluster.kill(leader)?;
            tokio::time::sleep(down).await;
            target.cluster.restart(leader).await?;
            target.cluster.await_leader().await?;
            Ok(true)
        }
        Fault::ReplaceMember { member } => {
            replace_member(member, target).await?;
            Ok(true)
        }
        Fault::IsolateMember { member, duration } => {
            let index = match member {
                Some(member) => target.members[member],
                None => target.cluster.await_leader().await?,
            };
            target.cluster.isolate(index)?;
            tokio::time::sleep(duration).await;
            target.cluster.heal()?;
            // Healed means back: the member serves again, and the ensemble has a leader.
            target.cluster.await_serving(index).await?;
            target.cluster.await_leader().await?;
            Ok(true)
        }
    }
}

/// Starts a fresh server, reconfigures it in and member `member` out in one step, stops the
/// old member and points the links at the new one.
async fn replace_member(member: usize, target: &mut Target<'_>) -> curator_test::Result<()> {
    let old = target.members[member];
    let fresh = target.cluster.start_new_member().await?;
    let joining = target.cluster.member_spec(fresh);
    let leaving = target.cluster.member_id(old);
    // Removing the leader ends its connections, so the reply may be lost; the framework's
    // reconfig finds an applied change on its retry.
    let fresh_id = target.cluster.member_id(fresh);
    let mut tries = 0;
    loop {
        if tries > 0 {
            // An earlier try may have been applied with its reply lost.
            if let Ok(config) = target.admin.ensemble_config().await {
                if config.member(leaving).is_none() && config.member(fresh_id).is_some() {
                    break;
                }
            }
        }
        match target
            .admin
            .reconfig()
            .joining([joining.clone()])
            .leaving([leaving])
            .await
        {
            Ok(config) if config.member(leaving).is_none() => break,
            Ok(config) => {
                return Err(curator_test::Error::Protocol(format!(
                    "member {leaving} still in the configuration after leaving: {config:?}"
                )));
            }
            // No quorum of the new configuration yet (the fresh member is still syncing), or
            // another change under way: try again.
            Err(error) if tries < 50 => {
                tracing::debug!(%error, "replacing member {leaving}: trying again");
                tries += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(error) => {
                return Err(curator_test::Error::Protocol(format!(
                    "replacing member {leaving}: {error}"
                )));
            }
        }
    }
    target.cluster.stop_member(old)?;
    let address = target.cluster.member_connect_string(fresh);
    for link in target.links {
        link.retarget(member, &address);
    }
    target.members[member] = fresh;
    target.cluster.await_leader().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_schedule() {
        let timeout = Duration::from_secs(4);
        let mut a = FaultPlan::new(7, 4, 3, timeout);
        let mut b = FaultPlan::new(7, 4, 3, timeout);
        let mut kinds = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let next = a.next_fault();
            assert_eq!(next, b.next_fault());
            kinds.insert(next.1.kind());
        }
        assert_eq!(kinds.len(), FaultKind::ALL.len(), "every kind is drawn");
        let mut c = FaultPlan::new(8, 4, 3, timeout);
        let differs = (0..20).any(|_| a.next_fault() != c.next_fault());
        assert!(differs);
    }
}
