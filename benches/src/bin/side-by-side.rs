//! The side-by-side benchmark: this framework, its bare session layer (curator-session), Apache
//! Curator (Java) and Kazoo (Python) doing the same work against one ZooKeeper server in one
//! run, beside two floors that speak the protocol directly (`floor-driver.rs`: a blocking
//! client with no runtime, and a minimal Tokio client shaped like ours), so every Rust row can
//! be read as a distance to both.
//!
//! ```text
//! cargo build --release -p curator-benches --bins
//! target/release/side-by-side [--quick] [--rounds N] [--only a,b_tls,..] [--no-tls] [--write-docs]
//! target/release/side-by-side --redraw-chart target/bench/side-by-side.json OUT.png
//! target/release/side-by-side --help
//! ```
//!
//! Each driver is a long-lived process speaking a line protocol (see `bench-driver.rs`), so JIT
//! and interpreter warm-up happen once; round 0 is a discarded warm-up and the order of drivers
//! rotates from round to round. The rows compared with the floors (`get_data`,
//! `pipelined_get_data`, `create_delete` and their TLS variants) run a full run's operations in
//! four times as many rounds of a quarter the size (20 of 500 `get_data` instead of 5 of 2,000):
//! their clients differ by a few percent, and a short burst of load from elsewhere on a shared
//! machine, which lands on one driver's round, moved the ratio of medians of five long rounds by
//! up to ±15% from run to run. The recipe rows keep long rounds: their drivers set up each
//! round (sessions, latches), and shorter rounds would measure that set-up more than the recipe.
//! The leader hand-over, whose p50 is compared across libraries, runs four times as many rounds
//! of its size (20 of 100 hand-overs): from one round to the next a driver's p50 moves by up to
//! a fifth, and five rounds left the ratio to Curator's a few hundredths from where the next run
//! put it.
//! A driver that does not do a scenario answers `err unsupported`
//! and shows "n/a" in that row (the floors do only `get_data`, `pipelined_get_data` and
//! `create_delete`, and speak plaintext only: they sit out the TLS rows).
//!
//! Results: a table on stdout, a PNG chart and the raw samples in `target/bench/`
//! (`side-by-side.png`, `side-by-side.json`), the drivers' stderr in `target/bench/logs/`. With
//! `--write-docs` (a full run only) the table goes into `docs/benchmarks.md` and the chart to
//! `docs/benchmarks-side-by-side.png`.
//!
//! TLS rows (`get_data (tls)`, ...; `--only get_data_tls`; `--no-tls` leaves them out): a second
//! server with a TLS client port and a test CA (`curator-test`), and a second group of driver
//! processes connected to it over TLS, verifying the server's certificate against the CA (a PEM
//! file, `--tls-ca`; Curator through ZooKeeper's TLS system properties). TLS needs ZooKeeper's
//! Netty connection factory, so a third group runs the same rows on that server's plaintext port
//! (`get_data (netty)`): the TLS cost is TLS against that, not against the default NIO server.
//! `ZK_TLS_CONNECT` and `ZK_TLS_CA` (and `ZK_TLS_PLAIN_CONNECT` for the baseline) name another
//! TLS server instead, as `ZK_CONNECT` does for the plaintext one.

use std::future::IntoFuture;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::{CommandFactory, Parser};
use curator_benches::harness::{
    CHART_FONTS, Driver, Sample, driver_log_dir, java_driver_command, machine, percentile,
    server_or_env, server_version, today, workspace_root,
};
use curator_framework::CuratorFramework;
use curator_framework::security::TlsConfig;
use curator_test::{JvmOptions, TestCertificates, TestingServer, unique_root};

/// The size of the tree `cache_initial_load` reads: 100 directories of 99 leaves, plus the
/// directories themselves.
const TREE_NODES: usize = 10_000;

/// Creates the tree `cache_initial_load` reads, many requests in flight at once.
async fn build_tree(client: &CuratorFramework, tree: &str) -> Result<(), curator_framework::Error> {
    client.create().for_path(tree, b"").await?;
    let dirs: Vec<String> = (0..100).map(|d| format!("{tree}/d{d:02}")).collect();
    let creates: Vec<_> = dirs
        .iter()
        .map(|dir| client.create().for_path(dir, b"").into_future())
        .collect();
    for result in futures::future::join_all(creates).await {
        result?;
    }
    let leaves: Vec<String> = dirs
        .iter()
        .flat_map(|dir| (0..TREE_NODES / 100 - 1).map(move |n| format!("{dir}/n{n:03}")))
        .collect();
    for batch in leaves.chunks(1000) {
        let creates: Vec<_> = batch
            .iter()
            .map(|leaf| client.create().for_path(leaf, vec![7u8; 32]).into_future())
            .collect();
        for result in futures::future::join_all(creates).await {
            result?;
        }
    }
    Ok(())
}

/// Makes the command that starts a driver.
type CommandFn<'a> = dyn Fn() -> Result<Command, String> + 'a;

/// The drivers' names, as the reports show them.
const CURATOR_RS: &str = "curator-rs";
const BARE: &str = "curator-session (bare)";
const CURATOR: &str = "Curator (Java)";
const KAZOO: &str = "Kazoo (Python)";
const TOKIO_FLOOR: &str = "Tokio floor";
const BLOCKING_FLOOR: &str = "blocking floor";

/// Whether `driver` is one of the floors (not a library: left out of the TLS cost table).
fn is_floor(driver: &str) -> bool {
    driver == TOKIO_FLOOR || driver == BLOCKING_FLOOR
}

struct Scenario {
    name: &'static str,
    what: &'static str,
    /// Operations per measured round.
    ops: usize,
    /// Which server port and drivers run it.
    over: Over,
    /// How many measured rounds this row runs per round of the others (and its warm-up round is
    /// this many times `ops`): the rows compared with the floors run the same operations as
    /// a row of four times the size, in four times as many rounds, so the drivers alternate
    /// more often and a burst of load from elsewhere on the machine lands on one round of one
    /// driver instead of a fifth of its sample; the leader hand-over runs four times as many
    /// rounds of its size (its p50 is compared across libraries, and a round's p50 moves by a
    /// fifth from one round to the next).
    split: usize,
}

/// How the drivers of a row reach their server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Over {
    /// The plaintext server (ZooKeeper's default NIO connection factory).
    Plain,
    /// The TLS server's plaintext port (the Netty connection factory TLS needs): the baseline
    /// TLS rows are compared with, so the ratio measures TLS and not the factory.
    Netty,
    /// The TLS server's secure port.
    Tls,
}

impl Scenario {
    /// `get_data`, `get_data (netty)` or `get_data (tls)`.
    fn label(&self) -> String {
        match self.over {
            Over::Plain => self.name.to_owned(),
            Over::Netty => format!("{} (netty)", self.name),
            Over::Tls => format!("{} (tls)", self.name),
        }
    }

    /// The name `--only` takes: `get_data`, `get_data_netty` or `get_data_tls`.
    fn key(&self) -> String {
        match self.over {
            Over::Plain => self.name.to_owned(),
            Over::Netty => format!("{}_netty", self.name),
            Over::Tls => format!("{}_tls", self.name),
        }
    }
}

/// The scenarios that also run over TLS.
const TLS_SCENARIOS: &[&str] = &["get_data", "create_delete", "mutex_uncontended"];

/// Where a group of drivers connects: the plaintext server, or the TLS server with its CA.
struct Target {
    connect: String,
    tls_ca: Option<PathBuf>,
}

impl Target {
    /// A connected framework client for setting up and cleaning up nodes.
    async fn client(&self) -> Result<CuratorFramework, curator_framework::Error> {
        let mut builder = CuratorFramework::builder().connect_string(&self.connect);
        if let Some(ca) = &self.tls_ca {
            builder = builder.tls(TlsConfig::new().ca_file(ca));
        }
        let client = builder.build()?;
        client.start().await?;
        Ok(client)
    }

    /// The arguments every driver takes after the connect string: `--tls-ca <file>` or none.
    fn driver_args(&self) -> Vec<std::ffi::OsString> {
        match &self.tls_ca {
            Some(ca) => vec!["--tls-ca".into(), ca.into()],
            None => Vec::new(),
        }
    }

    /// The JVM settings of Curator's driver: ZooKeeper's TLS system properties and Netty.
    fn jvm(&self) -> JvmOptions {
        match &self.tls_ca {
            Some(ca) => JvmOptions::zookeeper_tls(ca),
            None => JvmOptions::new(),
        }
    }
}

/// The drivers of one [`Over`], the root they work under, and a client to set it up.
struct Group {
    over: Over,
    root: String,
    setup: CuratorFramework,
    drivers: Vec<Driver>,
}

/// The directory a driver creates its nodes in: `{root}/curator-session-bare` for
/// "curator-session (bare)" (every driver a directory of its own).
fn driver_dir(root: &str, driver: &Driver) -> String {
    driver_dir_of(root, driver.name)
}

/// [`driver_dir`] of the driver named `name`.
fn driver_dir_of(root: &str, name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    format!("{root}/{}", slug.trim_end_matches('-'))
}

struct Summary {
    driver: &'static str,
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

fn summarize(driver: &'static str, ops: usize, samples: &[Sample]) -> Summary {
    if samples.is_empty() {
        return Summary {
            driver,
            ops_per_sec: f64::NAN,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
        };
    }
    let mut rates: Vec<f64> = samples
        .iter()
        .map(|s| ops as f64 / (s.elapsed_ns as f64 / 1e9))
        .collect();
    rates.sort_by(f64::total_cmp);
    let mut latencies: Vec<u64> = samples
        .iter()
        .flat_map(|s| s.latencies_ns.iter().copied())
        .collect();
    latencies.sort_unstable();
    Summary {
        driver,
        ops_per_sec: rates[rates.len() / 2],
        p50_us: percentile(&latencies, 0.50),
        p99_us: percentile(&latencies, 0.99),
    }
}

fn ratio_text(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}")
    } else {
        "n/a".to_owned()
    }
}

/// The ratio table: for each scenario, curator-rs's ops/s over Curator's, Kazoo's and the
/// bare session's, and each Rust row's ops/s over each floor's ("n/a" where either side did not
/// run the scenario).
fn ratio_report(scenarios: &[Scenario], results: &[Vec<Summary>]) -> String {
    let mut columns: Vec<(String, &str, &str)> = vec![
        ("curator-rs ÷ Curator".into(), CURATOR_RS, CURATOR),
        ("curator-rs ÷ Kazoo".into(), CURATOR_RS, KAZOO),
        ("curator-rs ÷ bare session".into(), CURATOR_RS, BARE),
    ];
    for (short, driver) in [("curator-rs", CURATOR_RS), ("bare session", BARE)] {
        for (floor_name, floor) in [
            ("Tokio floor", TOKIO_FLOOR),
            ("blocking floor", BLOCKING_FLOOR),
        ] {
            columns.push((format!("{short} ÷ {floor_name}"), driver, floor));
        }
    }
    let mut report = format!(
        "\nRatios of median ops/s in this run (above 1: the first driver is faster). The floors \
         speak the protocol directly with TCP_NODELAY (`floor-driver`): the Tokio floor is a \
         minimal client shaped like ours (a reader and a writer task, oneshot replies), the \
         blocking floor a std TcpStream without runtime or threads (the physical limit here); \
         they run {} only.\n\n| scenario | what | {} |\n| --- | --- |{}\n",
        FLOOR_SCENARIOS.join(", "),
        columns
            .iter()
            .map(|(header, _, _)| header.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        " ---: |".repeat(columns.len())
    );
    for (scenario, summaries) in scenarios.iter().zip(results) {
        let rate = |name: &str| {
            summaries
                .iter()
                .find(|s| s.driver == name)
                .map_or(f64::NAN, |s| s.ops_per_sec)
        };
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, ours, theirs)| ratio_text(rate(ours) / rate(theirs)))
            .collect();
        report.push_str(&format!(
            "| {} | {} | {} |\n",
            scenario.label(),
            scenario.what,
            cells.join(" | ")
        ));
    }
    report
}

/// The scenarios the floor drivers run (they answer `err unsupported` to the others).
const FLOOR_SCENARIOS: &[&str] = &["get_data", "pipelined_get_data", "create_delete"];

/// The leader hand-over's p50 latencies against each other (the ratio table compares ops/s,
/// which for this row counts each round's set-up too): curator-rs and its floor, two bare
/// sessions (one deletes the node the other watches), against Curator's; empty when the row
/// did not run.
fn handover_report(scenarios: &[Scenario], results: &[Vec<Summary>]) -> String {
    let Some(summaries) = scenarios
        .iter()
        .zip(results)
        .find(|(s, _)| s.name == "leader_handover" && s.over == Over::Plain)
        .map(|(_, summaries)| summaries)
    else {
        return String::new();
    };
    let p50 = |name: &str| {
        summaries
            .iter()
            .find(|s| s.driver == name)
            .map_or(f64::NAN, |s| s.p50_us)
    };
    format!(
        "\nLeader hand-over, ratios of p50 latency in this run (below 1: the first is quicker): \
         curator-rs ÷ Curator {}, two bare sessions ÷ Curator {} (the floor of any hand-over: \
         one session deletes the node another watches), curator-rs ÷ two bare sessions {}.\n",
        ratio_text(p50(CURATOR_RS) / p50(CURATOR)),
        ratio_text(p50(BARE) / p50(CURATOR)),
        ratio_text(p50(CURATOR_RS) / p50(BARE)),
    )
}

/// Each driver over TLS against itself in plaintext on the same (Netty) server, for the
/// scenarios run both ways; and the Netty plaintext port against the default NIO server.
fn tls_report(scenarios: &[Scenario], results: &[Vec<Summary>]) -> String {
    // The libraries of the run (the floors do not speak TLS).
    let mut drivers: Vec<&str> = Vec::new();
    for summary in results.iter().flatten() {
        if !is_floor(summary.driver) && !drivers.contains(&summary.driver) {
            drivers.push(summary.driver);
        }
    }
    let rate = |name: &str, over: Over, driver: &str| {
        scenarios
            .iter()
            .zip(results)
            .find(|(s, _)| s.name == name && s.over == over)
            .and_then(|(_, summaries)| summaries.iter().find(|s| s.driver == driver))
            .map_or(f64::NAN, |s| s.ops_per_sec)
    };
    let tls_rows: Vec<&Scenario> = scenarios.iter().filter(|s| s.over == Over::Tls).collect();
    if tls_rows.is_empty() {
        return String::new();
    }
    let mut report = format!(
        "\nTLS cost, each driver against itself: ops/s over TLS ÷ ops/s on the same server's \
         plaintext port (both through ZooKeeper's Netty connection factory, which TLS needs); in \
         brackets, that plaintext port ÷ the default (NIO) server's:\n\n| scenario | {} |\n| --- |{}\n",
        drivers.join(" | "),
        " ---: |".repeat(drivers.len())
    );
    for scenario in tls_rows {
        let cells: Vec<String> = drivers
            .iter()
            .map(|driver| {
                let tls = rate(scenario.name, Over::Tls, driver);
                let netty = rate(scenario.name, Over::Netty, driver);
                let plain = rate(scenario.name, Over::Plain, driver);
                format!(
                    "{} ({})",
                    ratio_text(tls / netty),
                    ratio_text(netty / plain)
                )
            })
            .collect();
        report.push_str(&format!("| {} | {} |\n", scenario.name, cells.join(" | ")));
    }
    report
}

fn java_driver(root: &Path, target: &Target) -> Result<Command, String> {
    java_driver_command(root, &target.jvm(), "512m", &target.connect)
}

/// The session timeout every driver's `crash_join` asks for.
const CRASH_SESSION_MS: u64 = 2000;

/// Crash failover: per round and library, two fresh driver processes join one election (the
/// first leads); once both are in line, and one to two session timeouts later (a random
/// moment), the leader's process is killed with SIGKILL, and the
/// hand-over runs from the kill to the other process's reply that it leads. Its floor is the
/// session timeout: the server removes the dead leader's node only when its session expires.
/// Returns each library's hand-overs; a library that fails a round is reported and left out of
/// that round.
fn crash_failover(
    runtime: &tokio::runtime::Runtime,
    watcher: &CuratorFramework,
    kinds: &[(&'static str, &CommandFn)],
    base: &str,
    rounds: usize,
) -> Result<Vec<(&'static str, Vec<Crash>)>, String> {
    let mut results: Vec<(&'static str, Vec<Crash>)> =
        kinds.iter().map(|(name, _)| (*name, Vec::new())).collect();
    for round in 0..rounds {
        for k in 0..kinds.len() {
            let index = (round + k) % kinds.len();
            let (name, command) = &kinds[index];
            let path = format!("{base}/crash-{index}-{round}");
            match crash_once(runtime, watcher, name, command, &path) {
                Ok(crash) => results[index].1.push(crash),
                Err(error) => eprintln!("crash failover, {name}, round {round}: {error}"),
            }
        }
    }
    Ok(results)
}

/// One crash hand-over (see [`crash_failover`]).
#[derive(Clone, Copy)]
struct Crash {
    /// From the kill to the next participant's reply that it leads.
    total_ms: f64,
    /// From the kill to the dead leader's node going (the server expired its session), as a
    /// watch of this harness saw it.
    expiry_ms: f64,
    /// From the node going to the reply: the library's own part.
    after_expiry_ms: f64,
}

/// One crash hand-over (see [`crash_failover`]).
fn crash_once(
    runtime: &tokio::runtime::Runtime,
    watcher: &CuratorFramework,
    name: &'static str,
    command: &CommandFn,
    path: &str,
) -> Result<Crash, String> {
    let mut leader = Driver::start(name, command()?)?;
    leader.run("crash_join", 1, path)?.ok_or("unsupported")?;
    let mut next = Driver::start(name, command()?)?;
    next.send("crash_join", 1, path)
        .map_err(|failure| next.failed("crash_join", &failure))?;
    // Both in line: the next one's node is there (it watches the leader's right after). Both
    // nodes are watched here too: the first to go is the dead leader's, when its session
    // expires.
    let gone = runtime.block_on(async {
        let children = loop {
            let (children, _, changed) = watcher
                .get_children()
                .watched()
                .for_path(path)
                .await
                .map_err(|e| e.to_string())?;
            if children.len() >= 2 {
                break children;
            }
            tokio::time::timeout(Duration::from_secs(60), changed)
                .await
                .map_err(|_| "the second participant never joined".to_owned())?;
        };
        let mut watches = Vec::new();
        for child in children {
            let (_, _, changed) = watcher
                .get_data()
                .watched()
                .for_path(&format!("{path}/{child}"))
                .await
                .map_err(|e| e.to_string())?;
            watches.push(Box::pin(changed.into_future()));
        }
        Ok::<_, String>(tokio::spawn(async move {
            futures::future::select_all(watches).await;
            Instant::now()
        }))
    })?;
    // Both in line, the kill comes at a random moment one to two session timeouts later: every
    // library has settled into its idle ping rhythm by then (a library whose second process
    // starts fast would otherwise have the leader killed right after its last request, and a
    // slow one after a ping), and the moment falls anywhere in a ping period.
    let settle = {
        use rand::Rng as _;
        Duration::from_millis(CRASH_SESSION_MS + rand::rng().random_range(0..CRASH_SESSION_MS))
    };
    std::thread::sleep(settle);
    let killed = Instant::now();
    leader.kill();
    next.reply(Some(Duration::from_secs(60)))
        .map_err(|failure| next.failed("crash_join", &failure))?;
    let led = Instant::now();
    // A throwaway process whose session holds the election: no orderly quit needed.
    next.kill();
    let expired = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), gone).await })
        .map_err(|_| "the leader's node never went".to_owned())?
        .map_err(|e| e.to_string())?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok(Crash {
        total_ms: ms(led - killed),
        expiry_ms: ms(expired - killed),
        after_expiry_ms: ms(led.saturating_duration_since(expired)),
    })
}

/// The crash failover's paragraph of the report.
fn crash_report(results: &[(&'static str, Vec<Crash>)]) -> String {
    if results.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\nCrash failover (the leader's process killed with SIGKILL; every library asks for a \
         {CRASH_SESSION_MS} ms session; medians, with min–max): from the kill to the dead \
         leader's node going (the server expires the session: the timeout counts from the \
         session's last ping, so this can be under the timeout), and from there to the next \
         participant leading (the library's own part).\n\n\
         | driver | rounds | kill → leads, ms | kill → node gone, ms | node gone → leads, ms |\n\
         | --- | ---: | ---: | ---: | ---: |\n"
    );
    let stats = |mut v: Vec<f64>, places: usize| {
        v.sort_by(f64::total_cmp);
        format!(
            "{:.places$} ({:.places$}–{:.places$})",
            v[v.len() / 2],
            v[0],
            v[v.len() - 1]
        )
    };
    for (driver, crashes) in results {
        if crashes.is_empty() {
            text.push_str(&format!("| {driver} | 0 | failed | | |\n"));
            continue;
        }
        let pick = |f: fn(&Crash) -> f64, places| stats(crashes.iter().map(f).collect(), places);
        text.push_str(&format!(
            "| {driver} | {} | {} | {} | {} |\n",
            crashes.len(),
            pick(|c| c.total_ms, 0),
            pick(|c| c.expiry_ms, 0),
            pick(|c| c.after_expiry_ms, 1),
        ));
    }
    text
}

/// One bar group of the chart: a scenario and curator-rs's throughput divided by Curator's and
/// by Kazoo's (NaN where either side did not run it).
struct ChartRow {
    label: String,
    vs_curator: f64,
    vs_kazoo: f64,
}

impl ChartRow {
    fn new(label: String, summaries: &[Summary]) -> ChartRow {
        let rate = |name: &str| {
            summaries
                .iter()
                .find(|s| s.driver == name)
                .map_or(f64::NAN, |s| s.ops_per_sec)
        };
        let ours = rate(CURATOR_RS);
        ChartRow {
            label,
            vs_curator: ours / rate(CURATOR),
            vs_kazoo: ours / rate(KAZOO),
        }
    }
}

/// Draws `rows` as a PNG at `path` in the first of [`CHART_FONTS`] the machine has.
fn chart(path: &Path, subtitle: &str, rows: &[ChartRow]) -> Result<(), String> {
    let mut error = String::from("no font");
    for font in CHART_FONTS {
        match chart_in(path, subtitle, rows, font) {
            Ok(()) => return Ok(()),
            Err(e) => error = format!("{font}: {e}"),
        }
    }
    Err(error)
}

/// The chart: for each scenario, curator-rs's ops/s over Curator's and over Kazoo's, as
/// horizontal bars growing from parity (1.0) on a log axis, the value at each bar's end.
///
/// One chart, not one per family: the ratios run from about 0.3× to about 60× (the cache's
/// initial load), and on a log axis 0.7× and 27× are equally far from parity as 1/0.7 and 27
/// are, so both stay legible side by side and the scenarios stay in the table's order. The x
/// axis is linear in log10(ratio) with ticks drawn by hand at 1-2-5 steps, so the labels read
/// "0.5×", "1×", "2×" rather than exponents.
fn chart_in(path: &Path, subtitle: &str, rows: &[ChartRow], font: &str) -> Result<(), String> {
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    let err = |e: &dyn std::fmt::Display| e.to_string();
    let curator_color = RGBColor(0xd6, 0x27, 0x28);
    let kazoo_color = RGBColor(0x1f, 0x77, 0xb4);
    let grey = RGBColor(0x70, 0x70, 0x70);

    let row_height = 46u32;
    let n = rows.len().max(1);
    let height = 150 + row_height * n as u32 + 60;
    let width = 1400u32;
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;

    // The x range: every finite ratio and parity, with room for the value printed at the ends.
    let finite = rows
        .iter()
        .flat_map(|r| [r.vs_curator, r.vs_kazoo])
        .filter(|r| r.is_finite() && *r > 0.0);
    let (lo, hi) = finite.fold((1.0f64, 1.0f64), |(lo, hi), r| (lo.min(r), hi.max(r)));
    let (x0, x1) = (lo.log10() - 0.25, hi.log10() + 0.3);

    // Title, subtitle and legend above the plot.
    let title = TextStyle::from((font, 26).into_font()).color(&BLACK);
    root.draw_text(
        "curator-rs throughput ÷ Apache Curator (Java) and ÷ Kazoo (Python):  > 1× means curator-rs is faster",
        &title,
        (20, 14),
    )
    .map_err(|e| err(&e))?;
    let small = TextStyle::from((font, 16).into_font()).color(&grey);
    root.draw_text(subtitle, &small, (20, 50))
        .map_err(|e| err(&e))?;
    let legend = TextStyle::from((font, 18).into_font()).color(&BLACK);
    let mut lx = 20;
    for (name, color) in [
        ("curator-rs ÷ Curator (Java)", curator_color),
        ("curator-rs ÷ Kazoo (Python)", kazoo_color),
    ] {
        root.draw(&Rectangle::new([(lx, 84), (lx + 22, 100)], color.filled()))
            .map_err(|e| err(&e))?;
        root.draw_text(name, &legend, (lx + 30, 82))
            .map_err(|e| err(&e))?;
        let (w, _) = root
            .estimate_text_size(name, &legend)
            .map_err(|e| err(&e))?;
        lx += 30 + w as i32 + 40;
    }

    // The y labels are the scenario names, drawn by hand so each sits on its bar pair.
    let label_style = TextStyle::from((font, 17).into_font()).color(&BLACK);
    let label_width = rows
        .iter()
        .map(|r| {
            root.estimate_text_size(&r.label, &label_style)
                .map(|(w, _)| w)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(&e))?
        .into_iter()
        .max()
        .unwrap_or(100);
    let plot = root.margin(120, 20, 20, 30);
    let mut chart = ChartBuilder::on(&plot)
        .x_label_area_size(40)
        .y_label_area_size(label_width + 16)
        .build_cartesian_2d(x0..x1, 0.0..n as f64)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .draw()
        .map_err(|e| err(&e))?;

    // Row bands, every other one shaded, and the scenario names.
    for (i, row) in rows.iter().enumerate() {
        let top = (n - i) as f64;
        if i % 2 == 0 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, top), (x1, top - 1.0)],
                    RGBColor(0xf2, 0xf2, 0xf2).filled(),
                )))
                .map_err(|e| err(&e))?;
        }
        let (px, py) = chart.backend_coord(&(x0, top - 0.5));
        root.draw_text(
            &row.label,
            &label_style.pos(Pos::new(HPos::Right, VPos::Center)),
            (px - 10, py),
        )
        .map_err(|e| err(&e))?;
    }

    // Grid lines and tick labels at 1-2-5 steps.
    let tick_style = TextStyle::from((font, 16).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let mut ticks = Vec::new();
    for decade in -3..=4 {
        for step in [1.0, 2.0, 5.0] {
            let value = step * 10f64.powi(decade);
            if (x0..=x1).contains(&value.log10()) {
                ticks.push(value);
            }
        }
    }
    for value in &ticks {
        let x = value.log10();
        chart
            .draw_series(std::iter::once(PathElement::new(
                [(x, 0.0), (x, n as f64)],
                RGBColor(0xc8, 0xc8, 0xc8).stroke_width(1),
            )))
            .map_err(|e| err(&e))?;
        let (px, py) = chart.backend_coord(&(x, 0.0));
        root.draw_text(&format!("{value}×"), &tick_style, (px, py + 6))
            .map_err(|e| err(&e))?;
    }
    let (_, py) = chart.backend_coord(&(x0, 0.0));
    let (cx, _) = chart.backend_coord(&((x0 + x1) / 2.0, 0.0));
    root.draw_text(
        "curator-rs ops/s ÷ the other client's ops/s (log scale; bars grow from parity)",
        &small.pos(Pos::new(HPos::Center, VPos::Top)),
        (cx, py + 30),
    )
    .map_err(|e| err(&e))?;

    // The bars, from parity to the ratio, with the value at the end.
    let value_style = TextStyle::from((font, 15).into_font()).color(&BLACK);
    for (i, row) in rows.iter().enumerate() {
        let top = (n - i) as f64;
        for (k, (ratio, color)) in [(row.vs_curator, curator_color), (row.vs_kazoo, kazoo_color)]
            .into_iter()
            .enumerate()
        {
            let (y_top, y_bottom) = (
                top - 0.12 - 0.38 * k as f64,
                top - 0.12 - 0.38 * (k + 1) as f64 + 0.04,
            );
            let y_mid = (y_top + y_bottom) / 2.0;
            if !(ratio.is_finite() && ratio > 0.0) {
                let (px, py) = chart.backend_coord(&(0.0, y_mid));
                root.draw_text(
                    "n/a (not run)",
                    &value_style
                        .color(&grey)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                    (px + 6, py),
                )
                .map_err(|e| err(&e))?;
                continue;
            }
            let x = ratio.log10();
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y_top), (x, y_bottom)],
                    color.filled(),
                )))
                .map_err(|e| err(&e))?;
            let (px, py) = chart.backend_coord(&(x, y_mid));
            let (text, anchor, dx) = if ratio >= 1.0 {
                (format!("{ratio:.2}×"), HPos::Left, 5)
            } else {
                (format!("{ratio:.2}×"), HPos::Right, -5)
            };
            root.draw_text(
                &text,
                &value_style.pos(Pos::new(anchor, VPos::Center)),
                (px + dx, py),
            )
            .map_err(|e| err(&e))?;
        }
    }

    // Parity.
    chart
        .draw_series(std::iter::once(PathElement::new(
            [(0.0, 0.0), (0.0, n as f64)],
            BLACK.stroke_width(2),
        )))
        .map_err(|e| err(&e))?;
    let (px, py) = chart.backend_coord(&(0.0, n as f64));
    root.draw_text(
        "parity",
        &small
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom)),
        (px, py - 2),
    )
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// `--redraw-chart IN.json OUT.png`: the chart again from a run's raw samples, without running
/// anything.
fn redraw_chart(json_path: &Path, png: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(json_path).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let field = |name: &str| {
        json.get(name)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
            .to_owned()
    };
    let mut groups: Vec<(String, Vec<Summary>)> = Vec::new();
    let results = json
        .get("results")
        .and_then(|r| r.as_array())
        .ok_or("no \"results\"")?;
    for entry in results {
        let scenario = entry["scenario"]
            .as_str()
            .ok_or("a result without \"scenario\"")?;
        let driver = entry["driver"]
            .as_str()
            .ok_or("a result without \"driver\"")?;
        let ops = entry["ops"].as_u64().ok_or("a result without \"ops\"")? as usize;
        let samples: Vec<Sample> = entry["rounds"]
            .as_array()
            .map(|rounds| {
                rounds
                    .iter()
                    .map(|r| Sample {
                        elapsed_ns: r["elapsed_ns"].as_u64().unwrap_or(0),
                        latencies_ns: r["latencies_ns"]
                            .as_array()
                            .map(|l| l.iter().filter_map(|v| v.as_u64()).collect())
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        // `Summary` names drivers by `&'static str`; this process ends right after drawing.
        let driver: &'static str = Box::leak(driver.to_owned().into_boxed_str());
        let summary = summarize(driver, ops, &samples);
        match groups.iter_mut().find(|(s, _)| s == scenario) {
            Some((_, summaries)) => summaries.push(summary),
            None => groups.push((scenario.to_owned(), vec![summary])),
        }
    }
    let rounds = results
        .iter()
        .filter_map(|e| e["rounds"].as_array().map(Vec::len))
        .max()
        .unwrap_or(0);
    let quick = results
        .iter()
        .any(|e| e["scenario"] == "get_data" && e["ops"] == 500);
    let rows: Vec<ChartRow> = groups
        .into_iter()
        .map(|(label, summaries)| ChartRow::new(label, &summaries))
        .collect();
    let subtitle = format!(
        "Run of {}: {}; ZooKeeper {} on loopback; median ops/s of {rounds} measured rounds; {} mode (redrawn from the raw samples)",
        field("date"),
        field("machine"),
        field("zookeeper").split(['-', ',']).next().unwrap_or("?"),
        // Runs before "mode" was recorded: quick runs do 500 get_data per round, full ones 2,000.
        json.get("mode")
            .and_then(|m| m.as_str())
            .unwrap_or(if quick { "quick" } else { "full" }),
    );
    chart(png, &subtitle, &rows)?;
    println!("chart: {}", png.display());
    Ok(())
}

/// curator-rs, its bare session layer (curator-session), Apache Curator (Java) and Kazoo
/// (Python) doing the same work against one ZooKeeper server, in one run, beside two floors
/// that speak the protocol directly (a blocking client without a runtime, and a minimal Tokio
/// client); every Rust row is also shown as a fraction of each floor.
///
/// Starts its own servers (a plaintext one, and a TLS one for the TLS rows) unless ZK_CONNECT
/// (and ZK_TLS_CONNECT with ZK_TLS_CA) name others. Prints a table; writes a chart and the raw
/// samples to target/bench/, the drivers' stderr to target/bench/logs/. A full run takes about
/// five minutes; --quick about one.
#[derive(Debug, Parser)]
#[command(name = "side-by-side")]
struct Args {
    /// A short run: 2 rounds, none of a full run's four-fold rounds (the other rows a quarter
    /// the operations per round), one crash round.
    #[arg(long)]
    quick: bool,
    /// Measured rounds per driver, after one discarded warm-up [default: 5; 2 with --quick];
    /// in a full run the rows compared with the floors run four times as many, each a quarter
    /// the size, and the leader hand-over four times as many.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    rounds: Option<u16>,
    /// Only these rows, by key (comma-separated): a scenario (get_data, create_delete, ...),
    /// its TLS variants (get_data_netty, get_data_tls), cache_memory or crash_failover.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',', value_parser = only_key)]
    only: Option<Vec<String>>,
    /// Leave out the TLS rows (and their TLS server).
    #[arg(long)]
    no_tls: bool,
    /// Write the table into docs/benchmarks.md and the chart to docs/ (full runs only).
    #[arg(long, conflicts_with_all = ["quick", "only"])]
    write_docs: bool,
    /// Accepted for older command lines: leaving docs/ alone is the default.
    #[arg(long, hide = true, conflicts_with = "write_docs")]
    no_docs: bool,
    /// Redraw the chart from a run's raw samples into OUT.png, without running anything.
    #[arg(long, num_args = 2, value_names = ["IN.json", "OUT.png"], exclusive = true)]
    redraw_chart: Option<Vec<PathBuf>>,
}

/// Every row key `--only` takes.
fn only_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for scenario in scenarios(false, true) {
        keys.push(scenario.key());
    }
    keys.push("cache_memory".to_owned());
    keys.push("crash_failover".to_owned());
    keys
}

/// `--only`'s value parser: a known row key.
fn only_key(key: &str) -> Result<String, String> {
    let keys = only_keys();
    if keys.iter().any(|k| k == key) {
        Ok(key.to_owned())
    } else {
        Err(format!("unknown row (one of: {})", keys.join(", ")))
    }
}

fn main() {
    let args = Args::parse();
    let only_tls = |only: &Vec<String>| {
        only.iter()
            .all(|key| key.ends_with("_tls") || key.ends_with("_netty"))
    };
    if args.no_tls && args.only.as_ref().is_some_and(only_tls) {
        Args::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--no-tls leaves out every row --only names: nothing to run",
            )
            .exit();
    }
    if let Err(error) = run(args) {
        eprintln!("side-by-side: {error}");
        std::process::exit(1);
    }
}

/// How many times a quick run's operations a full run does per row.
const FULL_SCALE: usize = 4;

/// The scenarios of a run: each plaintext row, followed (with `with_tls`) by its TLS variants.
fn scenarios(quick: bool, with_tls: bool) -> Vec<Scenario> {
    let scale = if quick { 1 } else { FULL_SCALE };
    let scenarios = [
        Scenario {
            name: "get_data",
            what: "sequential get_data of a 100-byte node",
            ops: 500,
            split: scale,
            over: Over::Plain,
        },
        Scenario {
            name: "pipelined_get_data",
            what: "get_data, 1,000 in flight at a time",
            ops: 1000,
            split: scale,
            over: Over::Plain,
        },
        Scenario {
            name: "create_delete",
            what: "sequential create + delete (one op = the pair)",
            ops: 250,
            split: scale,
            over: Over::Plain,
        },
        Scenario {
            name: "mutex_uncontended",
            what: "acquire + release of a free mutex (one op = the cycle)",
            ops: 100 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "leader_handover",
            what: "leader leaves → the next participant leads (latency is the hand-over)",
            ops: 100,
            split: scale,
            over: Over::Plain,
        },
        Scenario {
            name: "mutex_contended",
            what: "8 sessions of one process on one mutex (one op = a hand-over)",
            ops: 100 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "counter_8way",
            what: "8 sessions increment one atomic long (curator-rs: exactly-once writes)",
            ops: 200 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "counter_8way_plain",
            what: "the same with plain versioned writes (Curator's and Kazoo's only kind)",
            ops: 200 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "queue_1x1",
            what: "simple queue, 1 producer + 1 consumer session (one op = an item taken)",
            ops: 200 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "queue_4x4",
            what: "simple queue, 4 producers + 4 consumers (one op = an item taken)",
            ops: 400 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "queue_4x4_exactly_once",
            what: "the same in exactly-once mode (outcome markers; curator-rs only)",
            ops: 400 * scale,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "cache_initial_load",
            what: "a cache (Kazoo: TreeCache) loads a 10,000-node tree (ops/s = nodes/s; latency = the load)",
            ops: TREE_NODES,
            split: 1,
            over: Over::Plain,
        },
        Scenario {
            name: "cache_update_latency",
            what: "set_data → the cache's listener sees the value (sequential)",
            ops: 100 * scale,
            split: 1,
            over: Over::Plain,
        },
    ];
    scenarios
        .into_iter()
        .flat_map(|plain| {
            let secured = with_tls && TLS_SCENARIOS.contains(&plain.name);
            let variants = secured.then_some([
                Scenario {
                    what: "the same on the TLS server's plaintext port (Netty)",
                    over: Over::Netty,
                    ..plain
                },
                Scenario {
                    what: "the same over TLS (Netty)",
                    over: Over::Tls,
                    ..plain
                },
            ]);
            std::iter::once(plain).chain(variants.into_iter().flatten())
        })
        .collect()
}

fn run(args: Args) -> Result<(), String> {
    if let Some(files) = &args.redraw_chart {
        return match files.as_slice() {
            [json, png] => redraw_chart(json, png),
            _ => Err("--redraw-chart takes IN.json OUT.png".to_owned()),
        };
    }
    let quick = args.quick;
    // `--only a,b` runs just those rows.
    let only = args.only;
    let write_docs = args.write_docs;
    let rounds = args.rounds.map_or(if quick { 2 } else { 5 }, usize::from);
    let scenarios: Vec<Scenario> = scenarios(quick, !args.no_tls)
        .into_iter()
        .filter(|s| {
            only.as_ref()
                .is_none_or(|only| only.iter().any(|o| *o == s.key()))
        })
        .collect();
    let wanted = |key: &str| {
        only.as_ref()
            .is_none_or(|only| only.iter().any(|o| o == key))
    };
    let with_tls = scenarios.iter().any(|s| s.over != Over::Plain);
    let workspace = workspace_root();
    // One worker thread: the crash failover's watch stamps its event while this thread waits
    // on a driver's reply.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;

    let (_server, connect) = runtime.block_on(server_or_env(TestingServer::start_dedicated()))?;
    // The TLS server: `ZK_TLS_CONNECT` with the CA file `ZK_TLS_CA` (and its plaintext port
    // `ZK_TLS_PLAIN_CONNECT`, else no Netty baseline), or one of our own with a fresh test CA
    // (its certificate names `localhost`, the host of its connect string).
    let (_tls_server, _tls_files, netty_target, tls_target) = if !with_tls {
        (None, None, None, None)
    } else if let (Ok(connect), Ok(ca)) =
        (std::env::var("ZK_TLS_CONNECT"), std::env::var("ZK_TLS_CA"))
    {
        let target = Target {
            connect,
            tls_ca: Some(PathBuf::from(ca)),
        };
        let netty = std::env::var("ZK_TLS_PLAIN_CONNECT")
            .ok()
            .map(|connect| Target {
                connect,
                tls_ca: None,
            });
        (None, None, netty, Some(target))
    } else {
        let certs = TestCertificates::generate().map_err(|e| e.to_string())?;
        let files = certs.write_to_temp_dir().map_err(|e| e.to_string())?;
        let server = runtime
            .block_on(TestingServer::builder().tls(certs.server_tls()).start())
            .map_err(|e| e.to_string())?;
        let target = Target {
            connect: server
                .secure_connect_string()
                .ok_or("the TLS server has no TLS port")?,
            tls_ca: Some(files.ca().to_owned()),
        };
        let netty = Target {
            connect: server.connect_string(),
            tls_ca: None,
        };
        (Some(server), Some(files), Some(netty), Some(target))
    };
    let plain_target = Target {
        connect: connect.clone(),
        tls_ca: None,
    };
    let version = runtime.block_on(server_version(&connect));

    // The nodes every driver works on: one data node, one directory per driver for creates
    // (under a root of each group's own; the Netty and TLS groups share a server).
    let base = unique_root("side-by-side");
    let tree = format!("{base}/tree");

    let exe_dir = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    let bench_driver = exe_dir.join("bench-driver");
    // `binary kind connect [--tls-ca CA]`: bench-driver and floor-driver.
    let rust_driver = |binary: &Path, kind: &str, target: &Target| {
        let mut command = Command::new(binary);
        command
            .arg(kind)
            .arg(&target.connect)
            .args(target.driver_args());
        command
    };
    let kazoo_driver = |target: &Target| {
        let mut kazoo = Command::new("/usr/bin/python3");
        kazoo
            .arg(workspace.join("benches/drivers/kazoo_driver.py"))
            .arg(&target.connect)
            .args(target.driver_args());
        kazoo
    };
    let floor_driver = exe_dir.join("floor-driver");
    let start_group = |target: &Target| -> Result<Vec<Driver>, String> {
        let mut drivers = vec![Driver::start(
            CURATOR_RS,
            rust_driver(&bench_driver, "framework", target),
        )?];
        drivers.push(Driver::start(
            BARE,
            rust_driver(&bench_driver, "bare", target),
        )?);
        drivers.push(Driver::start(CURATOR, java_driver(&workspace, target)?)?);
        drivers.push(Driver::start(KAZOO, kazoo_driver(target))?);
        // The floors speak plaintext only.
        if target.tls_ca.is_none() {
            drivers.push(Driver::start(
                TOKIO_FLOOR,
                rust_driver(&floor_driver, "tokio", target),
            )?);
            drivers.push(Driver::start(
                BLOCKING_FLOOR,
                rust_driver(&floor_driver, "blocking", target),
            )?);
        }
        Ok(drivers)
    };
    let mut groups: Vec<Group> = Vec::new();
    for (over, target) in [
        (Over::Plain, Some(&plain_target)),
        (Over::Netty, netty_target.as_ref()),
        (Over::Tls, tls_target.as_ref()),
    ] {
        let Some(target) = target else { continue };
        if !scenarios.iter().any(|s| s.over == over) && over != Over::Plain {
            continue;
        }
        let root = match over {
            Over::Plain => base.clone(),
            Over::Netty => format!("{base}-netty"),
            Over::Tls => format!("{base}-tls"),
        };
        let drivers = start_group(target)?;
        let setup = runtime.block_on(async {
            let client = target.client().await?;
            client
                .create()
                .creating_parents_if_needed()
                .for_path(&format!("{root}/data"), vec![7u8; 100])
                .await?;
            if over == Over::Plain {
                build_tree(&client, &tree).await?;
            }
            for driver in &drivers {
                client
                    .create()
                    .for_path(&driver_dir(&root, driver), b"")
                    .await?;
            }
            Ok::<_, curator_framework::Error>(client)
        });
        groups.push(Group {
            over,
            root,
            setup: setup.map_err(|e| e.to_string())?,
            drivers,
        });
    }

    let started = Instant::now();
    let mut results: Vec<Vec<Summary>> = Vec::new();
    let mut raw = Vec::new();
    for scenario in &scenarios {
        let group = groups
            .iter_mut()
            .find(|g| g.over == scenario.over)
            .ok_or_else(|| format!("no drivers for {}", scenario.label()))?;
        let (root, drivers) = (&group.root, &mut group.drivers);
        let data = format!("{root}/data");
        let mut samples: Vec<Vec<Sample>> = drivers.iter().map(|_| Vec::new()).collect();
        for round in 0..=rounds * scenario.split {
            let n = drivers.len();
            // The warm-up is as long as `split` measured rounds.
            let ops = if round == 0 {
                scenario.ops * scenario.split
            } else {
                scenario.ops
            };
            for k in 0..n {
                let index = (round + k) % n;
                let driver = &mut drivers[index];
                let dir = driver_dir(root, driver);
                let path = match scenario.name {
                    "create_delete" => dir,
                    name if ["mutex", "leader", "counter", "queue"]
                        .iter()
                        .any(|prefix| name.starts_with(prefix))
                        || name == "cache_update_latency" =>
                    {
                        format!("{dir}-{name}")
                    }
                    "cache_initial_load" => tree.clone(),
                    _ => data.clone(),
                };
                if let Some(sample) = driver.run(scenario.name, ops, &path)? {
                    if round > 0 {
                        samples[index].push(sample);
                    }
                }
            }
        }
        let summaries: Vec<Summary> = drivers
            .iter()
            .zip(&samples)
            .map(|(d, s)| summarize(d.name, scenario.ops, s))
            .collect();
        for (driver, samples) in drivers.iter().zip(&samples) {
            raw.push(serde_json::json!({
                "scenario": scenario.label(),
                "driver": driver.name,
                "ops": scenario.ops,
                "rounds": samples.iter().map(|s| serde_json::json!({
                    "elapsed_ns": s.elapsed_ns,
                    "latencies_ns": s.latencies_ns,
                })).collect::<Vec<_>>(),
            }));
        }
        results.push(summaries);
    }
    // Memory per cached node: each driver kind in fresh processes (so nothing earlier in the
    // process is reused), median of three.
    let measure_memory = wanted("cache_memory");
    let mut memory: Vec<(&'static str, Option<u64>)> = Vec::new();
    // The libraries whose processes the memory and crash rows start afresh.
    let framework_command = || -> Result<Command, String> {
        Ok(rust_driver(&bench_driver, "framework", &plain_target))
    };
    let java_command = || java_driver(&workspace, &plain_target);
    let kazoo_command = || -> Result<Command, String> { Ok(kazoo_driver(&plain_target)) };
    let fresh_kinds: Vec<(&'static str, &CommandFn)> = vec![
        (CURATOR_RS, &framework_command),
        (CURATOR, &java_command),
        (KAZOO, &kazoo_command),
    ];
    if measure_memory {
        for &(name, command) in &fresh_kinds {
            let mut per_node = Vec::new();
            for _ in 0..3 {
                let mut driver = Driver::start(name, command()?)?;
                if let Some(sample) = driver.run("cache_memory", TREE_NODES, &tree)? {
                    per_node.extend(sample.latencies_ns.first().copied());
                }
            }
            per_node.sort_unstable();
            memory.push((name, per_node.get(per_node.len() / 2).copied()));
        }
    }
    let crash = if wanted("crash_failover") {
        let watcher = runtime
            .block_on(plain_target.client())
            .map_err(|e| e.to_string())?;
        // Where a kill falls in the ping cycle moves a round by up to the ping interval (a
        // third to a half of the session timeout): ten rounds keep the medians of libraries
        // whose expected failovers differ by a twelfth of the timeout apart.
        let crash_rounds = if quick { 1 } else { 10 };
        crash_failover(&runtime, &watcher, &fresh_kinds, &base, crash_rounds)?
    } else {
        Vec::new()
    };
    let took = started.elapsed();
    for group in groups {
        drop(group.drivers);
        let _ = runtime.block_on(async {
            group
                .setup
                .delete()
                .deleting_children_if_needed()
                .for_path(&group.root)
                .await
        });
    }

    // The report.
    let date = today();
    let mut report = String::new();
    report.push_str(&format!(
        "Run of {date}: {}; ZooKeeper {version} on loopback; {rounds} measured rounds per driver after one warm-up{}, \
         driver order rotating; {} mode; took {:.0} s.\n\n",
        machine(),
        if quick {
            String::new()
        } else {
            format!(
                " ({} for {}, a quarter the size, and for leader_handover)",
                rounds * FULL_SCALE,
                FLOOR_SCENARIOS.join(", ")
            )
        },
        if quick { "quick" } else { "full" },
        took.as_secs_f64()
    ));
    report.push_str("| scenario | driver | ops/s (median) | p50 µs | p99 µs |\n| --- | --- | ---: | ---: | ---: |\n");
    for (scenario, summaries) in scenarios.iter().zip(&results) {
        for s in summaries {
            if s.ops_per_sec.is_nan() {
                report.push_str(&format!(
                    "| {} ({}) | {} | n/a | n/a | n/a |\n",
                    scenario.label(),
                    scenario.ops,
                    s.driver
                ));
                continue;
            }
            report.push_str(&format!(
                "| {} ({}) | {} | {:.0} | {:.0} | {:.0} |\n",
                scenario.label(),
                scenario.ops,
                s.driver,
                s.ops_per_sec,
                s.p50_us,
                s.p99_us
            ));
        }
    }
    report.push_str(&ratio_report(&scenarios, &results));
    report.push_str(&handover_report(&scenarios, &results));
    report.push_str(&tls_report(&scenarios, &results));
    if !memory.is_empty() {
        let bytes = |name: &str| {
            memory
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, b)| *b)
                .map_or(f64::NAN, |b| b as f64)
        };
        report.push_str(&format!(
            "\nMemory held per cached node, a {TREE_NODES}-node tree with 32-byte values (median of three fresh processes): \
             curator-rs {:.0} B (live heap bytes), Curator {:.0} B (Java heap after full GCs), \
             Kazoo {:.0} B (tracemalloc); curator-rs / Curator = {:.2}, curator-rs / Kazoo = {:.2}.\n",
            bytes(CURATOR_RS),
            bytes(CURATOR),
            bytes(KAZOO),
            bytes(CURATOR_RS) / bytes(CURATOR),
            bytes(CURATOR_RS) / bytes(KAZOO),
        ));
    }
    report.push_str(&crash_report(&crash));
    println!("{report}");

    let bench_dir = workspace.join("target/bench");
    std::fs::create_dir_all(&bench_dir).map_err(|e| e.to_string())?;
    let json = serde_json::json!({
        "date": date,
        "machine": machine(),
        "zookeeper": version,
        "mode": if quick { "quick" } else { "full" },
        "results": raw,
        "crash_failover": crash.iter().map(|(driver, ms)| serde_json::json!({
            "driver": driver,
            "session_timeout_ms": CRASH_SESSION_MS,
            "total_ms": ms.iter().map(|c| c.total_ms).collect::<Vec<_>>(),
            "expiry_ms": ms.iter().map(|c| c.expiry_ms).collect::<Vec<_>>(),
            "after_expiry_ms": ms.iter().map(|c| c.after_expiry_ms).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    std::fs::write(bench_dir.join("side-by-side.json"), json.to_string())
        .map_err(|e| e.to_string())?;
    let png = if write_docs {
        workspace.join("docs/benchmarks-side-by-side.png")
    } else {
        bench_dir.join("side-by-side.png")
    };
    let rows: Vec<ChartRow> = scenarios
        .iter()
        .zip(&results)
        .map(|(scenario, summaries)| ChartRow::new(scenario.label(), summaries))
        .collect();
    let subtitle = format!(
        "Run of {date}: {}; ZooKeeper {} on loopback; median ops/s of {rounds} measured rounds; {} mode",
        machine(),
        version.split(['-', ',']).next().unwrap_or("?"),
        if quick { "quick" } else { "full" }
    );
    chart(&png, &subtitle, &rows)?;
    println!(
        "chart: {}\nraw samples: {}\ndrivers' stderr: {}",
        png.display(),
        bench_dir.join("side-by-side.json").display(),
        driver_log_dir().display()
    );

    if write_docs {
        let doc_path = workspace.join("docs/benchmarks.md");
        let doc = std::fs::read_to_string(&doc_path).map_err(|e| e.to_string())?;
        let (begin, end) = ("<!-- side-by-side:begin -->", "<!-- side-by-side:end -->");
        if let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) {
            let updated = format!(
                "{}{begin}\n{report}\n![throughput relative to Curator](benchmarks-side-by-side.png)\n{}",
                &doc[..a],
                &doc[b..]
            );
            std::fs::write(&doc_path, updated).map_err(|e| e.to_string())?;
            println!("updated {}", doc_path.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(driver: &'static str, ops_per_sec: f64) -> Summary {
        Summary {
            driver,
            ops_per_sec,
            p50_us: 100.0,
            p99_us: 200.0,
        }
    }

    /// The plaintext rows of a quick run named in `names`.
    fn rows(names: &[&str]) -> Vec<Scenario> {
        scenarios(true, false)
            .into_iter()
            .filter(|s| names.contains(&s.name))
            .collect()
    }

    /// The row of `scenario` in a table, split into its cells.
    fn cells<'a>(report: &'a str, scenario: &str) -> Vec<&'a str> {
        let line = report
            .lines()
            .find(|line| line.starts_with(&format!("| {scenario} |")))
            .unwrap_or_else(|| panic!("no row {scenario} in {report}"));
        line.trim_matches('|').split('|').map(str::trim).collect()
    }

    #[test]
    fn every_rust_row_is_a_fraction_of_each_floor_where_the_floor_ran() {
        let scenarios = rows(&["get_data", "mutex_uncontended"]);
        let results = vec![
            vec![
                summary(CURATOR_RS, 900.0),
                summary(BARE, 950.0),
                summary(CURATOR, 600.0),
                summary(KAZOO, 450.0),
                summary(TOKIO_FLOOR, 1000.0),
                summary(BLOCKING_FLOOR, 1200.0),
            ],
            vec![
                summary(CURATOR_RS, 300.0),
                summary(BARE, 400.0),
                summary(CURATOR, 200.0),
                summary(KAZOO, 100.0),
                // Not run: no sample.
                summary(TOKIO_FLOOR, f64::NAN),
                summary(BLOCKING_FLOOR, f64::NAN),
            ],
        ];
        let report = ratio_report(&scenarios, &results);
        let header = cells(&report, "scenario");
        assert_eq!(
            header[2..],
            [
                "curator-rs ÷ Curator",
                "curator-rs ÷ Kazoo",
                "curator-rs ÷ bare session",
                "curator-rs ÷ Tokio floor",
                "curator-rs ÷ blocking floor",
                "bare session ÷ Tokio floor",
                "bare session ÷ blocking floor",
            ]
        );
        assert_eq!(
            cells(&report, "get_data")[2..],
            ["1.50", "2.00", "0.95", "0.90", "0.75", "0.95", "0.79"]
        );
        let recipe = cells(&report, "mutex_uncontended");
        assert_eq!(recipe[2..5], ["1.50", "3.00", "0.75"]);
        assert!(recipe[5..].iter().all(|cell| *cell == "n/a"), "{recipe:?}");
    }

    #[test]
    fn a_driver_that_did_not_run_shows_n_a() {
        let scenarios = rows(&["get_data"]);
        let results = vec![vec![
            summary(CURATOR_RS, 900.0),
            summary(BARE, 950.0),
            summary(TOKIO_FLOOR, 1000.0),
        ]];
        let report = ratio_report(&scenarios, &results);
        let row = cells(&report, "get_data");
        assert_eq!(row.len(), 2 + 7, "{row:?}");
        // Curator, Kazoo and the blocking floor did not run.
        assert_eq!(
            row[2..],
            ["n/a", "n/a", "0.95", "0.90", "n/a", "0.95", "n/a"]
        );
    }

    #[test]
    fn the_hand_over_is_compared_by_p50_latency() {
        let scenarios = rows(&["leader_handover"]);
        let latency = |driver, p50_us| Summary {
            driver,
            // The round's set-up counts in ops/s: not what the hand-over is compared by.
            ops_per_sec: 1.0,
            p50_us,
            p99_us: 2.0 * p50_us,
        };
        let results = vec![vec![
            latency(CURATOR_RS, 220.0),
            latency(BARE, 200.0),
            latency(CURATOR, 500.0),
            latency(KAZOO, 1000.0),
        ]];
        let report = handover_report(&scenarios, &results);
        assert_eq!(
            report,
            "\nLeader hand-over, ratios of p50 latency in this run (below 1: the first is \
             quicker): curator-rs ÷ Curator 0.44, two bare sessions ÷ Curator 0.40 (the floor of \
             any hand-over: one session deletes the node another watches), curator-rs ÷ two bare \
             sessions 1.10.\n"
        );
        // Without Curator's row: n/a, not a division by nothing.
        let results = vec![vec![latency(CURATOR_RS, 220.0), latency(BARE, 200.0)]];
        let report = handover_report(&scenarios, &results);
        assert!(report.contains("curator-rs ÷ Curator n/a,"), "{report}");
        // The row did not run: nothing.
        assert!(handover_report(&[], &[]).is_empty());
    }

    #[test]
    fn each_driver_works_in_a_directory_of_its_own() {
        let names = [
            CURATOR_RS,
            BARE,
            CURATOR,
            KAZOO,
            TOKIO_FLOOR,
            BLOCKING_FLOOR,
        ];
        let dirs: std::collections::HashSet<String> = names
            .iter()
            .map(|name| driver_dir_of("/root", name))
            .collect();
        assert_eq!(dirs.len(), names.len(), "{dirs:?}");
        assert!(dirs.contains("/root/curator-session-bare"));
    }
}
