//! Scale curves: curator-rs, Apache Curator (Java) and Kazoo (Python) as N grows, on one
//! ZooKeeper server, one family of curves per recipe.
//!
//! ```text
//! cargo build --release -p curator-benches --bins
//! target/release/bench-scale [--quick] [--only election,mutex,locks,caches,queues] [--max-n N]
//!                            [--libs rs,rsb,curator,kazoo] [--rounds R] [--budget-secs S]
//!                            [--write-docs]
//! target/release/bench-scale --redraw target/bench/scale.json [--write-docs]
//! target/release/bench-scale --help
//! ```
//!
//! Families (the driver scenarios are `scale_<family>_<n>` in `bench-driver.rs`,
//! `CuratorDriver.java` and `kazoo_driver.py`):
//! - **election**: N participants of one leader election, each on its own session; the leader
//!   leaves K times. Hand-over latency, and the watches the server triggers per hand-over: the
//!   increase of `mntr`'s `zk_sum_node_{created,deleted,changed,children}_watch_count` across the
//!   K hand-overs, divided by K. Each is one notification the server sends, so a herd-free
//!   election reads 1, flat in N; a herd reads N - 1.
//! - **mutex**: N sessions contend for one lock; hand-overs per second over the contended window.
//! - **locks**: one process acquires N independent locks one after another and holds them all:
//!   acquisitions per second, and memory per held lock.
//! - **caches**: a cache loads a tree of N nodes (directories of 1,000 leaves with 32-byte
//!   values), and one directory of 100,000 children (10,000 in quick mode): load time and memory
//!   per node, each load in a fresh driver process.
//! - **queues**: put and take throughput at a backlog of B items (K puts, then K takes). The
//!   backlog is created by this harness with pipelined creates in each library's own layout;
//!   "curator-rs (bucketed)" fills its own (buckets of 10,000 items; `scale_queue` in `bench-driver.rs`).
//!
//! Each point has a time budget: a driver that does not answer in time is killed and the point
//! reads "failed: timeout after S s"; a driver's error (out of memory, a packet too large, ...)
//! reads "failed: &lt;its message&gt;". Either way the run goes on, and that driver skips the larger
//! points of the family. Results: `target/bench/scale.json`, one PNG per family and a markdown
//! report in `target/bench/`, the drivers' stderr in `target/bench/logs/`. With `--write-docs`
//! the PNGs go to `docs/` and the report between `<!-- bench-scale:begin -->` and
//! `<!-- bench-scale:end -->` in `docs/benchmarks.md` instead.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use curator_benches::harness::{
    CHART_FONTS, Driver, Failure, Progress, Sample, driver_log_dir, java_driver_command, machine,
    percentile, server_or_env, server_version, today, workspace_root,
};
use curator_framework::{CreateMode, CuratorFramework};
use curator_test::{JvmOptions, TestingServer, unique_root};
use serde_json::json;

/// A family of curves: one chart, one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Family {
    /// leader election with N participants
    Election,
    /// one mutex, N contending sessions
    Mutex,
    /// N locks held by one process
    Locks,
    /// a cache of N nodes
    Caches,
    /// a queue at a backlog of N items
    Queues,
}

const FAMILIES: [Family; 5] = [
    Family::Election,
    Family::Mutex,
    Family::Locks,
    Family::Caches,
    Family::Queues,
];

impl Family {
    fn key(self) -> &'static str {
        match self {
            Family::Election => "election",
            Family::Mutex => "mutex",
            Family::Locks => "locks",
            Family::Caches => "caches",
            Family::Queues => "queues",
        }
    }

    fn parse(key: &str) -> Option<Family> {
        FAMILIES.into_iter().find(|f| f.key() == key)
    }

    /// The chart's title.
    fn title(self) -> &'static str {
        match self {
            Family::Election => "Leader election with N participants, each on its own session",
            Family::Mutex => "One mutex, N contending sessions",
            Family::Locks => "N independent locks acquired and held by one process",
            Family::Caches => "A cache of N nodes: initial load and memory",
            Family::Queues => "A queue at a backlog of N items: put and take throughput",
        }
    }

    /// What N counts, for the x axis.
    fn n_label(self) -> &'static str {
        match self {
            Family::Election => "participants N (log scale)",
            Family::Mutex => "contending sessions N (log scale)",
            Family::Locks => "locks held N (log scale)",
            Family::Caches => "nodes N (log scale)",
            Family::Queues => "backlog N items (log scale)",
        }
    }

    /// The panels of its chart, side by side.
    fn panels(self) -> &'static [Panel] {
        match self {
            Family::Election => &[
                Panel {
                    metric: "handover_p50_ms",
                    title: "Hand-over latency, median (ms, log scale)",
                    log_y: true,
                },
                Panel {
                    metric: "watches_per_handover",
                    title: "Watches the server triggers per hand-over (log scale)",
                    log_y: true,
                },
            ],
            Family::Mutex => &[Panel {
                metric: "handovers_per_s",
                title: "Hand-overs per second",
                log_y: false,
            }],
            Family::Locks => &[
                Panel {
                    metric: "acquisitions_per_s",
                    title: "Acquisitions per second (one after another)",
                    log_y: false,
                },
                Panel {
                    metric: "bytes_per_lock",
                    title: "Memory per held lock (bytes, log scale)",
                    log_y: true,
                },
            ],
            Family::Caches => &[
                Panel {
                    metric: "load_s",
                    title: "Initial load (seconds, log scale)",
                    log_y: true,
                },
                Panel {
                    metric: "bytes_per_node",
                    title: "Memory per cached node (bytes, log scale)",
                    log_y: true,
                },
            ],
            Family::Queues => &[
                Panel {
                    metric: "puts_per_s",
                    title: "Puts per second (log scale)",
                    log_y: true,
                },
                Panel {
                    metric: "takes_per_s",
                    title: "Takes per second (log scale)",
                    log_y: true,
                },
            ],
        }
    }

    /// The table's columns: metric key and heading.
    fn columns(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Family::Election => &[
                ("handover_p50_ms", "hand-over p50 ms"),
                ("handover_p99_ms", "p99 ms"),
                ("watches_per_handover", "watches triggered / hand-over"),
                (
                    "watches_set_per_waiter",
                    "watches set / waiting participant",
                ),
            ],
            Family::Mutex => &[
                ("handovers_per_s", "hand-overs/s"),
                ("wait_p50_ms", "acquire wait p50 ms"),
                ("wait_p99_ms", "p99 ms"),
            ],
            Family::Locks => &[
                ("acquisitions_per_s", "acquisitions/s"),
                ("acquire_p50_ms", "acquire p50 ms"),
                ("bytes_per_lock", "bytes / held lock"),
            ],
            Family::Caches => &[
                ("load_s", "load s"),
                ("nodes_per_s", "nodes/s"),
                ("bytes_per_node", "bytes / node"),
            ],
            Family::Queues => &[
                ("puts_per_s", "puts/s"),
                ("takes_per_s", "takes/s"),
                ("take_p50_ms", "take p50 ms"),
            ],
        }
    }
}

/// One panel of a family's chart: a metric against N.
struct Panel {
    metric: &'static str,
    title: &'static str,
    log_y: bool,
}

/// A reference curve of a panel (y as a function of N) and its label.
type Reference = (fn(f64) -> f64, &'static str);

impl Panel {
    /// A dashed reference curve and its label: what a herd would trigger (N − 1 notifications
    /// per hand-over, one per waiting session).
    fn reference(&self) -> Option<Reference> {
        (self.metric == "watches_per_handover")
            .then_some((|n: f64| n - 1.0, "a herd: N − 1 (every waiting session)"))
    }
}

/// The libraries measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Lib {
    /// curator-rs
    #[value(name = "rs")]
    Rust,
    /// curator-rs's bucketed queue layout (queues only)
    #[value(name = "rsb")]
    RustBucketed,
    /// Apache Curator (Java)
    Curator,
    /// Kazoo (Python)
    Kazoo,
}

impl Lib {
    fn name(self) -> &'static str {
        match self {
            Lib::Rust => "curator-rs",
            Lib::RustBucketed => "curator-rs (bucketed)",
            Lib::Curator => "Curator (Java)",
            Lib::Kazoo => "Kazoo (Python)",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Lib::Rust => "rs",
            Lib::RustBucketed => "rsb",
            Lib::Curator => "curator",
            Lib::Kazoo => "kazoo",
        }
    }

    /// The libraries of a family.
    fn of(family: Family) -> &'static [Lib] {
        match family {
            Family::Queues => &[Lib::Rust, Lib::RustBucketed, Lib::Curator, Lib::Kazoo],
            _ => &[Lib::Rust, Lib::Curator, Lib::Kazoo],
        }
    }

    /// The node-name prefix of a queue item in this library's flat layout, which the harness
    /// uses to create a backlog; `None` when the driver fills its own.
    fn queue_prefix(self) -> Option<&'static str> {
        match self {
            Lib::Rust | Lib::Curator => Some("qn-"),
            // Kazoo's `Queue.put` with the default priority 100.
            Lib::Kazoo => Some("entry-100-"),
            Lib::RustBucketed => None,
        }
    }
}

/// One measured point of a curve.
#[derive(Clone, Debug)]
struct Point {
    family: Family,
    /// The library's name, with " (one directory)" for the caches' flat directory.
    series: String,
    n: usize,
    /// "ok", `"failed: <reason>"`, "skipped: ..." or "unsupported".
    status: String,
    metrics: BTreeMap<String, f64>,
}

impl Point {
    fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// What a run does.
struct Settings {
    quick: bool,
    /// The libraries to run (`--libs rs,rsb,curator,kazoo`; all by default).
    libs: Vec<Lib>,
    families: Vec<Family>,
    max_n: usize,
    rounds: Option<usize>,
    budget: Duration,
    java_heap: String,
    server_heap: String,
}

impl Settings {
    /// The libraries of a family this run measures.
    fn libs(&self, family: Family) -> Vec<Lib> {
        Lib::of(family)
            .iter()
            .copied()
            .filter(|lib| self.libs.contains(lib))
            .collect()
    }

    fn ns(&self, family: Family) -> Vec<usize> {
        let ns: &[usize] = match (family, self.quick) {
            (Family::Election, true) => &[10, 100],
            (Family::Election, false) => &[10, 100, 1000],
            (Family::Mutex, true) => &[2, 8, 32],
            (Family::Mutex, false) => &[2, 4, 8, 16, 32, 64],
            (Family::Locks, true) => &[1, 100, 1000],
            (Family::Locks, false) => &[1, 100, 1000, 10_000],
            (Family::Caches, true) => &[1000, 10_000],
            (Family::Caches, false) => &[10_000, 100_000, 1_000_000],
            (Family::Queues, true) => &[1000, 10_000],
            (Family::Queues, false) => &[1000, 10_000, 100_000, 1_000_000],
        };
        ns.iter().copied().filter(|&n| n <= self.max_n).collect()
    }

    /// The size of the caches' one flat directory (Curator's limit is near 100,000 children).
    fn flat_n(&self) -> Option<usize> {
        let n = if self.quick { 10_000 } else { 100_000 };
        (n <= self.max_n).then_some(n)
    }

    fn rounds(&self, family: Family) -> usize {
        match family {
            // A fresh process per load; the queue's backlog changes with every round.
            Family::Caches | Family::Queues => 1,
            _ => self.rounds.unwrap_or(if self.quick { 1 } else { 3 }),
        }
    }

    /// The request's op count at `n`.
    fn ops(&self, family: Family, n: usize) -> usize {
        match family {
            Family::Election => self.handovers(n) + 2,
            Family::Mutex => {
                if self.quick {
                    101
                } else {
                    401
                }
            }
            Family::Locks => n + 1,
            Family::Caches => 2,
            Family::Queues => 2 * self.queue_k(),
        }
    }

    fn handovers(&self, n: usize) -> usize {
        (if self.quick { 10 } else { 30 }).min(n - 1)
    }

    fn queue_k(&self) -> usize {
        if self.quick { 100 } else { 500 }
    }
}

/// The metrics of one sample (see each scenario's slot layout in `bench-driver.rs`).
fn metrics(family: Family, n: usize, samples: &[Sample]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let sorted = |range: &dyn Fn(&Sample) -> &[u64]| {
        let mut all: Vec<u64> = samples.iter().flat_map(|s| range(s).to_vec()).collect();
        all.sort_unstable();
        all
    };
    let slot = |s: &Sample, i: usize| s.latencies_ns.get(i).copied().unwrap_or(0) as f64;
    let sum = |values: &[u64]| values.iter().map(|&v| v as f64).sum::<f64>();
    match family {
        Family::Election => {
            let k = samples
                .first()
                .map_or(0, |s| s.latencies_ns.len().saturating_sub(2));
            let latencies = sorted(&|s| &s.latencies_ns[..k]);
            out.insert("handover_p50_ms".into(), percentile(&latencies, 0.5) / 1e3);
            out.insert("handover_p99_ms".into(), percentile(&latencies, 0.99) / 1e3);
            out.insert(
                "watches_per_handover".into(),
                median(samples.iter().map(|s| slot(s, k) / k as f64).collect()),
            );
            out.insert(
                "watches_set_per_waiter".into(),
                median(
                    samples
                        .iter()
                        .map(|s| slot(s, k + 1) / (n - 1).max(1) as f64)
                        .collect(),
                ),
            );
        }
        Family::Mutex => {
            let h = samples
                .first()
                .map_or(0, |s| s.latencies_ns.len().saturating_sub(1));
            out.insert(
                "handovers_per_s".into(),
                median(
                    samples
                        .iter()
                        .map(|s| h as f64 / (slot(s, h) / 1e9))
                        .collect(),
                ),
            );
            let waits = sorted(&|s| &s.latencies_ns[..h]);
            out.insert("wait_p50_ms".into(), percentile(&waits, 0.5) / 1e3);
            out.insert("wait_p99_ms".into(), percentile(&waits, 0.99) / 1e3);
        }
        Family::Locks => {
            out.insert(
                "acquisitions_per_s".into(),
                median(
                    samples
                        .iter()
                        .map(|s| n as f64 / (sum(&s.latencies_ns[..n]) / 1e9))
                        .collect(),
                ),
            );
            let acquires = sorted(&|s| &s.latencies_ns[..n]);
            out.insert("acquire_p50_ms".into(), percentile(&acquires, 0.5) / 1e3);
            out.insert(
                "bytes_per_lock".into(),
                median(samples.iter().map(|s| slot(s, n)).collect()),
            );
        }
        Family::Caches => {
            let load = median(samples.iter().map(|s| slot(s, 0) / 1e9).collect());
            out.insert("load_s".into(), load);
            out.insert("nodes_per_s".into(), n as f64 / load);
            out.insert(
                "bytes_per_node".into(),
                median(samples.iter().map(|s| slot(s, 1)).collect()),
            );
        }
        Family::Queues => {
            let k = samples.first().map_or(0, |s| s.latencies_ns.len() / 2);
            out.insert(
                "puts_per_s".into(),
                median(
                    samples
                        .iter()
                        .map(|s| k as f64 / (sum(&s.latencies_ns[..k]) / 1e9))
                        .collect(),
                ),
            );
            out.insert(
                "takes_per_s".into(),
                median(
                    samples
                        .iter()
                        .map(|s| k as f64 / (sum(&s.latencies_ns[k..2 * k]) / 1e9))
                        .collect(),
                ),
            );
            let takes = sorted(&|s| &s.latencies_ns[k..2 * k]);
            out.insert("take_p50_ms".into(), percentile(&takes, 0.5) / 1e3);
        }
    }
    out
}

/// Creates `paths` (parents first, one level at a time), `IN_FLIGHT` requests at a time.
const IN_FLIGHT: usize = 1000;

async fn create_all(
    client: &CuratorFramework,
    paths: &[String],
    data: &[u8],
) -> Result<(), String> {
    for batch in paths.chunks(IN_FLIGHT) {
        let creates: Vec<_> = batch
            .iter()
            .map(|path| client.create().for_path(path, data).into_future())
            .collect();
        for result in futures::future::join_all(creates).await {
            match result {
                Ok(_) | Err(curator_framework::Error::NodeExists) => {}
                Err(e) => return Err(format!("creating the tree: {e}")),
            }
        }
    }
    Ok(())
}

/// Deletes `paths` (children before parents), `IN_FLIGHT` at a time; missing nodes are fine.
async fn delete_all(client: &CuratorFramework, paths: &[String]) {
    for batch in paths.chunks(IN_FLIGHT) {
        let deletes: Vec<_> = batch
            .iter()
            .map(|path| client.delete().for_path(path).into_future())
            .collect();
        futures::future::join_all(deletes).await;
    }
}

/// A tree of `n` nodes under `root` (the root not counted): directories `d0000...` of up to
/// 1,000 nodes each (the directory and its leaves `n000...`), 32-byte values; or, `flat`, `n`
/// leaves directly under `root`. Returns every path, parents first.
fn tree_paths(root: &str, n: usize, flat: bool) -> Vec<String> {
    if flat {
        return (0..n).map(|i| format!("{root}/n{i:06}")).collect();
    }
    let dirs = n.div_ceil(1000).max(1);
    let per_dir = n / dirs;
    let mut paths: Vec<String> = (0..dirs).map(|d| format!("{root}/d{d:04}")).collect();
    for d in 0..dirs {
        let leaves = if d + 1 == dirs {
            n - per_dir * (dirs - 1) - 1
        } else {
            per_dir - 1
        };
        paths.extend((0..leaves).map(|l| format!("{root}/d{d:04}/n{l:03}")));
    }
    paths
}

/// Puts `backlog` items under `path` named `prefix<sequence>`, as the library itself would.
async fn fill_queue(
    client: &CuratorFramework,
    path: &str,
    prefix: &str,
    backlog: usize,
) -> Result<(), String> {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"")
        .await
        .map_err(|e| format!("creating {path}: {e}"))?;
    let item = format!("{path}/{prefix}");
    let mut left = backlog;
    while left > 0 {
        let batch = left.min(IN_FLIGHT);
        let creates: Vec<_> = (0..batch)
            .map(|_| {
                client
                    .create()
                    .with_mode(CreateMode::PersistentSequential)
                    .for_path(&item, b"x")
                    .into_future()
            })
            .collect();
        for result in futures::future::join_all(creates).await {
            result.map_err(|e| format!("filling the queue: {e}"))?;
        }
        left -= batch;
    }
    Ok(())
}

/// Removes a queue filled by [`fill_queue`] and used by a driver: every sequence the backlog
/// and the driver's puts can have used, then the queue node.
async fn drop_queue(client: &CuratorFramework, path: &str, prefix: &str, sequences: usize) {
    let items: Vec<String> = (0..sequences)
        .map(|seq| format!("{path}/{prefix}{seq:010}"))
        .collect();
    delete_all(client, &items).await;
    let _ = client
        .delete()
        .deleting_children_if_needed()
        .for_path(path)
        .await;
}

/// Everything a run needs while it goes.
struct Run<'a> {
    settings: &'a Settings,
    runtime: &'a tokio::runtime::Runtime,
    setup: CuratorFramework,
    connect: String,
    root: String,
    workspace: PathBuf,
    progress: Progress,
    points: Vec<Point>,
}

impl Run<'_> {
    fn start_driver(&self, lib: Lib) -> Result<Driver, String> {
        match lib {
            Lib::Rust | Lib::RustBucketed => {
                let exe_dir = std::env::current_exe()
                    .map_err(|e| e.to_string())?
                    .parent()
                    .map(Path::to_owned)
                    .unwrap_or_default();
                let mut command = Command::new(exe_dir.join("bench-driver"));
                command.arg("framework").arg(&self.connect);
                Driver::start(lib.name(), command)
            }
            Lib::Curator => Driver::start(
                lib.name(),
                java_driver_command(
                    &self.workspace,
                    &JvmOptions::new(),
                    &self.settings.java_heap,
                    &self.connect,
                )?,
            ),
            Lib::Kazoo => {
                let mut command = Command::new("/usr/bin/python3");
                command
                    .arg(self.workspace.join("benches/drivers/kazoo_driver.py"))
                    .arg(&self.connect);
                Driver::start(lib.name(), command)
            }
        }
    }

    fn scenario(family: Family, lib: Lib, n: usize) -> String {
        match (family, lib) {
            (Family::Queues, Lib::RustBucketed) => format!("scale_queue_bucketed_{n}"),
            (Family::Queues, _) => format!("scale_queue_{n}"),
            (Family::Election, _) => format!("scale_election_{n}"),
            (Family::Mutex, _) => format!("scale_mutex_{n}"),
            (Family::Locks, _) => format!("scale_locks_{n}"),
            (Family::Caches, _) => format!("scale_cache_{n}"),
        }
    }

    /// Runs `rounds` requests of one point on `driver` (started if needed), round `r` at
    /// `<path>-<r>` (caches: at `path` itself, which they only read); `None` in `driver`
    /// afterwards when it must be restarted.
    fn measure(
        &mut self,
        driver: &mut Option<Driver>,
        lib: Lib,
        scenario: &str,
        ops: usize,
        path: &str,
        rounds: usize,
    ) -> Result<Vec<Sample>, String> {
        let mut samples = Vec::new();
        for round in 0..rounds {
            if driver.as_mut().is_none_or(|d| !d.is_alive()) {
                *driver = Some(self.start_driver(lib).map_err(|e| format!("failed: {e}"))?);
            }
            let Some(d) = driver.as_mut() else {
                return Err("failed: no driver".into());
            };
            let path = if family_reads_only(scenario) {
                path.to_owned()
            } else {
                format!("{path}-{round}")
            };
            match d.run_within(scenario, ops, &path, Some(self.settings.budget)) {
                Ok(sample) => samples.push(sample),
                Err(Failure::Unsupported) => return Err("unsupported".into()),
                Err(failure) => {
                    *driver = None;
                    return Err(format!("failed: {}", short(&failure.to_string())));
                }
            }
        }
        Ok(samples)
    }

    fn record(
        &mut self,
        family: Family,
        series: &str,
        n: usize,
        result: Result<Vec<Sample>, String>,
    ) {
        let (status, metrics) = match result {
            Ok(samples) => ("ok".to_owned(), metrics(family, n, &samples)),
            Err(status) => (status, BTreeMap::new()),
        };
        self.points.push(Point {
            family,
            series: series.to_owned(),
            n,
            status,
            metrics,
        });
    }

    fn skip(&mut self, family: Family, series: &str, n: usize, why: &str) {
        self.points.push(Point {
            family,
            series: series.to_owned(),
            n,
            status: why.to_owned(),
            metrics: BTreeMap::new(),
        });
    }

    /// Election, mutex and locks: one driver process per library for the family, a discarded
    /// warm-up at the smallest N, then each N until the library fails.
    fn simple_family(&mut self, family: Family) {
        let ns = self.settings.ns(family);
        let rounds = self.settings.rounds(family);
        for lib in self.settings.libs(family) {
            let mut driver = None;
            let mut failed_at: Option<usize> = None;
            if let Some(&first) = ns.first() {
                self.progress
                    .step(&format!("{}: {} warm-up", family.key(), lib.name()));
                let path = format!("{}/{}/{}-warmup", self.root, family.key(), lib.key());
                let scenario = Self::scenario(family, lib, first);
                let ops = self.settings.ops(family, first);
                // A warm-up failure shows again at the first point.
                let _ = self.measure(&mut driver, lib, &scenario, ops, &path, 1);
                self.progress.finish_step();
            }
            for &n in &ns {
                self.progress
                    .step(&format!("{}: {} N={n}", family.key(), lib.name()));
                if let Some(at) = failed_at {
                    self.skip(family, lib.name(), n, &format!("skipped: failed at N={at}"));
                } else {
                    let path = format!("{}/{}/{}-{n}", self.root, family.key(), lib.key());
                    let scenario = Self::scenario(family, lib, n);
                    let ops = self.settings.ops(family, n);
                    let result = self.measure(&mut driver, lib, &scenario, ops, &path, rounds);
                    if result.as_ref().is_err_and(|e| e.starts_with("failed")) {
                        failed_at = Some(n);
                    }
                    self.record(family, lib.name(), n, result);
                }
                self.progress.finish_step();
            }
        }
    }

    /// Caches: each tree is built once for every library, each load in a fresh process.
    fn caches(&mut self) {
        let family = Family::Caches;
        let mut shapes: Vec<(usize, bool)> = self
            .settings
            .ns(family)
            .into_iter()
            .map(|n| (n, false))
            .collect();
        if let Some(flat) = self.settings.flat_n() {
            shapes.push((flat, true));
        }
        let mut failed: BTreeMap<&'static str, usize> = BTreeMap::new();
        for (n, flat) in shapes {
            let tree = format!(
                "{}/caches/{}-{n}",
                self.root,
                if flat { "flat" } else { "tree" }
            );
            self.progress.step(&format!(
                "caches: creating {} of {n} nodes",
                if flat { "one directory" } else { "a tree" }
            ));
            let paths = tree_paths(&tree, n, flat);
            let built = self.runtime.block_on(async {
                self.setup
                    .create()
                    .creating_parents_if_needed()
                    .for_path(&tree, b"")
                    .await
                    .map_err(|e| e.to_string())?;
                create_all(&self.setup, &paths, &[7u8; 32]).await
            });
            for lib in self.settings.libs(family) {
                let series = if flat {
                    format!("{} (one directory)", lib.name())
                } else {
                    lib.name().to_owned()
                };
                self.progress.step(&format!("caches: {series} N={n}"));
                if let Err(e) = &built {
                    self.skip(
                        family,
                        &series,
                        n,
                        &format!("failed: the harness: {}", short(e)),
                    );
                } else if let (false, Some(at)) = (flat, failed.get(lib.name())) {
                    let why = format!("skipped: failed at N={at}");
                    self.skip(family, &series, n, &why);
                } else {
                    let mut driver = None;
                    let result = self.measure(
                        &mut driver,
                        lib,
                        &Self::scenario(family, lib, n),
                        2,
                        &tree,
                        1,
                    );
                    if !flat && result.as_ref().is_err_and(|e| e.starts_with("failed")) {
                        failed.insert(lib.name(), n);
                    }
                    self.record(family, &series, n, result);
                }
                self.progress.finish_step();
            }
            self.runtime.block_on(async {
                let mut reversed = paths;
                reversed.reverse();
                delete_all(&self.setup, &reversed).await;
                let _ = self.setup.delete().for_path(&tree).await;
            });
        }
    }

    /// Queues: for each library and backlog, the harness fills the backlog (untimed), the
    /// driver puts and takes, the harness removes what is left.
    fn queues(&mut self) {
        let family = Family::Queues;
        let ns = self.settings.ns(family);
        let k = self.settings.queue_k();
        for lib in self.settings.libs(family) {
            let mut failed_at: Option<usize> = None;
            let mut driver = None;
            for &n in &ns {
                self.progress
                    .step(&format!("queues: {} backlog {n}", lib.name()));
                if let Some(at) = failed_at {
                    self.skip(family, lib.name(), n, &format!("skipped: failed at N={at}"));
                    self.progress.finish_step();
                    continue;
                }
                let path = format!("{}/queues/{}-{n}", self.root, lib.key());
                // The driver adds "-0" (round 0).
                let queue = format!("{path}-0");
                let filled = match lib.queue_prefix() {
                    Some(prefix) => {
                        self.runtime
                            .block_on(fill_queue(&self.setup, &queue, prefix, n))
                    }
                    None => Ok(()),
                };
                let result = match filled {
                    Ok(()) => self.measure(
                        &mut driver,
                        lib,
                        &Self::scenario(family, lib, n),
                        2 * k,
                        &path,
                        1,
                    ),
                    Err(e) => Err(format!("failed: the harness: {}", short(&e))),
                };
                if result.as_ref().is_err_and(|e| e.starts_with("failed")) {
                    failed_at = Some(n);
                }
                let unsupported = result.as_ref().is_err_and(|e| e == "unsupported");
                self.record(family, lib.name(), n, result);
                self.progress.finish_step();
                self.runtime.block_on(drop_queue(
                    &self.setup,
                    &queue,
                    lib.queue_prefix().unwrap_or("qn-"),
                    n + 2 * k,
                ));
                if unsupported {
                    // The same answer at every backlog.
                    for &rest in ns.iter().filter(|&&m| m > n) {
                        self.skip(family, lib.name(), rest, "unsupported");
                        self.progress.finish_step();
                    }
                    break;
                }
            }
        }
    }
}

/// Whether a scenario only reads its path (the caches' trees), so every round uses it as is.
fn family_reads_only(scenario: &str) -> bool {
    scenario.starts_with("scale_cache_")
}

/// A failure message cut to one short line for tables and charts.
fn short(message: &str) -> String {
    let line = message.lines().next().unwrap_or("").trim();
    if line.chars().count() > 90 {
        format!("{}…", line.chars().take(89).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// Scale curves: curator-rs, Apache Curator (Java) and Kazoo (Python) as N grows, on one
/// ZooKeeper server, one chart and one table per recipe family.
///
/// Starts its own server with a large heap (6 GB; 1 GB with --quick) unless ZK_CONNECT names
/// one. Each point has a time budget; a library that fails a point skips the larger ones.
/// Writes target/bench/scale.json, the charts and a report to target/bench/, the drivers'
/// stderr to target/bench/logs/. A full run takes hours; --quick a few minutes.
#[derive(Debug, Parser)]
#[command(name = "bench-scale")]
struct Args {
    /// Small N only, shorter budgets and smaller heaps (a few minutes).
    #[arg(long)]
    quick: bool,
    /// Only these families (comma-separated) [default: all].
    #[arg(long, value_name = "FAMILY,...", value_delimiter = ',', value_enum)]
    only: Option<Vec<Family>>,
    /// Leave out the points with N above this (underscores allowed: 100_000).
    #[arg(long, value_name = "N", value_parser = count)]
    max_n: Option<usize>,
    /// Only these libraries (comma-separated) [default: all].
    #[arg(long, value_name = "LIB,...", value_delimiter = ',', value_enum)]
    libs: Option<Vec<Lib>>,
    /// Requests per point of the election, mutex and locks families [default: 3; 1 with --quick].
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u16).range(1..))]
    rounds: Option<u16>,
    /// The time budget of one point, in seconds [default: 900; 120 with --quick].
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..))]
    budget_secs: Option<u32>,
    /// Write the charts to docs/ and the report into docs/benchmarks.md (else target/bench/).
    #[arg(long, alias = "docs")]
    write_docs: bool,
    /// Accepted for older command lines: leaving docs/ alone is the default.
    #[arg(long, hide = true, conflicts_with = "write_docs")]
    no_docs: bool,
    /// Draw the charts and the report again from a run's raw results, without running anything.
    #[arg(
        long,
        value_name = "SCALE.json",
        conflicts_with_all = ["quick", "only", "max_n", "libs", "rounds", "budget_secs"]
    )]
    redraw: Option<PathBuf>,
}

/// A count of at least 1, with optional `_` separators: `100_000`.
fn count(text: &str) -> Result<usize, String> {
    match text.replace('_', "").parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn main() {
    let args = Args::parse();
    if let Err(error) = run(args) {
        eprintln!("bench-scale: {error}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    let workspace = workspace_root();
    let bench_dir = workspace.join("target/bench");
    std::fs::create_dir_all(&bench_dir).map_err(|e| e.to_string())?;
    let write_docs = args.write_docs;
    if let Some(json) = &args.redraw {
        return redraw(json, &workspace, write_docs);
    }
    let quick = args.quick;
    let settings = Settings {
        quick,
        libs: args
            .libs
            .unwrap_or_else(|| vec![Lib::Rust, Lib::RustBucketed, Lib::Curator, Lib::Kazoo]),
        families: args.only.unwrap_or_else(|| FAMILIES.to_vec()),
        max_n: args.max_n.unwrap_or(usize::MAX),
        rounds: args.rounds.map(usize::from),
        budget: Duration::from_secs(
            args.budget_secs
                .map_or(if quick { 120 } else { 900 }, u64::from),
        ),
        java_heap: if quick { "1g" } else { "4g" }.to_owned(),
        server_heap: if quick { "1g" } else { "6g" }.to_owned(),
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The default test heap (384 MB) holds a few hundred thousand nodes; a 1M-node tree plus a
    // 1M-item backlog need several GB.
    let (_server, connect) = runtime.block_on(server_or_env(
        TestingServer::builder()
            .jvm_arg(format!("-Xmx{}", settings.server_heap))
            .start(),
    ))?;
    let version = runtime.block_on(server_version(&connect));
    let version = version.split(['-', ',']).next().unwrap_or("?").to_owned();
    let setup = runtime.block_on(async {
        let client = CuratorFramework::builder()
            .connect_string(&connect)
            .build()
            .map_err(|e| e.to_string())?;
        client.start().await.map_err(|e| e.to_string())?;
        Ok::<_, String>(client)
    })?;

    let steps: usize = settings
        .families
        .iter()
        .map(|&family| {
            let libs = settings.libs(family).len();
            let ns = settings.ns(family).len();
            match family {
                Family::Caches => {
                    let shapes = ns + usize::from(settings.flat_n().is_some());
                    shapes * (libs + 1)
                }
                Family::Queues => ns * libs,
                _ => (ns + 1) * libs,
            }
        })
        .sum();
    let started = Instant::now();
    let mut run = Run {
        settings: &settings,
        runtime: &runtime,
        setup,
        connect,
        root: unique_root("bench-scale"),
        workspace: workspace.clone(),
        progress: Progress::new(steps),
        points: Vec::new(),
    };
    for &family in &settings.families {
        match family {
            Family::Caches => run.caches(),
            Family::Queues => run.queues(),
            _ => run.simple_family(family),
        }
    }
    run.progress.finish();
    let took = started.elapsed();
    let points = std::mem::take(&mut run.points);
    let _ = runtime.block_on(async {
        run.setup
            .delete()
            .deleting_children_if_needed()
            .for_path(&run.root)
            .await
    });
    drop(run);

    let header = Header {
        date: today(),
        machine: machine(),
        zookeeper: version,
        mode: if quick { "quick" } else { "full" }.to_owned(),
        took_s: took.as_secs_f64(),
        budget_s: settings.budget.as_secs(),
    };
    let json = json!({
        "date": header.date,
        "machine": header.machine,
        "zookeeper": header.zookeeper,
        "mode": header.mode,
        "took_s": header.took_s,
        "budget_s": header.budget_s,
        "points": points.iter().map(|p| json!({
            "family": p.family.key(),
            "series": p.series,
            "n": p.n,
            "status": p.status,
            "metrics": p.metrics,
        })).collect::<Vec<_>>(),
    });
    let json_path = bench_dir.join("scale.json");
    std::fs::write(&json_path, json.to_string()).map_err(|e| e.to_string())?;
    println!("raw results: {}", json_path.display());
    println!("drivers' stderr: {}", driver_log_dir().display());
    publish(&header, &points, &workspace, write_docs)
}

/// The run's description.
struct Header {
    date: String,
    machine: String,
    zookeeper: String,
    mode: String,
    took_s: f64,
    budget_s: u64,
}

/// Draws the charts and writes the report (to `docs/` when `docs`, else `target/bench/`).
fn publish(header: &Header, points: &[Point], workspace: &Path, docs: bool) -> Result<(), String> {
    let out_dir = if docs {
        workspace.join("docs")
    } else {
        workspace.join("target/bench")
    };
    let subtitle = format!(
        "Run of {}: {}; ZooKeeper {} on loopback; {} mode",
        header.date, header.machine, header.zookeeper, header.mode
    );
    let mut charts = Vec::new();
    for family in FAMILIES {
        let mine: Vec<&Point> = points.iter().filter(|p| p.family == family).collect();
        if mine.is_empty() {
            continue;
        }
        let png = out_dir.join(format!("scale-{}.png", family.key()));
        chart(&png, family, &subtitle, &mine)?;
        println!("chart: {}", png.display());
        charts.push((family, png));
    }
    let report = report(header, points, &charts);
    println!("\n{report}");
    if docs {
        let doc_path = workspace.join("docs/benchmarks.md");
        let doc = std::fs::read_to_string(&doc_path).map_err(|e| e.to_string())?;
        let (begin, end) = ("<!-- bench-scale:begin -->", "<!-- bench-scale:end -->");
        match (doc.find(begin), doc.find(end)) {
            (Some(a), Some(b)) if a < b => {
                let updated = format!("{}{begin}\n{report}\n{}", &doc[..a], &doc[b..]);
                std::fs::write(&doc_path, updated).map_err(|e| e.to_string())?;
                println!("updated {}", doc_path.display());
            }
            _ => return Err(format!("{} lacks the {begin} markers", doc_path.display())),
        }
    } else {
        let md = out_dir.join("scale.md");
        std::fs::write(&md, &report).map_err(|e| e.to_string())?;
        println!("report: {}", md.display());
    }
    Ok(())
}

/// `1000` → "1,000".
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A metric for a table: three significant figures, no exponent.
fn figure(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        grouped(value.round() as usize)
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// Where a series goes in a table: curator-rs, its bucketed queue, Curator, Kazoo; each
/// library's flat directory after its tree.
fn series_rank(series: &str) -> (bool, usize) {
    let lib = [Lib::RustBucketed, Lib::Rust, Lib::Curator, Lib::Kazoo]
        .iter()
        .position(|lib| series.starts_with(lib.name()))
        .unwrap_or(4);
    // "curator-rs (bucketed)" starts with "curator-rs": it is tried first, then ranked second.
    let rank = match lib {
        0 => 1,
        1 => 0,
        other => other,
    };
    (series.ends_with("(one directory)"), rank)
}

/// The markdown report: one table per family, the charts under each.
fn report(header: &Header, points: &[Point], charts: &[(Family, PathBuf)]) -> String {
    let mut out = format!(
        "Run of {}: {}; ZooKeeper {} on loopback; {} mode; each point's budget {} s; took {:.0} s.\n",
        header.date, header.machine, header.zookeeper, header.mode, header.budget_s, header.took_s
    );
    for family in FAMILIES {
        let mine: Vec<&Point> = points.iter().filter(|p| p.family == family).collect();
        if mine.is_empty() {
            continue;
        }
        out.push_str(&format!("\n**{}**\n\n| N | library |", family.title()));
        for (_, heading) in family.columns() {
            out.push_str(&format!(" {heading} |"));
        }
        out.push_str("\n| ---: | --- |");
        out.push_str(&" ---: |".repeat(family.columns().len()));
        out.push('\n');
        let mut sorted = mine.clone();
        sorted.sort_by_key(|p| (p.n, series_rank(&p.series)));
        for p in sorted {
            out.push_str(&format!("| {} | {} |", grouped(p.n), p.series));
            if p.ok() {
                for (metric, _) in family.columns() {
                    let value = p.metrics.get(*metric).copied().unwrap_or(f64::NAN);
                    out.push_str(&format!(" {} |", figure(value)));
                }
            } else {
                let status = p.status.replace('|', "/");
                out.push_str(&format!(" {status} |"));
                out.push_str(&" |".repeat(family.columns().len() - 1));
            }
            out.push('\n');
        }
        if let Some((_, png)) = charts.iter().find(|(f, _)| *f == family) {
            let name = png
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            out.push_str(&format!("\n![{}]({name})\n", family.title()));
        }
    }
    out
}

/// `--redraw IN.json`: the charts and report again from a run's results, running nothing.
fn redraw(json_path: &Path, workspace: &Path, docs: bool) -> Result<(), String> {
    let text =
        std::fs::read_to_string(json_path).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let field = |name: &str| json[name].as_str().unwrap_or("?").to_owned();
    let header = Header {
        date: field("date"),
        machine: field("machine"),
        zookeeper: field("zookeeper"),
        mode: field("mode"),
        took_s: json["took_s"].as_f64().unwrap_or(f64::NAN),
        budget_s: json["budget_s"].as_u64().unwrap_or(0),
    };
    let points = json["points"]
        .as_array()
        .ok_or("no \"points\"")?
        .iter()
        .map(|p| {
            Ok(Point {
                family: p["family"]
                    .as_str()
                    .and_then(Family::parse)
                    .ok_or("a point without a known \"family\"")?,
                series: p["series"].as_str().unwrap_or("?").to_owned(),
                n: p["n"].as_u64().unwrap_or(0) as usize,
                status: p["status"].as_str().unwrap_or("?").to_owned(),
                metrics: p["metrics"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, &str>>()?;
    publish(&header, &points, workspace, docs)
}

/// The colour of a series: one per library, the same in every chart (Curator red and Kazoo
/// blue as in the side-by-side chart).
fn series_color(series: &str) -> plotters::style::RGBColor {
    use plotters::style::RGBColor;
    if series.starts_with("curator-rs (bucketed)") {
        RGBColor(0x94, 0x67, 0xbd)
    } else if series.starts_with("curator-rs") {
        RGBColor(0x2c, 0xa0, 0x2c)
    } else if series.starts_with("Curator") {
        RGBColor(0xd6, 0x27, 0x28)
    } else {
        RGBColor(0x1f, 0x77, 0xb4)
    }
}

/// Draws a family's chart as a PNG at `path` in the first of [`CHART_FONTS`] the machine has.
fn chart(path: &Path, family: Family, subtitle: &str, points: &[&Point]) -> Result<(), String> {
    let mut error = String::from("no font");
    for font in CHART_FONTS {
        match chart_in(path, family, subtitle, points, font) {
            Ok(()) => return Ok(()),
            Err(e) => error = format!("{font}: {e}"),
        }
    }
    Err(error)
}

/// "10", "1k", "100k", "1M".
fn n_text(n: f64) -> String {
    if n >= 1e6 {
        format!("{}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{}k", n / 1e3)
    } else {
        format!("{n}")
    }
}

/// A y tick label.
fn y_text(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{}k", v / 1e3)
    } else {
        grouped_f(v)
    }
}

fn grouped_f(v: f64) -> String {
    if v.fract() == 0.0 {
        grouped(v as usize)
    } else {
        // Three significant digits at most: tick values such as 0.7000000000000001 read 0.7.
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
        let text = format!("{v:.decimals$}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        text.to_owned()
    }
}

/// Ticks for a linear axis from 0 to `hi`: 1-2-5 steps, about five of them.
fn linear_ticks(hi: f64) -> (Vec<f64>, f64) {
    let raw = (hi / 5.0).max(f64::MIN_POSITIVE);
    let decade = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * decade);
    let top = (hi / step).ceil() * step;
    let ticks = (0..=((top / step).round() as usize))
        .map(|i| i as f64 * step)
        .collect();
    (ticks, top)
}

/// The chart: one panel per metric, side by side; x is N on a log axis, each library a line
/// with dots; a failed point is a cross on the panel's floor with the reason's first words.
/// Axes are drawn in log10 space by hand, so tick labels read "1k", "100k" rather than
/// exponents.
fn chart_in(
    path: &Path,
    family: Family,
    subtitle: &str,
    points: &[&Point],
    font: &str,
) -> Result<(), String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let err = |e: &dyn std::fmt::Display| e.to_string();
    let grey = RGBColor(0x60, 0x60, 0x60);
    let light = RGBColor(0xdd, 0xdd, 0xdd);
    let panels = family.panels();
    let (width, height) = (700 * panels.len().max(2) as u32, 720u32);
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;

    let title = TextStyle::from((font, 28).into_font()).color(&BLACK);
    root.draw_text(family.title(), &title, (24, 14))
        .map_err(|e| err(&e))?;
    let small = TextStyle::from((font, 17).into_font()).color(&grey);
    root.draw_text(subtitle, &small, (24, 52))
        .map_err(|e| err(&e))?;

    // The legend: one entry per series present.
    let mut series: Vec<String> = Vec::new();
    for p in points {
        if !series.contains(&p.series) {
            series.push(p.series.clone());
        }
    }
    let legend = TextStyle::from((font, 19).into_font()).color(&BLACK);
    let mut lx = 24;
    let mut legend_y = 96;
    for name in &series {
        let color = series_color(name);
        // A series without a single measured point says why.
        let text = match points.iter().find(|p| &p.series == name && !p.ok()) {
            Some(p) if !points.iter().any(|q| &q.series == name && q.ok()) => {
                let status = p.status.split(':').next().unwrap_or(&p.status);
                format!("{name}: {status}")
            }
            _ => name.clone(),
        };
        let (w, _) = root
            .estimate_text_size(&text, &legend)
            .map_err(|e| err(&e))?;
        if lx > 24 && lx + 36 + w as i32 > width as i32 - 24 {
            lx = 24;
            legend_y += 28;
        }
        let y = legend_y;
        if name.ends_with("(one directory)") {
            root.draw(&TriangleMarker::new((lx + 14, y), 8, color.filled()))
                .map_err(|e| err(&e))?;
        } else {
            root.draw(&PathElement::new(
                [(lx, y), (lx + 28, y)],
                color.stroke_width(3),
            ))
            .map_err(|e| err(&e))?;
            root.draw(&Circle::new((lx + 14, y), 5, color.filled()))
                .map_err(|e| err(&e))?;
        }
        root.draw_text(
            &text,
            &legend.pos(Pos::new(HPos::Left, VPos::Center)),
            (lx + 36, y),
        )
        .map_err(|e| err(&e))?;
        lx += 36 + w as i32 + 36;
    }
    let top = (legend_y + 34) as u32;

    let all_n: Vec<f64> = points.iter().map(|p| p.n as f64).collect();
    let n_lo = all_n.iter().copied().fold(f64::INFINITY, f64::min).max(1.0);
    let n_hi = all_n.iter().copied().fold(0.0, f64::max).max(n_lo * 2.0);
    // Room on the right for the values at the curves' ends.
    let span = n_hi.log10() - n_lo.log10();
    let (x0, x1) = (n_lo.log10() - 0.08 * span, n_hi.log10() + 0.3 * span);
    // x ticks: every N measured (they are the curve's points).
    let mut x_ticks: Vec<f64> = all_n.clone();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();

    let areas = root.margin(top, 10, 10, 10).split_evenly((1, panels.len()));
    for (panel, area) in panels.iter().zip(areas) {
        let mut values: Vec<f64> = points
            .iter()
            .filter(|p| p.ok())
            .filter_map(|p| p.metrics.get(panel.metric).copied())
            .filter(|v| v.is_finite() && (!panel.log_y || *v > 0.0))
            .collect();
        if let Some((curve, _)) = panel.reference() {
            values.extend(x_ticks.iter().map(|&n| curve(n)).filter(|v| *v > 0.0));
        }
        let (y0, y1, y_ticks): (f64, f64, Vec<f64>) = if panel.log_y {
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(0.0, f64::max);
            let (lo, hi) = if values.is_empty() {
                (1.0, 10.0)
            } else {
                (lo, hi)
            };
            // A little room below and above, so a curve never lies on the axis.
            let (a, b) = (lo.log10() - 0.15, hi.log10().max(lo.log10() + 0.5) + 0.1);
            let ticks_with = |steps: &[f64]| {
                let mut ticks = Vec::new();
                for decade in (a.floor() as i32)..=(b.ceil() as i32) {
                    for step in steps {
                        let v = step * 10f64.powi(decade);
                        if v.log10() >= a - 1e-9 && v.log10() <= b + 1e-9 {
                            ticks.push(v);
                        }
                    }
                }
                ticks
            };
            let mut ticks = ticks_with(&[1.0, 2.0, 5.0]);
            // A short range: more labels.
            if ticks.len() < 4 {
                ticks = ticks_with(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0]);
            }
            // Too many labels on a tall range: keep the powers of ten.
            if ticks.len() > 9 {
                ticks.retain(|v| (v.log10() - v.log10().round()).abs() < 1e-9);
            }
            (a, b, ticks)
        } else {
            let hi = values.iter().copied().fold(0.0, f64::max);
            let (ticks, top) = linear_ticks(hi.max(f64::MIN_POSITIVE) * 1.1);
            (0.0, top, ticks)
        };
        // A band under the curves for the failed points (a cross and a label per failure at an
        // N, stacked), so they never sit on a curve.
        let mut per_n: BTreeMap<usize, usize> = BTreeMap::new();
        for p in points.iter().filter(|p| p.status.starts_with("failed")) {
            *per_n.entry(p.n).or_insert(0) += 1;
        }
        let rows = per_n.values().copied().max().unwrap_or(0);
        let band_px = if rows == 0 {
            0.0
        } else {
            24.0 * rows as f64 + 14.0
        };
        // The plot's height in pixels, about: the chart less the header, caption and x labels.
        let plot_px = f64::from(height) - f64::from(top) - 50.0 - 64.0 - 28.0;
        let floor = y0;
        let y0 = y0 - (y1 - y0) * band_px / (plot_px - band_px);
        let to_y = |v: f64| if panel.log_y { v.log10() } else { v };
        let panel_title = TextStyle::from((font, 22).into_font()).color(&BLACK);
        let mut chart = ChartBuilder::on(&area)
            .caption(panel.title, panel_title)
            .margin(14)
            .x_label_area_size(64)
            .y_label_area_size(78)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .axis_style(BLACK.stroke_width(1))
            .draw()
            .map_err(|e| err(&e))?;
        let tick_style = TextStyle::from((font, 17).into_font()).color(&BLACK);
        if rows > 0 {
            chart
                .draw_series(DashedLineSeries::new(
                    [(x0, floor), (x1, floor)],
                    4,
                    4,
                    grey.stroke_width(1),
                ))
                .map_err(|e| err(&e))?;
        }
        for &v in &y_ticks {
            let y = to_y(v);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    [(x0, y), (x1, y)],
                    light.stroke_width(1),
                )))
                .map_err(|e| err(&e))?;
            let (px, py) = chart.backend_coord(&(x0, y));
            root.draw_text(
                &y_text(v),
                &tick_style.pos(Pos::new(HPos::Right, VPos::Center)),
                (px - 8, py),
            )
            .map_err(|e| err(&e))?;
        }
        for &n in &x_ticks {
            let x = n.log10();
            chart
                .draw_series(std::iter::once(PathElement::new(
                    [(x, y0), (x, y1)],
                    light.stroke_width(1),
                )))
                .map_err(|e| err(&e))?;
            let (px, py) = chart.backend_coord(&(x, y0));
            root.draw_text(
                &n_text(n),
                &tick_style.pos(Pos::new(HPos::Center, VPos::Top)),
                (px, py + 8),
            )
            .map_err(|e| err(&e))?;
        }
        let (cx, by) = chart.backend_coord(&((x0 + x1) / 2.0, y0));
        root.draw_text(
            family.n_label(),
            &small.pos(Pos::new(HPos::Center, VPos::Top)),
            (cx, by + 36),
        )
        .map_err(|e| err(&e))?;

        if let Some((curve, label)) = panel.reference() {
            let line: Vec<(f64, f64)> = x_ticks
                .iter()
                .filter(|&&n| curve(n) > 0.0)
                .map(|&n| (n.log10(), to_y(curve(n))))
                .collect();
            chart
                .draw_series(DashedLineSeries::new(
                    line.clone(),
                    10,
                    6,
                    grey.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
            if let Some(&(x, y)) = line.last() {
                let (px, py) = chart.backend_coord(&(x, y));
                root.draw_text(
                    label,
                    &TextStyle::from((font, 17).into_font())
                        .color(&grey)
                        .pos(Pos::new(HPos::Right, VPos::Bottom)),
                    (px - 24, py),
                )
                .map_err(|e| err(&e))?;
            }
        }

        // The curves (earlier series wider, so equal curves show as nested stripes), then the
        // failures on the floor.
        let value_style = TextStyle::from((font, 15).into_font());
        let mut failures_at: BTreeMap<usize, i32> = BTreeMap::new();
        let mut end_labels: Vec<(i32, i32, String, RGBColor)> = Vec::new();
        for (index, name) in series.iter().enumerate() {
            let color = series_color(name);
            let width = 7u32.saturating_sub(2 * index as u32).max(3);
            let flat = name.ends_with("(one directory)");
            let mut line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| &p.series == name && p.ok())
                .filter_map(|p| {
                    let v = *p.metrics.get(panel.metric)?;
                    (v.is_finite() && (!panel.log_y || v > 0.0))
                        .then(|| ((p.n as f64).log10(), to_y(v)))
                })
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            if let Some(&(x, y)) = line.last() {
                let (px, py) = chart.backend_coord(&(x, y));
                let value = if panel.log_y { 10f64.powf(y) } else { y };
                end_labels.push((px, py, figure(value), color));
            }
            if flat {
                chart
                    .draw_series(
                        line.iter()
                            .map(|&p| TriangleMarker::new(p, 9, color.filled())),
                    )
                    .map_err(|e| err(&e))?;
            } else {
                chart
                    .draw_series(LineSeries::new(line.clone(), color.stroke_width(width)))
                    .map_err(|e| err(&e))?;
                chart
                    .draw_series(
                        line.iter()
                            .map(|&p| Circle::new(p, width as i32 / 2 + 3, color.filled())),
                    )
                    .map_err(|e| err(&e))?;
            }
            for p in points
                .iter()
                .filter(|p| &p.series == name && p.status.starts_with("failed"))
            {
                let x = (p.n as f64).log10();
                let (px, py) = chart.backend_coord(&(x, y0));
                let stack = failures_at.entry(p.n).or_insert(0);
                let py = py - 16 - 24 * *stack;
                *stack += 1;
                root.draw(&Cross::new((px, py), 7, color.stroke_width(3)))
                    .map_err(|e| err(&e))?;
                let what = if p.status.contains("timeout") {
                    "timeout"
                } else {
                    "failed"
                };
                let short_name = name.split(' ').next().unwrap_or(name);
                let label = if flat {
                    format!("{short_name}, one directory: {what}")
                } else {
                    format!("{short_name}: {what}")
                };
                // Labels right of the cross, or left of it near the right edge.
                let right_half = x > (x0 + x1) / 2.0;
                let (anchor, dx) = if right_half {
                    (HPos::Right, -12)
                } else {
                    (HPos::Left, 12)
                };
                root.draw_text(
                    &label,
                    &value_style
                        .color(&color)
                        .pos(Pos::new(anchor, VPos::Center)),
                    (px + dx, py),
                )
                .map_err(|e| err(&e))?;
            }
        }
        // The value at each curve's end, pushed apart where curves end close together.
        // Pushed apart where curves end close together, the group centred where they end.
        end_labels.sort_by_key(|l| l.1);
        let mut placed: Vec<i32> = Vec::new();
        for label in &end_labels {
            let y = placed
                .last()
                .map_or(label.1, |&last| label.1.max(last + 20));
            placed.push(y);
        }
        let count = placed.len().max(1) as i32;
        let shift =
            (end_labels.iter().map(|l| l.1).sum::<i32>() - placed.iter().sum::<i32>()) / count;
        let label_style = TextStyle::from((font, 17).into_font());
        for ((px, _, text, color), y) in end_labels.into_iter().zip(placed) {
            let y = y + shift;
            // On a white box, so a curve passing behind a label (one that ends early) does not
            // blur it.
            let (w, h) = root
                .estimate_text_size(&text, &label_style)
                .map_err(|e| err(&e))?;
            let (w, h) = (w as i32, h as i32);
            root.draw(&Rectangle::new(
                [(px + 10, y - h / 2 - 2), (px + 18 + w, y + h / 2 + 2)],
                WHITE.filled(),
            ))
            .map_err(|e| err(&e))?;
            root.draw_text(
                &text,
                &label_style
                    .color(&color)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
                (px + 14, y),
            )
            .map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))
}
