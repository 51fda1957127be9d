//! curator-barriers' single-server fault tests under the simulator.

use std::error::Error;
use std::time::Duration;

use curator_barriers::{
    DistributedBarrier, DistributedDoubleBarrier, Outcome, Site, TwoPhaseCommit, Vote,
};
use curator_framework::CuratorFramework;
use curator_sim::SimClient;

use crate::{SEEDS, run, session_of, sim};

/// Long enough for anything the scenarios wait for (simulated time, so free).
const WAIT: Duration = Duration::from_secs(30);

/// The transaction at `path` begun with `sites` by a coordinator on a client of its own, and
/// each site joined on a client of its own: the coordinator, the sites, and every client.
async fn setup(
    client: &SimClient,
    path: &str,
    sites: &[&str],
) -> Result<(TwoPhaseCommit, Vec<Site>, Vec<CuratorFramework>), Box<dyn Error>> {
    let coordinator_client = client.connect().await?;
    let coordinator = TwoPhaseCommit::new(coordinator_client.clone(), path)?;
    coordinator.begin(sites).await?;
    let mut clients = vec![coordinator_client];
    let mut joined = Vec::new();
    for site in sites {
        let zk = client.connect().await?;
        joined.push(TwoPhaseCommit::new(zk.clone(), path)?.join(site).await?);
        clients.push(zk);
    }
    Ok((coordinator, joined, clients))
}

#[test]
fn a_waiter_survives_a_server_restart() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/barrier-restart";
            let owner_client = client.connect().await?;
            let waiter_client = client.connect().await?;
            let owner = DistributedBarrier::new(owner_client.clone(), path)?;
            let waiter = DistributedBarrier::new(waiter_client.clone(), path)?;
            owner.set_barrier().await?;
            let probe = waiter.clone();
            let waiting = tokio::spawn(async move { waiter.wait_on_barrier().await });
            // While the probe waits, the waiter task runs and sets its watch (the barrier is
            // up).
            assert!(
                !probe
                    .wait_on_barrier_timeout(Duration::from_millis(100))
                    .await?
            );
            client.faults().restart_server();
            owner.remove_barrier().await?;
            tokio::time::timeout(WAIT, waiting)
                .await
                .map_err(|_| "the watch did not survive the restart")???;
            owner_client.close().await?;
            waiter_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_member_whose_session_ends_inside_the_barrier_does_not_block_the_others() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/double-barrier-expiry";
            let doomed_client = client.connect().await?;
            let (a_client, b_client) = (client.connect().await?, client.connect().await?);
            let doomed = DistributedDoubleBarrier::new(doomed_client.clone(), path, 3)?;
            let a = DistributedDoubleBarrier::new(a_client.clone(), path, 3)?;
            let b = DistributedDoubleBarrier::new(b_client.clone(), path, 3)?;
            let (x, y, z) = futures::join!(a.enter(), b.enter(), doomed.enter());
            x?;
            y?;
            z?;
            client
                .faults()
                .expire_session(session_of(&doomed_client).await?);
            let (x, y) = futures::join!(a.leave_timeout(WAIT), b.leave_timeout(WAIT));
            assert!(x? && y?, "the others leave");
            for zk in [doomed_client, a_client, b_client] {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_crashed_site_aborts_the_transaction() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/2pc-crash/tx";
            let (coordinator, mut sites, clients) =
                setup(&client, path, &["live", "doomed"]).await?;
            let _doomed = sites.pop().ok_or("two sites")?;
            let live = sites.pop().ok_or("two sites")?;
            live.vote(Vote::Commit).await?;
            let waiting = tokio::spawn({
                let live = live.clone();
                async move { live.outcome(WAIT).await }
            });
            // The doomed site's session ends before it votes.
            client
                .faults()
                .expire_session(session_of(&clients[2]).await?);
            let expected = Outcome::Abort {
                reason: "site doomed vanished".into(),
            };
            assert_eq!(waiting.await??, expected);
            assert_eq!(coordinator.outcome(WAIT).await?, expected);
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn waiting_participants_learn_the_outcome_across_a_server_restart() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let (coordinator, mut sites, clients) =
                setup(&client, "/2pc-restart/tx", &["early", "late"]).await?;
            let late = sites.pop().ok_or("two sites")?;
            let early = sites.pop().ok_or("two sites")?;
            early.vote(Vote::Commit).await?;
            let waiting = tokio::spawn({
                let early = early.clone();
                async move { early.outcome(WAIT).await }
            });
            // The server goes away and comes back inside the sessions' timeout: presences
            // survive, the waiters' watches are restored.
            client.faults().restart_server();
            late.vote(Vote::Commit).await?;
            assert_eq!(waiting.await??, Outcome::Commit);
            assert_eq!(coordinator.outcome(WAIT).await?, Outcome::Commit);
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}
