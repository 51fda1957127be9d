//! The server list of a session: which server to try next, and who moves when the list changes.
//!
//! The list is shuffled once, then tried in turn, so clients given the same list spread over
//! its servers. When the list is replaced during a session ([`HostList::update`]), a client
//! decides by itself whether to move, with probabilities chosen so that the expected number of
//! clients per server is the same afterwards (the rebalancing of ZooKeeper's Java client,
//! ZOOKEEPER-1355):
//! - its server is still in the list and the list did not grow: it stays;
//! - its server is still in the list and the list grew from `m` to `n`: it moves to one of the
//!   new servers with probability `1 - m/n` (the old servers' share of load falls from `1/m` to
//!   `1/n` each);
//! - its server left the list: it moves, to a new server when the list grew, otherwise to one of
//!   the old servers that stay with probability `k(m - n) / (n(m - k))` (where `k` of the `m`
//!   old servers stay) and to a new server otherwise.

use std::collections::VecDeque;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::config::ServerAddress;

#[derive(Debug)]
pub(crate) struct HostList {
    servers: Vec<ServerAddress>,
    /// Index of the next server to try in the round.
    cursor: usize,
    /// Attempts since the last successful connection.
    attempts: usize,
    /// The server of the current (or last) connection.
    last_connected: Option<ServerAddress>,
    /// Servers to try before the round, after a change of list decided to move.
    preferred: VecDeque<ServerAddress>,
    rng: StdRng,
}

/// What a new list means for the current connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rebalance {
    /// Stay on the current server.
    Stay,
    /// Move, trying these servers first (then the rest of the list).
    Move(Vec<ServerAddress>),
}

impl HostList {
    pub(crate) fn new(servers: Vec<ServerAddress>, seed: Option<u64>) -> Self {
        let mut rng = match seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => crate::entropy::with(|rng| StdRng::seed_from_u64(rng.next_u64())),
        };
        let mut servers = dedup(servers);
        servers.shuffle(&mut rng);
        Self {
            servers,
            cursor: 0,
            attempts: 0,
            last_connected: None,
            preferred: VecDeque::new(),
            rng,
        }
    }

    pub(crate) fn servers(&self) -> &[ServerAddress] {
        &self.servers
    }

    pub(crate) fn len(&self) -> usize {
        self.servers.len()
    }

    /// The next server to try, and whether the attempts since the last connection have just
    /// gone round the whole list (time to pause before the next round).
    pub(crate) fn next(&mut self) -> (ServerAddress, bool) {
        let round_done = self.attempts > 0 && self.attempts % self.servers.len().max(1) == 0;
        self.attempts += 1;
        if let Some(server) = self.preferred.pop_front() {
            return (server, round_done);
        }
        let server = self.servers[self.cursor % self.servers.len()].clone();
        self.cursor = (self.cursor + 1) % self.servers.len();
        (server, round_done)
    }

    /// A different server than `current` to probe (for a read-write server while on a
    /// read-only one), in turn.
    pub(crate) fn next_other(&mut self, current: &ServerAddress) -> Option<ServerAddress> {
        for _ in 0..self.servers.len() {
            let server = self.servers[self.cursor % self.servers.len()].clone();
            self.cursor = (self.cursor + 1) % self.servers.len();
            if server.key() != current.key() {
                return Some(server);
            }
        }
        None
    }

    /// The servers chosen to move to, in order (they are no longer tried first).
    pub(crate) fn take_preferred(&mut self) -> Vec<ServerAddress> {
        self.preferred.drain(..).collect()
    }

    /// Tries `server` first at the next attempt.
    pub(crate) fn prefer(&mut self, server: ServerAddress) {
        self.preferred.clear();
        self.preferred.push_back(server);
        self.attempts = 0;
    }

    pub(crate) fn connected(&mut self, server: &ServerAddress) {
        self.attempts = 0;
        self.preferred.clear();
        self.last_connected = Some(server.clone());
        if let Some(at) = self.position(server) {
            self.cursor = (at + 1) % self.servers.len();
        }
    }

    fn position(&self, server: &ServerAddress) -> Option<usize> {
        self.servers.iter().position(|s| s.key() == server.key())
    }

    /// Takes a new list. `current` is the server of the live connection, if any.
    pub(crate) fn update(
        &mut self,
        servers: Vec<ServerAddress>,
        current: Option<&ServerAddress>,
    ) -> Rebalance {
        let mut next = dedup(servers);
        let same = next.len() == self.servers.len()
            && next
                .iter()
                .all(|server| self.servers.iter().any(|s| s.key() == server.key()));
        if next.is_empty() || same {
            return Rebalance::Stay;
        }
        next.shuffle(&mut self.rng);
        let me = current
            .or(self.last_connected.as_ref())
            .cloned()
            .unwrap_or_else(|| self.servers[0].clone());
        let old_keys: Vec<_> = self.servers.iter().map(ServerAddress::key).collect();
        let (staying, added): (Vec<_>, Vec<_>) = next
            .iter()
            .cloned()
            .partition(|server| old_keys.contains(&server.key()));
        let (old, new) = (self.servers.len() as f64, next.len() as f64);
        let still_in = next.iter().any(|server| server.key() == me.key());
        let group = if new > old {
            if still_in && self.rng.random::<f64>() > 1.0 - old / new {
                None
            } else {
                Some(added.clone())
            }
        } else if still_in {
            None
        } else {
            let k = staying.len() as f64;
            let to_old = k * (old - new) / (new * (old - k));
            let staying: Vec<_> = staying
                .iter()
                .filter(|server| server.key() != me.key())
                .cloned()
                .collect();
            if (self.rng.random::<f64>() < to_old && !staying.is_empty()) || added.is_empty() {
                Some(staying)
            } else {
                Some(added.clone())
            }
        };
        self.servers = next;
        self.preferred.clear();
        match self.position(&me) {
            Some(at) => self.cursor = (at + 1) % self.servers.len(),
            None => self.cursor = 0,
        }
        match group {
            None => Rebalance::Stay,
            Some(mut first) => {
                first.shuffle(&mut self.rng);
                let rest: Vec<_> = self
                    .servers
                    .iter()
                    .filter(|server| {
                        server.key() != me.key() && !first.iter().any(|f| f.key() == server.key())
                    })
                    .cloned()
                    .collect();
                first.extend(rest);
                if first.is_empty() {
                    return Rebalance::Stay;
                }
                self.preferred = first.iter().cloned().collect();
                self.attempts = 0;
                Rebalance::Move(first)
            }
        }
    }
}

use rand::Rng as _;

fn dedup(servers: Vec<ServerAddress>) -> Vec<ServerAddress> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for server in servers {
        if !seen.contains(&server.key()) {
            seen.push(server.key());
            out.push(server);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(ports: &[u16]) -> Vec<ServerAddress> {
        ports
            .iter()
            .map(|port| ServerAddress::new("127.0.0.1", *port))
            .collect()
    }

    #[test]
    fn a_round_visits_every_server_once_then_says_so() {
        let mut hosts = HostList::new(servers(&[1, 2, 3]), Some(7));
        let mut seen = Vec::new();
        for i in 0..3 {
            let (server, round_done) = hosts.next();
            assert!(!round_done, "attempt {i}");
            seen.push(server.port);
        }
        seen.sort_unstable();
        assert_eq!(seen, [1, 2, 3]);
        assert!(hosts.next().1, "the fourth attempt starts a new round");
        hosts.connected(&ServerAddress::new("localhost", 2));
        assert!(!hosts.next().1);
        assert_ne!(
            hosts
                .next_other(&ServerAddress::new("127.0.0.1", 1))
                .unwrap()
                .port,
            1
        );
    }

    #[test]
    fn duplicates_are_one_server() {
        let hosts = HostList::new(
            vec![
                ServerAddress::new("localhost", 1),
                ServerAddress::new("127.0.0.1", 1),
                ServerAddress::new("LOCALHOST", 1),
            ],
            Some(1),
        );
        assert_eq!(hosts.len(), 1);
    }

    #[test]
    fn a_client_whose_server_left_always_moves() {
        for seed in 0..50 {
            let mut hosts = HostList::new(servers(&[1, 2, 3]), Some(seed));
            let current = ServerAddress::new("127.0.0.1", 1);
            hosts.connected(&current);
            match hosts.update(servers(&[2, 3, 4]), Some(&current)) {
                Rebalance::Move(first) => {
                    assert!(first.iter().all(|s| s.port != 1));
                    assert_eq!(first.len(), 3);
                }
                Rebalance::Stay => panic!("seed {seed}: stayed on a server that left"),
            }
        }
    }

    #[test]
    fn a_client_stays_when_its_server_stays_and_the_list_shrinks() {
        let mut hosts = HostList::new(servers(&[1, 2, 3]), Some(3));
        let current = ServerAddress::new("127.0.0.1", 1);
        assert_eq!(
            hosts.update(servers(&[1, 2]), Some(&current)),
            Rebalance::Stay
        );
    }

    /// Many clients spread evenly over 3 servers; the list grows to 5: about 2/5 of them move,
    /// all to the new servers, and load is even again.
    #[test]
    fn growth_moves_the_fair_share_to_the_new_servers() {
        let clients = 6000;
        let mut load = std::collections::HashMap::<u16, usize>::new();
        for seed in 0..clients {
            let mut hosts = HostList::new(servers(&[1, 2, 3]), Some(seed as u64));
            let current = ServerAddress::new("127.0.0.1", (seed % 3) as u16 + 1);
            hosts.connected(&current);
            let port = match hosts.update(servers(&[1, 2, 3, 4, 5]), Some(&current)) {
                Rebalance::Stay => current.port,
                Rebalance::Move(first) => {
                    assert!(first[0].port >= 4, "moves go to new servers first");
                    first[0].port
                }
            };
            *load.entry(port).or_default() += 1;
        }
        for port in 1..=5 {
            let share = load[&port] as f64 / clients as f64;
            assert!((share - 0.2).abs() < 0.03, "server {port}: {share}");
        }
    }

    /// 5 servers shrink to 3 (two removed): the removed servers' clients spread so that the
    /// three left carry a third each.
    #[test]
    fn shrinking_spreads_the_removed_servers_clients() {
        let clients = 6000;
        let mut load = std::collections::HashMap::<u16, usize>::new();
        for seed in 0..clients {
            let mut hosts = HostList::new(servers(&[1, 2, 3, 4, 5]), Some(seed as u64));
            let current = ServerAddress::new("127.0.0.1", (seed % 5) as u16 + 1);
            hosts.connected(&current);
            let port = match hosts.update(servers(&[1, 2, 3]), Some(&current)) {
                Rebalance::Stay => current.port,
                Rebalance::Move(first) => first[0].port,
            };
            *load.entry(port).or_default() += 1;
        }
        for port in 1..=3 {
            let share = load[&port] as f64 / clients as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.03, "server {port}: {share}");
        }
    }

    /// One member replaced by another (same size): its clients move to the replacement.
    #[test]
    fn a_replaced_members_clients_go_to_its_replacement() {
        for seed in 0..50 {
            let mut hosts = HostList::new(servers(&[1, 2, 3]), Some(seed));
            let current = ServerAddress::new("127.0.0.1", 3);
            hosts.connected(&current);
            let Rebalance::Move(first) = hosts.update(servers(&[1, 2, 4]), Some(&current)) else {
                panic!("stayed");
            };
            assert_eq!(first[0].port, 4);
        }
    }
}
