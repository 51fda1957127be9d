//! Every recipe crate's fault tests that need only one server, again under the simulator: the
//! same scenarios as the crates' own tests against real ZooKeeper (a holder's session expiring,
//! a server restart, a cut or partitioned connection, a lost reply), with the same invariants,
//! over several seeds of simulated latency in virtual time. One test binary for all the crates
//! (so `just test` links it once); a module per recipe crate, its tests named after the real
//! ones.
//!
//! Faults come from the body that directs the scenario (`SimClient::faults`), at the points
//! the real test injects them. Waiting is on events, or on conditions polled in simulated time
//! (free: the clock only moves when every host is idle).

mod barriers;
mod caches;
mod counters;
mod discovery;
mod election;
mod locks;
mod modeled;
mod nodes;
mod queues;

use std::future::Future;
use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_sim::{SimReport, Simulation};

/// The seeds each scenario runs under (each draws its own latencies and, where a test uses
/// them, its own random faults).
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// A simulation of `seed` without random faults (the scenario directs its own), 4 s sessions.
pub fn sim(seed: u64) -> Simulation<'static> {
    Simulation::builder(seed).build()
}

/// Runs `sim` to the end, failing the test with the seed and the faults when a body failed.
pub fn run(sim: &mut Simulation<'_>) -> SimReport {
    sim.run().unwrap_or_else(|error| panic!("{error}"))
}

/// Waits (in simulated time, polling every 10 ms) until `condition` holds, for at most
/// `within`; an error names `what`.
pub async fn until<F, Fut>(
    what: &str,
    within: Duration,
    mut condition: F,
) -> Result<(), Box<dyn std::error::Error>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + within;
    while !condition().await {
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("{what}: not within {within:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// The session id of a connected client (waits for the connection).
pub async fn session_of(zk: &CuratorFramework) -> Result<i64, Box<dyn std::error::Error>> {
    zk.block_until_connected(Duration::from_secs(30)).await?;
    zk.session_id().ok_or_else(|| "no session".into())
}

/// A directed fault never ended by its body is reported as lasting until the run's end.
#[test]
fn a_directed_fault_still_in_force_ends_with_the_run() {
    let mut sim = sim(1);
    sim.client("c0", |client| async move {
        client.faults().partition("c0");
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(())
    });
    let report = run(&mut sim);
    assert_eq!(report.faults.len(), 1);
    let fault = &report.faults[0];
    assert!(fault.until > fault.at, "{fault}");
    assert!(fault.until <= report.elapsed, "{fault}");
}
