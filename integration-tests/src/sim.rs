//! The recipe mix of the soak in deterministic simulation (curator-sim): the same workloads
//! and checkers, against curator-zkmodel's server on turmoil's network, under the faults a
//! seed draws. A seed runs in a fraction of a second and replays exactly (`just sim --seed S`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use curator_counters::DistributedAtomicLong;
use curator_framework::retry::RetryNTimes;
use curator_queues::SimpleDistributedQueue;
use curator_sim::{FaultPlan, FaultRecord, Simulation};
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::checkers::{self, Delivery};
use crate::history::{Clock, CounterHistory, LogEntry, Take, Violation};
use crate::linearizability::Budget;
use crate::soak::{LogReader, child_count, wait_until};
use crate::workloads::{self, Ctx, Gate, Paths, REGISTER_INITIAL, Recorded};

/// One simulated run's settings.
///
/// ```
/// let config = integration_tests::sim::SimConfig::new(42);
/// assert_eq!(config.seed, 42);
/// ```
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The seed: the faults, the latencies, the workloads' choices.
    pub seed: u64,
    /// Clients running the mix.
    pub clients: usize,
    /// How long faults are injected (simulated time); the run then heals and drains.
    pub faults_for: Duration,
    /// Simulated time per step (see `SimulationBuilder::step`).
    pub step: Duration,
}

impl SimConfig {
    /// Three clients, four simulated seconds of faults (one every 1.5 s at most, each up to
    /// 3 s long), 2 ms steps.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            clients: 3,
            faults_for: Duration::from_secs(4),
            step: Duration::from_millis(2),
        }
    }
}

/// What one simulated run did and found.
#[derive(Debug, Clone)]
pub struct SimRun {
    /// The seed.
    pub seed: u64,
    /// Simulated time taken.
    pub elapsed: Duration,
    /// The faults injected.
    pub faults: Vec<FaultRecord>,
    /// Operation counts.
    pub operations: BTreeMap<&'static str, u64>,
    /// What the checkers found (empty: the run passed).
    pub violations: Vec<Violation>,
}

impl fmt::Display for SimRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: {:.1?} simulated, {} faults, {} violations",
            self.seed,
            self.elapsed,
            self.faults.len(),
            self.violations.len()
        )?;
        for fault in &self.faults {
            writeln!(f, "  fault {fault}")?;
        }
        for (what, n) in &self.operations {
            writeln!(f, "  {what:<36} {n:>6}")?;
        }
        for violation in &self.violations {
            writeln!(f, "  VIOLATION {violation}")?;
        }
        Ok(())
    }
}

/// What the checking client read at the end.
#[derive(Debug, Default)]
struct Final {
    mutex_log: Vec<LogEntry>,
    leader_log: Vec<LogEntry>,
    counter: Option<i64>,
    /// Items drained from the simple queue at the end: (item, take invoked, take returned).
    leftover_queue: Vec<(String, Duration, Duration)>,
    safe_queue_left: Option<usize>,
}

/// Widens the recorded invocation and completion times to whole steps of the simulation:
/// invocations down to the start of their step, completions up to the end of theirs.
///
/// Each host's clock runs ahead within a step (its Tokio time advances while it runs), and the
/// hosts run one after another: two events of one step, on two hosts, may be ordered one way by
/// their clocks and the other way in fact (a client may read a write that its writer's clock
/// says was sent a millisecond later). Only steps order events across hosts: an event of an
/// earlier step happened before every event of a later one, and events of one step are taken
/// as concurrent.
fn widen_to_steps(record: &mut Recorded, step: Duration) {
    let step_ns = step.as_nanos().max(1);
    let floor = |t: Duration| {
        let ns = t.as_nanos() / step_ns * step_ns;
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    };
    let ceil = |t: Duration| floor(t) + step - Duration::from_nanos(1);
    for op in &mut record.counter.ops {
        (op.invoked, op.completed) = (floor(op.invoked), ceil(op.completed));
    }
    for op in &mut record.register {
        (op.invoked, op.completed) = (floor(op.invoked), ceil(op.completed));
    }
    for put in record.simple_puts.iter_mut().chain(&mut record.safe_puts) {
        (put.invoked, put.completed) = (floor(put.invoked), ceil(put.completed));
    }
    for take in record.simple_takes.iter_mut().chain(&mut record.safe_takes) {
        (take.invoked, take.completed) = (floor(take.invoked), ceil(take.completed));
    }
}

/// Runs one seed of the mix.
///
/// # Errors
/// The simulation's own failure (a client body's error, or the run outlasting its simulated
/// deadline), with the seed and the faults so far.
pub fn run(config: &SimConfig) -> Result<SimRun, curator_sim::SimError> {
    let paths = Paths::new("/sim");
    let ctx = Ctx {
        clock: Clock::new(),
        stop: CancellationToken::new(),
        stop_producers: CancellationToken::new(),
        record: Arc::new(Mutex::new(Recorded {
            counter: CounterHistory::default(),
            ..Default::default()
        })),
        gate: Arc::new(Gate::default()),
        paths: Arc::new(paths.clone()),
    };
    let ready = CancellationToken::new();
    let finals = Arc::new(Mutex::new(Final::default()));
    let mut sim = Simulation::builder(config.seed)
        .faults(
            FaultPlan::all()
                .every(Duration::from_millis(1500))
                .longest(Duration::from_secs(3))
                .quiet_after(config.faults_for),
        )
        .duration(config.faults_for + Duration::from_secs(120))
        .step(config.step)
        .build();

    // How many clients' workers have stopped.
    let finished = Arc::new(tokio::sync::watch::Sender::new(0_usize));
    for index in 0..config.clients {
        let (ctx, ready, finished) = (ctx.clone(), ready.clone(), Arc::clone(&finished));
        let seed = config.seed ^ ((index as u64 + 1) << 32);
        sim.client(&format!("c{index}"), move |client| async move {
            let zk = client.connect().await?;
            ready.cancelled().await;
            let mut workers = JoinSet::new();
            workloads::spawn_mix(&mut workers, &ctx, &zk, index, seed);
            while workers.join_next().await.is_some() {}
            // Every write of this client's workers has returned.
            finished.send_modify(|n| *n += 1);
            zk.close().await?;
            Ok(())
        });
    }

    {
        let (ctx, ready, finals, paths) = (ctx.clone(), ready.clone(), Arc::clone(&finals), paths);
        let faults_for = config.faults_for;
        let clients = config.clients;
        let mut stopped = finished.subscribe();
        sim.client("checker", move |client| async move {
            let zk = client.connect().await?;
            for path in [
                &paths.mutex_log,
                &paths.leader_log,
                &paths.cache,
                &paths.simple_queue,
                &paths.safe_queue,
            ] {
                zk.create()
                    .creating_parents_if_needed()
                    // A retry after a lost reply finds the node its first try made.
                    .idempotent()
                    .for_path(path, [])
                    .await?;
            }
            zk.create().idempotent().for_path(&paths.term, b"0").await?;
            workloads::create_registers(&zk, &paths).await?;
            let counter = DistributedAtomicLong::builder(
                zk.clone(),
                &paths.counter,
                RetryNTimes::new(100, Duration::from_millis(10)),
            )
            .build()?;
            counter.initialize(0).await?;
            ctx.record.lock().counter.initial = counter.get().await?.post_value;
            ready.cancel();

            // The logs are read (and trimmed) as they grow, until the faults end.
            let mut mutex_log = LogReader::new(&paths.mutex_log);
            let mut leader_log = LogReader::new(&paths.leader_log);
            while curator_sim::elapsed().unwrap_or_default() < faults_for {
                let _ = mutex_log.collect(&zk).await;
                let _ = leader_log.collect(&zk).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            // A second of healed running, then producers stop first, so the consumers empty
            // the queues (for up to 10 s; what is left is counted below).
            tokio::time::sleep(Duration::from_secs(1)).await;
            ctx.stop_producers.cancel();
            wait_until(Duration::from_secs(10), || async {
                child_count(&zk, &paths.simple_queue).await == Some(0)
                    && child_count(&zk, &paths.safe_queue).await == Some(0)
            })
            .await;
            ctx.stop.cancel();
            // The logs are read for good once every worker's last write has returned.
            stopped.wait_for(|n| *n >= clients).await?;
            let leftovers =
                SimpleDistributedQueue::builder(zk.clone(), &paths.simple_queue).build()?;
            let mut left = Vec::new();
            loop {
                let invoked = ctx.clock.now();
                let Some(item) = leftovers.poll().await? else {
                    break;
                };
                let item = String::from_utf8_lossy(&item).into_owned();
                left.push((item, invoked, ctx.clock.now()));
            }
            mutex_log.collect(&zk).await?;
            leader_log.collect(&zk).await?;
            zk.sync().for_path(&paths.counter).await?;
            let value = counter.get().await?.post_value;
            // What the consumers left in the lock-safe queue (an item whose consumer stopped
            // mid-way stays locked until its session ends) is taken here, as the soak does;
            // an item no consumer can take, ever, is a violation.
            if child_count(&zk, &paths.safe_queue).await != Some(0) {
                let drain = workloads::safe_consumer(&ctx, zk.clone(), "drain".into()).await;
                wait_until(Duration::from_secs(30), || async {
                    child_count(&zk, &paths.safe_queue).await == Some(0)
                })
                .await;
                if let Some(drain) = drain {
                    let _ = drain.close().await;
                }
            }
            let safe_left = child_count(&zk, &paths.safe_queue).await;
            {
                let mut finals = finals.lock();
                finals.mutex_log = mutex_log.entries.clone();
                finals.leader_log = leader_log.entries.clone();
                finals.counter = Some(value);
                finals.leftover_queue = left;
                finals.safe_queue_left = safe_left;
            }
            zk.close().await?;
            Ok(())
        });
    }

    let report = sim.run()?;
    let finals = std::mem::take(&mut *finals.lock());
    let mut violations = Vec::new();
    let mut record = ctx.record.lock();
    for (item, invoked, completed) in finals.leftover_queue {
        record.simple_takes.push(Take {
            item,
            by: "drain".into(),
            across_fault: false,
            invoked,
            completed,
        });
    }
    record.counter.final_value = finals.counter;
    widen_to_steps(&mut record, config.step);
    violations.extend(checkers::check_mutex(&record.mutex, &finals.mutex_log));
    violations.extend(checkers::check_leader(&record.leader, &finals.leader_log));
    violations.extend(checkers::check_counter(&record.counter));
    violations.extend(checkers::check_counter_linearizable(&record.counter.ops));
    let budget = Budget::default();
    let (counter, counter_findings) = checkers::check_counter_generic(&record.counter, budget);
    violations.extend(counter);
    let (register, register_findings) =
        checkers::check_register(&record.register, REGISTER_INITIAL, budget);
    violations.extend(register);
    let (simple, _) = checkers::check_queue(
        "simple queue",
        &record.simple_puts,
        &record.simple_takes,
        Delivery::Strict,
    );
    violations.extend(simple);
    violations.extend(checkers::check_queue_order(
        "simple queue",
        &record.simple_puts,
        &record.simple_takes,
    ));
    // The lock-safe queue may skip an item locked by a consumer that died mid-way (until its
    // session ends): counted, not a violation.
    let safe_skipped = checkers::queue_reorderings(&record.safe_puts, &record.safe_takes).len();
    if finals.safe_queue_left == Some(0) {
        let (safe, _) = checkers::check_queue(
            "lock-safe queue",
            &record.safe_puts,
            &record.safe_takes,
            Delivery::AtLeastOnce,
        );
        violations.extend(safe);
    } else {
        violations.push(Violation::new(
            "lock-safe queue",
            format!(
                "{:?} items left that no consumer took after the faults ended",
                finals.safe_queue_left
            ),
        ));
    }
    let mut operations = BTreeMap::new();
    operations.insert("mutex holds", record.mutex.len() as u64);
    operations.insert("mutex log entries", finals.mutex_log.len() as u64);
    operations.insert("leader terms", record.leader.len() as u64);
    operations.insert("counter increments applied", record.counter.succeeded);
    operations.insert("simple queue puts", record.simple_puts.len() as u64);
    operations.insert("lock-safe queue puts", record.safe_puts.len() as u64);
    operations.insert("register operations", record.register.len() as u64);
    // Counts that are often zero are shown only when they are not.
    let mut unless_zero = |what, n: usize| {
        if n > 0 {
            operations.insert(what, n as u64);
        }
    };
    unless_zero(
        "register operations of unknown outcome",
        register_findings.unknown,
    );
    unless_zero("lock-safe queue items skipped (allowed)", safe_skipped);
    unless_zero(
        "linearizability checks undecided",
        register_findings.undecided.len() + counter_findings.undecided.len(),
    );
    Ok(SimRun {
        seed: config.seed,
        elapsed: report.elapsed,
        faults: report.faults,
        operations,
        violations,
    })
}
