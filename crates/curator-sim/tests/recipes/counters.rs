//! curator-counters' single-server fault tests under the simulator.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use curator_counters::{
    DistributedAtomicLong, MARKER_PREFIX, SequentialIdGenerator, SharedCount, VersionedValue,
};
use curator_framework::ConnectionState;
use curator_framework::listen::ListenerStream;
use curator_framework::retry::RetryNTimes;
use curator_sim::SimClient;
use futures::StreamExt;

use crate::{SEEDS, run, session_of, sim, until};

/// Long enough for anything the scenarios wait for (simulated time, so free).
const WAIT: Duration = Duration::from_secs(30);

/// A retry policy for optimistic writes that outlasts any contention.
fn patient() -> RetryNTimes {
    RetryNTimes::new(10_000, Duration::from_millis(1))
}

/// The long stored at `path` on the server (Curator's 8-byte big-endian encoding).
fn stored(client: &SimClient, path: &str) -> Option<i64> {
    let (data, _) = client
        .faults()
        .server()
        .with_model(|model| model.node(path))?;
    Some(i64::from_be_bytes(data.try_into().ok()?))
}

/// The names of `path`'s children on the server (none when it does not exist).
fn children(client: &SimClient, path: &str) -> Vec<String> {
    client
        .faults()
        .server()
        .with_model(|model| model.children(path))
        .unwrap_or_default()
}

/// The next value a stream publishes.
async fn next<T: Clone + Send + 'static>(
    stream: &mut ListenerStream<VersionedValue<T>>,
) -> Result<VersionedValue<T>, Box<dyn Error>> {
    Ok(tokio::time::timeout(WAIT, stream.next())
        .await
        .map_err(|_| "no value in time")?
        .ok_or("the stream ended")?)
}

/// The write is applied but its reply never arrives (replies are lost, then the connection is
/// cut). With outcome markers the increment counts once; without (Curator's behaviour) the
/// retry applies it a second time.
#[test]
fn a_lost_reply_is_applied_exactly_once() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            // With markers: the instance's first write (its marker created in the transaction)
            // and a later one (the marker's data set at the version the instance knows).
            for (round, (markers, earlier)) in [(true, 0i64), (true, 2), (false, 0)]
                .into_iter()
                .enumerate()
            {
                let path = format!("/atomic-lost-reply/{round}/n");
                let zk = client.connect().await?;
                let builder = DistributedAtomicLong::builder(zk.clone(), &path, patient());
                let counter = if markers {
                    builder
                } else {
                    builder.without_markers()
                }
                .build()?;
                assert!(counter.initialize(0).await?);
                for _ in 0..earlier {
                    assert!(counter.increment().await?.succeeded);
                }

                // Replies stop between the read and the write: the write goes out, its answer
                // never comes back.
                let increment = tokio::spawn({
                    let (counter, faults) = (counter.clone(), client.faults().clone());
                    let first = AtomicBool::new(true);
                    async move {
                        counter
                            .as_value()
                            .update(|current| {
                                if first.swap(false, Ordering::SeqCst) {
                                    faults.lose_replies("c0");
                                }
                                let n =
                                    i64::from_be_bytes(current.try_into().expect("an 8-byte long"));
                                Ok(Some((n + 1).to_be_bytes().to_vec()))
                            })
                            .await
                    }
                });
                until("the write reaches the server", WAIT, || async {
                    stored(&client, &path) == Some(earlier + 1)
                })
                .await?;
                assert!(!increment.is_finished(), "its reply was lost");
                client.faults().cut("c0");
                client.faults().repair("c0");
                let result = tokio::time::timeout(WAIT, increment)
                    .await
                    .map_err(|_| "the increment never returns")???;
                assert!(result.succeeded);
                let total = stored(&client, &path).ok_or("the counter exists")?;
                if markers {
                    assert_eq!(
                        (result.pre_value, result.post_value),
                        (
                            earlier.to_be_bytes().to_vec(),
                            (earlier + 1).to_be_bytes().to_vec()
                        )
                    );
                    assert_eq!(total, earlier + 1, "applied once");
                    // One marker per instance, whatever it wrote.
                    let left = children(&client, &path);
                    assert_eq!(left.len(), 1, "{left:?}");
                    counter.flush_markers().await?;
                    assert!(children(&client, &path).is_empty());
                } else {
                    assert_eq!(total, 2, "Curator's plain retry applies it twice");
                }
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn no_increment_is_lost_or_doubled_across_restart_and_expiry() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/atomic-faults/n";
            let stop = Arc::new(AtomicBool::new(false));
            let successes = Arc::new(AtomicU64::new(0));
            let failures = Arc::new(AtomicU64::new(0));
            let mut clients = Vec::new();
            let mut tasks = Vec::new();
            for _ in 0..8 {
                let zk = client.connect().await?;
                clients.push(zk.clone());
                let counter = DistributedAtomicLong::builder(zk, path, patient()).build()?;
                let (stop, successes, failures) = (
                    Arc::clone(&stop),
                    Arc::clone(&successes),
                    Arc::clone(&failures),
                );
                tasks.push(tokio::spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        match counter.increment().await {
                            Ok(result) if result.succeeded => {
                                successes.fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(_) | Err(_) => {
                                failures.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                }));
            }
            let progress = |at_least: u64| {
                let successes = Arc::clone(&successes);
                async move {
                    until("increments make progress", WAIT, || async {
                        successes.load(Ordering::SeqCst) >= at_least
                    })
                    .await
                }
            };
            progress(50).await?;
            client.faults().restart_server();
            let after_restart = successes.load(Ordering::SeqCst);
            progress(after_restart + 50).await?;
            // Two sessions end in the middle of their increments (each back from the restart
            // first: the others' progress does not say that these two reconnected).
            for zk in &clients[..2] {
                client.faults().expire_session(session_of(zk).await?);
            }
            let after_expiry = successes.load(Ordering::SeqCst);
            progress(after_expiry + 50).await?;
            stop.store(true, Ordering::SeqCst);
            for task in tasks {
                task.await?;
            }
            let successes = successes.load(Ordering::SeqCst);
            let total = DistributedAtomicLong::builder(clients[2].clone(), path, patient())
                .build()?
                .get()
                .await?
                .post_value;
            assert_eq!(
                u64::try_from(total)?,
                successes,
                "every successful increment applied exactly once, no failed one applied \
                 ({} failed)",
                failures.load(Ordering::SeqCst)
            );
            // No marker is left (the instances were dropped with their tasks, which deletes
            // them in the background).
            until("markers are cleaned up", WAIT, || async {
                children(&client, path)
                    .iter()
                    .all(|name| !name.starts_with(MARKER_PREFIX))
            })
            .await?;
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn ids_stay_unique_and_increasing_across_a_server_restart() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let zk = client.connect().await?;
            let generator = SequentialIdGenerator::new(zk.clone(), "/ids-restart/jobs", "job-")?;
            generator.start().await?;
            let (first_tx, mut first_rx) = tokio::sync::mpsc::unbounded_channel();
            let producing = tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..60 {
                    let id = generator.next_id().await?;
                    let _ = first_tx.send(id.id);
                    got.push(id.id);
                }
                generator.close().await?;
                Ok::<_, curator_framework::Error>(got)
            });
            // Restart once ids are flowing.
            for _ in 0..10 {
                first_rx.recv().await.ok_or("the producer ended early")?;
            }
            client.faults().restart_server();
            let got = tokio::time::timeout(WAIT, producing)
                .await
                .map_err(|_| "the producer never finishes")???;
            assert_eq!(got.len(), 60);
            assert!(
                got.windows(2).all(|pair| pair[0] < pair[1]),
                "unique and increasing: {got:?}"
            );
            zk.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn the_view_follows_the_node_through_restart_and_expiry() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/shared-faults/count";
            let follower_client = client.connect().await?;
            let follower = SharedCount::new(follower_client.clone(), path, 0)?;
            follower.start().await?;
            let mut seen = follower.stream();
            let writer_client = client.connect().await?;
            let writer = SharedCount::new(writer_client.clone(), path, 0)?;
            writer.start().await?;

            client.faults().restart_server();
            writer.set_count(1).await?;
            assert_eq!(next(&mut seen).await?.value, 1, "seen after a restart");

            // The follower's session ends; a write lands before its new session reads again.
            let mut states = follower_client.connection_state_stream();
            client
                .faults()
                .expire_session(session_of(&follower_client).await?);
            writer.set_count(2).await?;
            loop {
                let state = tokio::time::timeout(WAIT, states.next())
                    .await
                    .map_err(|_| "the follower never reconnects")?
                    .ok_or("the state stream ended")?;
                if state == ConnectionState::Reconnected {
                    break;
                }
            }
            assert_eq!(
                next(&mut seen).await?.value,
                2,
                "re-read on the new session"
            );
            writer.set_count(3).await?;
            assert_eq!(next(&mut seen).await?.value, 3, "and followed again");
            assert_eq!(follower.count()?, 3);
            follower.close().await?;
            writer.close().await?;
            follower_client.close().await?;
            writer_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}
