//! curator-locks' single-server fault tests under the simulator.

use std::time::Duration;

use curator_framework::ConnectionState;
use curator_locks::InterProcessMutex;
use futures::StreamExt;

use crate::{SEEDS, run, session_of, sim, until};

#[test]
fn a_holder_whose_session_expires_is_told_and_the_next_waiter_gets_the_lock() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let holder_client = client.connect().await?;
            let waiter_client = client.connect().await?;
            let holder = InterProcessMutex::builder(holder_client.clone(), "/lock").build()?;
            let waiter = InterProcessMutex::builder(waiter_client.clone(), "/lock").build()?;
            let guard = holder.acquire().await?;
            assert!(!guard.is_lost());
            let waiting = tokio::spawn(async move {
                waiter
                    .acquire()
                    .await
                    .map(|guard| (guard.node_path().to_owned(), guard))
            });
            until("the waiter queues", Duration::from_secs(10), || async {
                holder
                    .participant_nodes()
                    .await
                    .is_ok_and(|nodes| nodes.len() == 2)
            })
            .await?;

            let mut states = holder_client.connection_state_stream();
            client
                .faults()
                .expire_session(session_of(&holder_client).await?);
            tokio::time::timeout(Duration::from_secs(30), guard.lost())
                .await
                .map_err(|_| "the holder is not told")?;
            assert!(guard.is_lost());
            let (node, next) = tokio::time::timeout(Duration::from_secs(30), waiting)
                .await
                .map_err(|_| "the waiter never acquires")???;
            assert_ne!(node, guard.node_path());
            assert!(matches!(
                states.next().await,
                Some(ConnectionState::Suspended | ConnectionState::Lost)
            ));
            next.release().await?;
            holder_client.close().await?;
            waiter_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}
