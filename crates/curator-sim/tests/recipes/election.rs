//! curator-election's single-server fault tests under the simulator: latches, selectors and an
//! observer through session expiries (at the server), server restarts and partitions, with
//! the real tests' invariants (one leader at a time, leaders in order with growing epochs,
//! terms that never overlap, lock-delay on the server's clock).

use std::error::Error;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use curator_election::{
    CloseMode, LatchEvent, LeaderLatch, LeaderObserver, LeaderSelector, Participant,
};
use curator_framework::listen::ListenerStream;
use curator_framework::{ConnectionState, CuratorFramework, paths};
use curator_locks::{LockDelayEntry, LockDelayRecord};
use curator_sim::{SimClient, Simulation};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::{SEEDS, run, session_of, sim, until};

/// How long any one awaited step may take (simulated time).
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The simulation's session timeout.
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// `future`'s output, or an error naming `what` when it takes longer than `within`.
pub(crate) async fn within<T>(
    what: &str,
    within: Duration,
    future: impl Future<Output = T>,
) -> Result<T, Box<dyn Error>> {
    tokio::time::timeout(within, future)
        .await
        .map_err(|_| format!("{what}: not within {within:?}").into())
}

/// Clients on a host of their own, made by a body there and handed to the body directing the
/// scenario: a partition, a cut or lost replies reach every connection of a host, so a client
/// that a fault must reach alone lives elsewhere. The host stays up (its clients' tasks run on
/// it) until this is dropped; then it closes the clients it listed.
pub(crate) struct Elsewhere<T> {
    handed: Option<oneshot::Receiver<T>>,
    _done: watch::Sender<()>,
}

impl<T> Elsewhere<T> {
    /// Adds host `name` to `sim`, running `body`: what it makes, and the clients to close when
    /// the director is done with them.
    pub(crate) fn host<F, Fut>(sim: &mut Simulation<'static>, name: &str, body: F) -> Self
    where
        T: 'static,
        F: FnOnce(SimClient) -> Fut,
        Fut: Future<Output = Result<(T, Vec<CuratorFramework>), Box<dyn Error>>> + 'static,
    {
        let (hand, handed) = oneshot::channel();
        let (done, mut until_done) = watch::channel(());
        sim.client(name, move |client| {
            let making = body(client);
            async move {
                let (made, clients) = making.await?;
                if hand.send(made).is_ok() {
                    // Ends when the director drops its side.
                    let _ = until_done.changed().await;
                }
                for zk in clients {
                    let _ = tokio::time::timeout(WAIT, zk.close()).await;
                }
                Ok(())
            }
        });
        Elsewhere {
            handed: Some(handed),
            _done: done,
        }
    }

    /// What the host's body made (once).
    pub(crate) async fn handed(&mut self) -> Result<T, Box<dyn Error>> {
        let handed = self.handed.take().ok_or("handed over already")?;
        Ok(within("the other host's clients", WAIT, handed).await??)
    }
}

/// A started latch (default options) of `client` on `path` for participant `id`.
async fn started(
    client: &CuratorFramework,
    path: &str,
    id: &str,
) -> Result<LeaderLatch, Box<dyn Error>> {
    let latch = LeaderLatch::builder(client.clone(), path, id).build()?;
    latch.start().await?;
    Ok(latch)
}

/// Waits for `latch` to lead; its epoch (the one its hold fences with).
async fn leads(latch: &LeaderLatch) -> Result<i64, Box<dyn Error>> {
    within(
        &format!("{} leads", latch.id()),
        WAIT,
        latch.await_leadership(),
    )
    .await??;
    let epoch = latch.leader_epoch().ok_or("a leader has an epoch")?;
    assert_eq!(Some(epoch), latch.hold().map(|h| h.fencing_token()));
    Ok(epoch)
}

/// The next change an observer delivers.
async fn next_change(
    changes: &mut ListenerStream<Option<Participant>>,
    what: &str,
) -> Result<Option<Participant>, Box<dyn Error>> {
    within(what, WAIT, changes.next())
        .await?
        .ok_or_else(|| format!("{what}: the observer's stream ended").into())
}

/// Which participant a delivered leader is, with its epoch.
fn who(seen: &Option<Participant>) -> Option<(&str, i64)> {
    seen.as_ref().map(|p| (p.id.as_str(), p.epoch))
}

/// Waits until `zk` reports `Reconnected` on `states`.
async fn reconnected(
    states: &mut ListenerStream<ConnectionState>,
    what: &str,
) -> Result<(), Box<dyn Error>> {
    within(what, WAIT, async {
        while let Some(state) = states.next().await {
            if state == ConnectionState::Reconnected {
                return Ok(());
            }
        }
        Err::<(), Box<dyn Error>>(format!("{what}: the state stream ended").into())
    })
    .await?
}

/// The index of the one latch of `latches` that leads, waiting for there to be one; two at
/// once fail the test.
async fn one_leader(latches: &[LeaderLatch]) -> Result<usize, Box<dyn Error>> {
    let end = Instant::now() + WAIT;
    loop {
        let leaders: Vec<usize> = (0..latches.len())
            .filter(|i| latches[*i].has_leadership())
            .collect();
        assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
        if let [leader] = leaders[..] {
            return Ok(leader);
        }
        if Instant::now() >= end {
            return Err("no leader in time".into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Every leadership change of every latch, in the order they happened.
type Log = Arc<Mutex<Vec<(String, LatchEvent)>>>;

fn record(latch: &LeaderLatch, log: &Log) {
    let (log, id) = (Arc::clone(log), latch.id().to_owned());
    latch
        .listenable()
        .add_listener(move |event| log.lock().push((id.clone(), event)))
        .detach();
}

/// The latch's leadership changes (`IsLeader`, `NotLeader`), without the election's steps.
fn leadership(latch: &LeaderLatch) -> ListenerStream<LatchEvent> {
    latch
        .listenable()
        .filter_map(|event| {
            matches!(event, LatchEvent::IsLeader | LatchEvent::NotLeader).then_some(event)
        })
        .stream()
}

#[test]
fn an_observer_sees_every_latch_leader_in_order_through_restart_and_expiry() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/epochs-observe";
            let clients = [
                client.connect().await?,
                client.connect().await?,
                client.connect().await?,
                client.connect().await?,
            ];
            let p0 = started(&clients[0], path, "p0").await?;
            let p1 = started(&clients[1], path, "p1").await?;
            let p2 = started(&clients[2], path, "p2").await?;
            let observer = LeaderObserver::new(clients[3].clone(), path)?;
            let mut changes = observer.stream();
            observer.start().await?;
            let mut delivered = Vec::new();

            let e0 = leads(&p0).await?;
            let seen = next_change(&mut changes, "the first leader").await?;
            assert_eq!(who(&seen), Some(("p0", e0)));
            assert_eq!(observer.current(), seen);
            delivered.push(seen);

            // Same session, same nodes: the same leader, same epoch; nothing new to deliver.
            let mut states: Vec<_> = clients
                .iter()
                .map(CuratorFramework::connection_state_stream)
                .collect();
            client.faults().restart_server();
            for states in &mut states {
                reconnected(states, "a reconnect after the restart").await?;
            }
            assert_eq!(leads(&p0).await?, e0);

            p0.close().await?;
            let e1 = leads(&p1).await?;
            assert!(e1 > e0);
            let seen = next_change(&mut changes, "p1 leads").await?;
            assert_eq!(who(&seen), Some(("p1", e1)));
            delivered.push(seen);

            // p1's session expires: p2 leads; p1 rejoins behind it on a new node.
            client
                .faults()
                .expire_session(session_of(&clients[1]).await?);
            let e2 = leads(&p2).await?;
            assert!(e2 > e1);
            let seen = next_change(&mut changes, "p2 leads").await?;
            assert_eq!(who(&seen), Some(("p2", e2)));
            delivered.push(seen);
            until("p1 rejoins", WAIT, || async {
                p2.participant_nodes()
                    .await
                    .is_ok_and(|nodes| nodes.len() == 2)
            })
            .await?;

            p2.close().await?;
            let e3 = leads(&p1).await?;
            assert!(
                e3 > e2,
                "p1's new node leads with a new epoch: {e3:#x} after {e2:#x}"
            );
            let seen = next_change(&mut changes, "p1 leads again").await?;
            assert_eq!(who(&seen), Some(("p1", e3)));
            delivered.push(seen);

            p1.close().await?;
            let seen = next_change(&mut changes, "nobody leads").await?;
            assert_eq!(seen, None);
            assert_eq!(observer.current(), None);
            delivered.push(seen);

            let epochs: Vec<i64> = delivered.iter().flatten().map(|p| p.epoch).collect();
            assert!(
                epochs.windows(2).all(|pair| pair[0] < pair[1]),
                "epochs not strictly increasing: {epochs:?}"
            );
            observer.close().await?;
            observer.close().await?;
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn an_expired_leader_steps_down_and_the_next_takes_over() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/latch-expiry";
            let log: Log = Arc::default();
            let first_client = client.connect().await?;
            let first = LeaderLatch::builder(first_client.clone(), path, "first").build()?;
            record(&first, &log);
            first.start().await?;
            within("the first leads", WAIT, first.await_leadership()).await??;
            let second_client = client.connect().await?;
            let second = LeaderLatch::builder(second_client.clone(), path, "second").build()?;
            record(&second, &log);
            second.start().await?;

            let old = session_of(&first_client).await?;
            client.faults().expire_session(old);
            // From the moment its client knows the session is gone, whatever the latch's task
            // is doing: a reader must never see a leader whose hold is lost.
            until("the first client hears of the expiry", WAIT, || async {
                first_client.session_id() != Some(old)
            })
            .await?;
            assert!(!first.has_leadership());
            assert!(first.hold().is_none_or(|hold| hold.is_lost()));
            within("the second leads", WAIT, second.await_leadership()).await??;
            until("the first stepped down", WAIT, || async {
                log.lock()
                    .iter()
                    .any(|(id, e)| id == "first" && *e == LatchEvent::NotLeader)
            })
            .await?;
            // The first participant rejoins on its new session, behind the second.
            until("the first participant rejoins", WAIT, || async {
                first.participants().await.is_ok_and(|p| p.len() == 2)
            })
            .await?;
            assert!(!first.has_leadership());
            assert!(second.has_leadership());
            first_client.close().await?;
            second_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_partitioned_leader_steps_down_before_its_session_times_out() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let mut cut_off = Elsewhere::host(&mut sim, "cut-off", |client| async move {
            let zk = client.connect().await?;
            let leader = started(&zk, "/latch-partition", "cut-off").await?;
            Ok((leader, vec![zk]))
        });
        sim.client("other", move |client| async move {
            let leader = cut_off.handed().await?;
            within("the cut-off one leads", WAIT, leader.await_leadership()).await??;
            let zk = client.connect().await?;
            let other = started(&zk, "/latch-partition", "other").await?;

            let mut events = leadership(&leader);
            let cut_at = Instant::now();
            client.faults().partition("cut-off");
            let event = within("the leader steps down", WAIT, events.next()).await?;
            assert_eq!(event, Some(LatchEvent::NotLeader));
            assert!(
                cut_at.elapsed() < SESSION_TIMEOUT,
                "stepped down only after {:?}",
                cut_at.elapsed()
            );
            assert!(!leader.has_leadership());
            // Once the server expires the cut-off session, the other participant leads.
            within("the other leads", WAIT, other.await_leadership()).await??;
            assert!(!leader.has_leadership());
            client.faults().repair("cut-off");
            other.close().await?;
            zk.close().await?;
            drop(cut_off);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn leadership_survives_a_server_restart_without_two_leaders() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/latch-restart";
            let clients = [client.connect().await?, client.connect().await?];
            let latches = [
                started(&clients[0], path, "p0").await?,
                started(&clients[1], path, "p1").await?,
            ];
            let before = one_leader(&latches).await?;
            let mut states: Vec<_> = clients
                .iter()
                .map(CuratorFramework::connection_state_stream)
                .collect();
            client.faults().restart_server();
            // Never two leaders while the clients find their sessions again.
            let reconnecting = async {
                for states in &mut states {
                    reconnected(states, "a reconnect after the restart").await?;
                }
                Ok::<(), Box<dyn Error>>(())
            };
            let watching = async {
                loop {
                    let leaders = latches.iter().filter(|l| l.has_leadership()).count();
                    assert!(leaders <= 1, "two leaders at once");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            tokio::select! {
                reconnected = reconnecting => reconnected?,
                () = watching => {}
            }
            // Same sessions, same nodes: the same participant leads again, alone.
            let after = one_leader(&latches).await?;
            assert_eq!(before, after);
            assert_eq!(
                latches[0].participants().await?.len(),
                2,
                "no node was lost or duplicated"
            );
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}

/// A logical clock for terms: every host runs on one thread, so a shared counter orders the
/// events of all of them exactly.
static CLOCK: AtomicU64 = AtomicU64::new(0);

fn now() -> u64 {
    CLOCK.fetch_add(1, Ordering::SeqCst)
}

/// (participant, leadership start, leadership end) for every leadership.
type Terms = Arc<Mutex<Vec<(String, u64, u64)>>>;

/// Records a leadership's end when the task finishes or is cancelled (dropped).
struct EndOfTerm {
    terms: Terms,
    id: String,
    started: u64,
}

impl Drop for EndOfTerm {
    fn drop(&mut self) {
        self.terms
            .lock()
            .push((self.id.clone(), self.started, now()));
    }
}

fn assert_no_overlap(terms: &[(String, u64, u64)]) {
    let mut sorted = terms.to_vec();
    sorted.sort_by_key(|t| t.1);
    for pair in sorted.windows(2) {
        assert!(
            pair[0].2 < pair[1].1,
            "{} led until {}, {} from {}",
            pair[0].0,
            pair[0].2,
            pair[1].0,
            pair[1].1
        );
    }
}

/// A selector whose task leads until told to stop, recording its term.
fn waiting_selector(
    client: &CuratorFramework,
    path: &str,
    id: &str,
    terms: &Terms,
    requeue: bool,
) -> Result<LeaderSelector, Box<dyn Error>> {
    let terms = Arc::clone(terms);
    let task_id = id.to_owned();
    let builder = LeaderSelector::builder(client.clone(), path, id, move |context| {
        let end = EndOfTerm {
            terms: Arc::clone(&terms),
            id: task_id.clone(),
            started: now(),
        };
        async move {
            context.lost().await;
            drop(end);
        }
    });
    let builder = if requeue {
        builder.auto_requeue()
    } else {
        builder
    };
    Ok(builder.build()?)
}

/// Starts `a` and waits for it to lead; then starts `b` and waits for it to queue behind.
async fn a_leads_b_waits(a: &LeaderSelector, b: &LeaderSelector) -> Result<(), Box<dyn Error>> {
    a.start().await?;
    until("a leads", WAIT, || async { a.has_leadership() }).await?;
    b.start().await?;
    until("b queues", WAIT, || async {
        b.participants().await.is_ok_and(|p| p.len() >= 2)
    })
    .await
}

/// Who led, in order.
fn leaders(terms: &Terms) -> Vec<String> {
    terms.lock().iter().map(|t| t.0.clone()).collect()
}

#[test]
fn a_cut_off_leaders_task_is_cancelled_before_the_next_leader_starts() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let path = "/selector-partition";
        let terms: Terms = Arc::default();
        let a_terms = Arc::clone(&terms);
        let mut cut_off = Elsewhere::host(&mut sim, "cut-off", move |client| async move {
            let zk = client.connect().await?;
            let a = waiting_selector(&zk, path, "a", &a_terms, false)?;
            Ok((a, vec![zk]))
        });
        sim.client("other", move |client| async move {
            let a = cut_off.handed().await?;
            let zk = client.connect().await?;
            let b = waiting_selector(&zk, path, "b", &terms, false)?;
            a_leads_b_waits(&a, &b).await?;

            client.faults().partition("cut-off");
            until("b leads once a's session expired", WAIT, || async {
                b.has_leadership()
            })
            .await?;
            assert!(!a.has_leadership());
            b.close().await?;
            client.faults().repair("cut-off");
            a.close().await?;
            assert_eq!(leaders(&terms), ["a", "b"]);
            assert_no_overlap(&terms.lock());
            zk.close().await?;
            drop(cut_off);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn an_expired_leader_hands_over() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/selector-expiry";
            let terms: Terms = Arc::default();
            let (a_client, b_client) = (client.connect().await?, client.connect().await?);
            let a = waiting_selector(&a_client, path, "a", &terms, false)?;
            let b = waiting_selector(&b_client, path, "b", &terms, false)?;
            a_leads_b_waits(&a, &b).await?;

            client.faults().expire_session(session_of(&a_client).await?);
            until("b leads and a's term ended", WAIT, || async {
                b.has_leadership() && terms.lock().iter().any(|t| t.0 == "a")
            })
            .await?;
            assert!(!a.has_leadership());
            b.close().await?;
            assert_eq!(leaders(&terms), ["a", "b"]);
            a.close().await?;
            a_client.close().await?;
            b_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_server_restart_ends_the_term_and_leadership_resumes_without_overlap() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/selector-restart";
            let terms: Terms = Arc::default();
            let (a_client, b_client) = (client.connect().await?, client.connect().await?);
            let a = waiting_selector(&a_client, path, "a", &terms, true)?;
            let b = waiting_selector(&b_client, path, "b", &terms, true)?;
            a_leads_b_waits(&a, &b).await?;

            // The connection drops (same sessions): the leader's task is stopped at
            // Suspended, and after the reconnect one of the two leads again.
            client.faults().restart_server();
            until("a's term ended", WAIT, || async {
                terms.lock().iter().any(|t| t.0 == "a")
            })
            .await?;
            until("someone leads again", WAIT, || async {
                a.has_leadership() || b.has_leadership()
            })
            .await?;
            assert!(!(a.has_leadership() && b.has_leadership()));
            a.close().await?;
            b.close().await?;
            let terms = terms.lock().clone();
            assert!(terms.len() >= 2, "{terms:?}");
            assert_no_overlap(&terms);
            a_client.close().await?;
            b_client.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

/// The lock-delay tests' delay.
const DELAY: Duration = Duration::from_secs(2);
/// Long enough that a test waiting for it would time out.
const NEVER: Duration = Duration::from_secs(3600);

/// The record in `dir`'s data and the `mtime` of its last write (the server's clock).
async fn delay_record(
    client: &CuratorFramework,
    dir: &str,
) -> Result<(LockDelayRecord, i64), Box<dyn Error>> {
    let (data, stat) = client.get_data().for_path(dir).await?;
    let record = LockDelayRecord::parse(&data)?.ok_or("the directory holds a record")?;
    Ok((record, stat.mtime))
}

/// The failure of `node` in `record`, dated.
fn failure_since(record: &LockDelayRecord, node: &str) -> i64 {
    record
        .entries()
        .iter()
        .find_map(|entry| match entry {
            LockDelayEntry::Failed {
                node: failed,
                since_ms,
                ..
            } if failed == node => Some(since_ms.expect("dated by the admitting write")),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the failure of {node} is in the record: {record:?}"))
}

/// Expires `zk`'s session at the server while its host is partitioned (so the client cannot
/// hear of it until [`SimFaults::repair`](curator_sim::SimFaults::repair)).
async fn expire_behind(
    client: &SimClient,
    zk: &CuratorFramework,
    host: &str,
) -> Result<(), Box<dyn Error>> {
    let session = session_of(zk).await?;
    client.faults().partition(host);
    assert!(
        client.faults().expire_session(session),
        "the session was alive"
    );
    Ok(())
}

#[test]
fn a_latch_leader_that_fails_delays_the_next_and_one_that_closes_does_not() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let path = "/lock-delay-latch/latch";
        let mut doomed = Elsewhere::host(&mut sim, "doomed", move |client| async move {
            let zk = client.connect().await?;
            let first = LeaderLatch::builder(zk.clone(), path, "first")
                .lock_delay(DELAY)
                .build()?;
            first.start().await?;
            Ok(((first, zk.clone()), vec![zk]))
        });
        sim.client("c0", move |client| async move {
            let (first, doomed_client) = doomed.handed().await?;
            within("the first leads", WAIT, first.await_leadership()).await??;
            let first_node = paths::node_name(&first.node_path().ok_or("a node")?).to_owned();

            let zk = client.connect().await?;
            let second = LeaderLatch::builder(zk.clone(), path, "second")
                .lock_delay(DELAY)
                .build()?;
            second.start().await?;
            expire_behind(&client, &doomed_client, "doomed").await?;
            within(
                "the next participant leads once the delay ran out",
                WAIT + DELAY,
                second.await_leadership(),
            )
            .await??;
            let (after, led_at) = delay_record(&zk, path).await?;
            let since = failure_since(&after, &first_node);
            assert!(
                led_at >= since + 2_000,
                "led {} ms after the failure was seen",
                led_at - since
            );

            // A leader that closes hands over at once, even with a delay no test would wait
            // for.
            let third = LeaderLatch::builder(zk.clone(), path, "third")
                .lock_delay(NEVER)
                .build()?;
            third.start().await?;
            second.close().await?;
            within(
                "a closed leader hands over at once",
                WAIT,
                third.await_leadership(),
            )
            .await??;
            third.close().await?;
            let (cleared, _) = delay_record(&zk, path).await?;
            assert!(cleared.entries().is_empty(), "{cleared:?}");
            client.faults().repair("doomed");
            let _ = within("the first closes", WAIT, first.close()).await;
            zk.close().await?;
            drop(doomed);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_selector_leader_that_fails_delays_the_next_and_one_that_returns_does_not() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let path = "/lock-delay-selector/selector";
        let (led_tx, mut led) = mpsc::unbounded_channel::<(String, String)>();
        // A selector whose task reports its leadership, then leads until it loses it
        // (`lead_for`) or returns at once.
        let selector = move |client: &CuratorFramework, id: &str, delay, lead_for: bool| {
            let led_tx = led_tx.clone();
            let id_for_task = id.to_owned();
            LeaderSelector::builder(client.clone(), path, id, move |context| {
                let led_tx = led_tx.clone();
                let id = id_for_task.clone();
                async move {
                    let node = paths::node_name(context.node_path()).to_owned();
                    let _ = led_tx.send((id, node));
                    if lead_for {
                        context.lost().await;
                    }
                }
            })
            .lock_delay(delay)
            .build()
        };
        let doomed_selector = selector.clone();
        let mut doomed = Elsewhere::host(&mut sim, "doomed", move |client| async move {
            let zk = client.connect().await?;
            let first = doomed_selector(&zk, "first", DELAY, true)?;
            first.start().await?;
            Ok(((first, zk.clone()), vec![zk]))
        });
        sim.client("c0", move |client| async move {
            let (first, doomed_client) = doomed.handed().await?;
            let (id, first_node) = within("the first leads", WAIT, led.recv())
                .await?
                .ok_or("no leader")?;
            assert_eq!(id, "first");

            let zk = client.connect().await?;
            let second = selector(&zk, "second", DELAY, false)?;
            second.start().await?;
            expire_behind(&client, &doomed_client, "doomed").await?;
            let (id, _) = within(
                "the next participant leads once the delay ran out",
                WAIT + DELAY,
                led.recv(),
            )
            .await?
            .ok_or("no leader")?;
            assert_eq!(id, "second");
            let (after, led_at) = delay_record(&zk, path).await?;
            let since = failure_since(&after, &first_node);
            assert!(
                led_at >= since + 2_000,
                "led {} ms after the failure was seen",
                led_at - since
            );

            // Leaderships that end by returning hand over at once.
            let third = selector(&zk, "third", NEVER, false)?;
            let fourth = selector(&zk, "fourth", NEVER, false)?;
            third.start().await?;
            fourth.start().await?;
            let mut ids = Vec::new();
            for _ in 0..2 {
                let (id, _) = within("an ended leadership hands over at once", WAIT, led.recv())
                    .await?
                    .ok_or("no leader")?;
                ids.push(id);
            }
            ids.sort();
            assert_eq!(ids, ["fourth", "third"]);
            for s in [&second, &third, &fourth] {
                s.close().await?;
            }
            client.faults().repair("doomed");
            let _ = within("the first closes", WAIT, first.close()).await;
            zk.close().await?;
            drop(doomed);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_leader_closed_while_disconnected_leaves_once_back_and_offers_nothing() {
    const PATH: &str = "/latch-close-cut";
    for seed in SEEDS {
        let mut sim = sim(seed);
        let mut cut_off = Elsewhere::host(&mut sim, "cut-off", |client| async move {
            let zk = client.connect().await?;
            let leader = started(&zk, PATH, "cut-off").await?;
            Ok(((leader, zk.clone()), vec![zk]))
        });
        sim.client("other", move |client| async move {
            let (leader, leader_client) = cut_off.handed().await?;
            within("the cut-off one leads", WAIT, leader.await_leadership()).await??;
            let zk = client.connect().await?;
            let other = started(&zk, PATH, "other").await?;
            let hold = leader.hold().ok_or("the leader's hold")?;

            client.faults().partition("cut-off");
            let closing = leader.close();
            futures::pin_mut!(closing);
            assert!(futures::poll!(closing.as_mut()).is_pending());
            assert!(hold.is_lost() && !leader.has_leadership());
            // The link breaks; the client reconnects on the same session.
            client.faults().cut("cut-off");
            client.faults().repair("cut-off");
            within("close returns once the delete went through", WAIT, closing).await??;
            within("the other leads", WAIT, other.await_leadership()).await??;
            let (children, _) = leader_client.get_children().for_path(PATH).await?;
            let other_node = other.node_path().ok_or("the other's node")?;
            assert_eq!(children, vec![paths::node_name(&other_node).to_owned()]);
            assert!(leader.await_leadership().await.is_err());
            other.close().await?;
            zk.close().await?;
            drop(cut_off);
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn the_line_moves_one_place_per_departure() {
    const PATH: &str = "/latch-line";
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let log: Log = Arc::default();
            let mut latches = Vec::new();
            let mut clients = Vec::new();
            for i in 0..4 {
                let zk = client.connect().await?;
                let latch = LeaderLatch::builder(zk.clone(), PATH, format!("p{i}"))
                    .close_mode(CloseMode::NotifyLeader)
                    .build()?;
                record(&latch, &log);
                // Started one after the other: their nodes are in this order.
                latch.start().await?;
                latches.push(latch);
                clients.push(zk);
            }
            within("p0 leads", WAIT, latches[0].await_leadership()).await??;
            for id in ["p1", "p2", "p3"] {
                until("every follower in line", WAIT, || async {
                    log.lock()
                        .iter()
                        .any(|(who, e)| who == id && *e == LatchEvent::Ready)
                })
                .await?;
            }

            // The second in line's session ends: it rejoins at the back; the leader stays.
            client
                .faults()
                .expire_session(session_of(&clients[1]).await?);
            until("p1 rejoined at the back", WAIT, || async {
                latches[0].participant_nodes().await.is_ok_and(|nodes| {
                    nodes.len() == 4 && Some(nodes[3].clone()) == latches[1].node_path()
                })
            })
            .await?;
            assert_eq!(one_leader(&latches).await?, 0);

            // Someone else deletes the leader's node: the new second (p2) leads, p0 rejoins
            // behind.
            let admin = client.connect().await?;
            let leader_node = latches[0].node_path().ok_or("p0's node")?;
            admin.delete().for_path(&leader_node).await?;
            within("p2 leads", WAIT, latches[2].await_leadership()).await??;
            until("p0 stepped down and rejoined", WAIT, || async {
                !latches[0].has_leadership()
                    && latches[0].participants().await.is_ok_and(|p| p.len() == 4)
            })
            .await?;
            assert_eq!(one_leader(&latches).await?, 2);

            // Closes: p2 → p3 → p1 → p0, each to the next in line and only to it.
            for (leaving, next) in [(2, 3), (3, 1), (1, 0)] {
                latches[leaving].close().await?;
                within("the next leads", WAIT, latches[next].await_leadership()).await??;
                let open: Vec<LeaderLatch> = latches
                    .iter()
                    .filter(|l| l.node_path().is_some())
                    .cloned()
                    .collect();
                assert_eq!(open[one_leader(&open).await?].id(), format!("p{next}"));
            }
            // p2 was second when p0's node went: it led on the watch alone, with no look
            // between (no `Determining`); p3 was third when p2 left, so it looked again first.
            let events = log.lock().clone();
            let before_leading = |id: &str| {
                let mine: Vec<LatchEvent> = events
                    .iter()
                    .filter(|(who, _)| who == id)
                    .map(|(_, e)| e.clone())
                    .collect();
                let at = mine
                    .iter()
                    .position(|e| *e == LatchEvent::IsLeader)
                    .expect("led");
                mine[at - 1].clone()
            };
            assert_eq!(before_leading("p2"), LatchEvent::Ready);
            assert_eq!(before_leading("p3"), LatchEvent::Determining);
            // Closed hand-overs never overlapped: each leader's term ended before the next
            // began.
            let mut leading: Option<String> = None;
            let mut p0_terms = 0;
            for (id, event) in events {
                match event {
                    LatchEvent::IsLeader => {
                        if id == "p0" {
                            p0_terms += 1;
                        }
                        // p0's first term ended by someone else's delete: p2 may hear first.
                        if let Some(current) = &leading {
                            assert!(
                                current == "p0" && id == "p2",
                                "{id} led while {current} did"
                            );
                        }
                        leading = Some(id);
                    }
                    LatchEvent::NotLeader if leading.as_deref() == Some(id.as_str()) => {
                        leading = None;
                    }
                    _ => {}
                }
            }
            assert_eq!(p0_terms, 2);
            latches[0].close().await?;
            admin.close().await?;
            for zk in clients {
                zk.close().await?;
            }
            Ok(())
        });
        run(&mut sim);
    }
}
