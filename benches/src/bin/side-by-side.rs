//! The side-by-side benchmark: this framework, the bare wire client, Apache Curator (Java) and
//! Kazoo (Python) doing the same work against one ZooKeeper server in one run.
//!
//! ```text
//! cargo build --release -p curator-benches --bins
//! target/release/side-by-side [--quick] [--rounds N] [--no-docs]
//! ```
//!
//! Each driver is a long-lived process speaking a line protocol (see `bench-driver.rs`), so JIT
//! and interpreter warm-up happen once; round 0 is a discarded warm-up and the order of drivers
//! rotates from round to round. Results: a table on stdout and in `docs/benchmarks.md`, a PNG
//! chart beside it, raw samples in `target/bench/side-by-side.json`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use curator_framework::CuratorFramework;
use curator_test::{CURATOR_CLASSPATH, TestingServer, four_letter_word, unique_root};

/// One measured round: how long the driver took for all operations, and each operation's latency.
struct Sample {
    elapsed_ns: u64,
    latencies_ns: Vec<u64>,
}

struct Driver {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driver {
    fn start(name: &'static str, mut command: Command) -> Result<Driver, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting the {name} driver: {e}"))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .map_err(|e| format!("{name}: {e}"))?;
        if line.trim() != "ready" {
            return Err(format!("the {name} driver did not start: {line:?}"));
        }
        Ok(Driver {
            name,
            child,
            stdin,
            stdout,
        })
    }

    /// `None` when the driver does not implement the scenario.
    fn run(&mut self, scenario: &str, ops: usize, path: &str) -> Result<Option<Sample>, String> {
        writeln!(self.stdin, "run {scenario} {ops} {path}")
            .map_err(|e| format!("{}: {e}", self.name))?;
        self.stdin
            .flush()
            .map_err(|e| format!("{}: {e}", self.name))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("{}: {e}", self.name))?;
        let mut words = line.trim().splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("ok"), Some(elapsed), Some(latencies)) => Ok(Some(Sample {
                elapsed_ns: elapsed
                    .parse()
                    .map_err(|_| format!("{}: bad reply", self.name))?,
                latencies_ns: latencies
                    .split(',')
                    .filter_map(|x| x.parse().ok())
                    .collect(),
            })),
            (Some("err"), Some("unsupported"), None) => Ok(None),
            _ => Err(format!(
                "the {} driver failed {scenario}: {}",
                self.name,
                line.trim()
            )),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The size of the tree `cache_initial_load` reads: 100 directories of 99 leaves, plus the
/// directories themselves.
const TREE_NODES: usize = 10_000;

/// Creates the tree `cache_initial_load` reads, many requests in flight at once.
async fn build_tree(client: &CuratorFramework, tree: &str) -> Result<(), curator_framework::Error> {
    use std::future::IntoFuture;
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

struct Scenario {
    name: &'static str,
    what: &'static str,
    ops: usize,
}

struct Summary {
    driver: &'static str,
    ops_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank] as f64 / 1000.0
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

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ sits in the workspace")
        .to_owned()
}

fn java_driver(root: &Path, connect: &str) -> Result<Command, String> {
    let out = root.join("target/bench/java");
    std::fs::create_dir_all(&out).map_err(|e| e.to_string())?;
    let classpath = CURATOR_CLASSPATH.join(":");
    let status = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&out)
        .args(["-cp", &classpath])
        .arg(root.join("benches/drivers/CuratorDriver.java"))
        .status()
        .map_err(|e| format!("javac: {e} (run `just setup`)"))?;
    if !status.success() {
        return Err("javac failed on CuratorDriver.java".into());
    }
    let mut command = Command::new("java");
    command
        .args(["-Xms256m", "-Xmx512m", "-cp"])
        .arg(format!("{classpath}:{}", out.display()))
        .arg("CuratorDriver")
        .arg(connect);
    Ok(command)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| format!("{} GiB", kb / 1024 / 1024))
        .unwrap_or_default();
    format!("{cores} cores ({cpu}), {memory}")
}

fn chart(path: &Path, scenarios: &[Scenario], results: &[Vec<Summary>]) -> Result<(), String> {
    use plotters::prelude::*;
    let root = BitMapBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let drivers: Vec<&str> = results[0].iter().map(|s| s.driver).collect();
    let ratio = |scenario: usize, driver: usize| {
        let curator = results[scenario]
            .iter()
            .find(|s| s.driver == "Curator (Java)")
            .map_or(1.0, |s| s.ops_per_sec);
        results[scenario][driver].ops_per_sec / curator
    };
    let top = (0..scenarios.len())
        .flat_map(|s| (0..drivers.len()).map(move |d| (s, d)))
        .map(|(s, d)| ratio(s, d))
        .filter(|r| r.is_finite())
        .fold(1.0f64, f64::max)
        * 1.45;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Throughput relative to Apache Curator (higher is better)",
            ("sans-serif", 24),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..scenarios.len() as f64, 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(scenarios.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (*x - 0.5).round();
            if (x - 0.5 - i).abs() < 0.01 && i >= 0.0 && (i as usize) < scenarios.len() {
                scenarios[i as usize].name.to_owned()
            } else {
                String::new()
            }
        })
        .y_desc("ops/s ÷ Curator ops/s")
        .draw()
        .map_err(|e| e.to_string())?;
    let width = 0.8 / drivers.len() as f64;
    for (d, name) in drivers.iter().enumerate() {
        let color = Palette99::pick(d).to_rgba();
        chart
            .draw_series(
                (0..scenarios.len())
                    .filter(|s| ratio(*s, d).is_finite())
                    .map(|s| {
                        let x0 = s as f64 + 0.1 + d as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + width * 0.9, ratio(s, d))], color.filled())
                    }),
            )
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn main() {
    if let Err(error) = run() {
        eprintln!("side-by-side: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--only a,b` runs just those scenarios.
    let only: Option<Vec<String>> = args
        .iter()
        .skip_while(|a| *a != "--only")
        .nth(1)
        .map(|list| list.split(',').map(str::to_owned).collect());
    // Only full runs are published.
    let write_docs = !quick && only.is_none() && !args.iter().any(|a| a == "--no-docs");
    let rounds: usize = args
        .iter()
        .skip_while(|a| *a != "--rounds")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 2 } else { 5 });
    let scale = if quick { 1 } else { 4 };
    let scenarios = [
        Scenario {
            name: "get_data",
            what: "sequential get_data of a 100-byte node",
            ops: 500 * scale,
        },
        Scenario {
            name: "pipelined_get_data",
            what: "get_data, 1,000 in flight at a time",
            ops: 1000 * scale,
        },
        Scenario {
            name: "create_delete",
            what: "sequential create + delete (one op = the pair)",
            ops: 250 * scale,
        },
        Scenario {
            name: "mutex_uncontended",
            what: "acquire + release of a free mutex (one op = the cycle)",
            ops: 100 * scale,
        },
        Scenario {
            name: "leader_handover",
            what: "leader leaves → the next participant leads (latency is the hand-over)",
            ops: 25 * scale,
        },
        Scenario {
            name: "mutex_contended",
            what: "8 sessions of one process on one mutex (one op = a hand-over)",
            ops: 100 * scale,
        },
        Scenario {
            name: "counter_8way",
            what: "8 sessions increment one atomic long (curator-rs: exactly-once writes)",
            ops: 200 * scale,
        },
        Scenario {
            name: "counter_8way_plain",
            what: "the same with plain versioned writes (Curator's and Kazoo's only kind)",
            ops: 200 * scale,
        },
        Scenario {
            name: "queue_1x1",
            what: "simple queue, 1 producer + 1 consumer session (one op = an item taken)",
            ops: 200 * scale,
        },
        Scenario {
            name: "queue_4x4",
            what: "simple queue, 4 producers + 4 consumers (one op = an item taken)",
            ops: 400 * scale,
        },
        Scenario {
            name: "cache_initial_load",
            what: "a cache (Kazoo: TreeCache) loads a 10,000-node tree (ops/s = nodes/s; latency = the load)",
            ops: TREE_NODES,
        },
        Scenario {
            name: "cache_update_latency",
            what: "set_data → the cache's listener sees the value (sequential)",
            ops: 100 * scale,
        },
    ];
    let scenarios: Vec<Scenario> = scenarios
        .into_iter()
        .filter(|s| {
            only.as_ref()
                .is_none_or(|only| only.iter().any(|o| o == s.name))
        })
        .collect();
    let workspace = workspace_root();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;

    let server;
    let connect = match std::env::var("ZK_CONNECT") {
        Ok(connect) => connect,
        Err(_) => {
            server = runtime
                .block_on(TestingServer::start_dedicated())
                .map_err(|e| e.to_string())?;
            server.connect_string()
        }
    };
    let version = runtime
        .block_on(four_letter_word(&connect, "srvr", Duration::from_secs(10)))
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .map(|l| l.trim_start_matches("Zookeeper version: ").to_owned())
        })
        .unwrap_or_else(|| "unknown".into());

    // The nodes every driver works on: one data node, one directory per driver for creates.
    let root = unique_root("side-by-side");
    let data = format!("{root}/data");
    let tree = format!("{root}/tree");
    let setup = runtime.block_on(async {
        let client = CuratorFramework::builder()
            .connect_string(&connect)
            .build()?;
        client.start().await?;
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&data, vec![7u8; 100])
            .await?;
        build_tree(&client, &tree).await?;
        Ok::<_, curator_framework::Error>(client)
    });
    let setup = setup.map_err(|e| e.to_string())?;

    let exe_dir = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    let rust_driver = |kind: &str| {
        let mut command = Command::new(exe_dir.join("bench-driver"));
        command.arg(kind).arg(&connect);
        command
    };
    let mut kazoo = Command::new("/usr/bin/python3");
    kazoo
        .arg(workspace.join("benches/drivers/kazoo_driver.py"))
        .arg(&connect);
    let mut drivers = vec![
        Driver::start("curator-rs", rust_driver("framework"))?,
        Driver::start("zookeeper-client (bare)", rust_driver("bare"))?,
        Driver::start("Curator (Java)", java_driver(&workspace, &connect)?)?,
        Driver::start("Kazoo (Python)", kazoo)?,
    ];
    for driver in &drivers {
        let dir = format!(
            "{root}/{}",
            driver.name.split_whitespace().next().unwrap_or("d")
        );
        runtime
            .block_on(async { setup.create().for_path(&dir, b"").await })
            .map_err(|e| e.to_string())?;
    }

    let started = Instant::now();
    let mut results: Vec<Vec<Summary>> = Vec::new();
    let mut raw = Vec::new();
    for scenario in &scenarios {
        let mut samples: Vec<Vec<Sample>> = drivers.iter().map(|_| Vec::new()).collect();
        for round in 0..=rounds {
            let n = drivers.len();
            for k in 0..n {
                let index = (round + k) % n;
                let driver = &mut drivers[index];
                let dir = format!(
                    "{root}/{}",
                    driver.name.split_whitespace().next().unwrap_or("d")
                );
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
                if let Some(sample) = driver.run(scenario.name, scenario.ops, &path)? {
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
                "scenario": scenario.name,
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
    let measure_memory = only
        .as_ref()
        .is_none_or(|only| only.iter().any(|o| o == "cache_memory"));
    let mut memory: Vec<(&'static str, Option<u64>)> = Vec::new();
    if measure_memory {
        let kinds: [(&'static str, &CommandFn); 3] = [
            ("curator-rs", &|| Ok(rust_driver("framework"))),
            ("Curator (Java)", &|| java_driver(&workspace, &connect)),
            ("Kazoo (Python)", &|| {
                let mut kazoo = Command::new("/usr/bin/python3");
                kazoo
                    .arg(workspace.join("benches/drivers/kazoo_driver.py"))
                    .arg(&connect);
                Ok(kazoo)
            }),
        ];
        for (name, command) in kinds {
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
    let took = started.elapsed();
    drop(drivers);
    let _ = runtime.block_on(async {
        setup
            .delete()
            .deleting_children_if_needed()
            .for_path(&root)
            .await
    });

    // The report.
    let date = Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut report = String::new();
    report.push_str(&format!(
        "Run of {date}: {}; ZooKeeper {version} on loopback; {rounds} measured rounds per driver after one warm-up, \
         driver order rotating; {} mode; took {:.0} s.\n\n",
        machine(),
        if quick { "quick" } else { "full" },
        took.as_secs_f64()
    ));
    report.push_str("| scenario | driver | ops/s (median) | p50 µs | p99 µs |\n| --- | --- | ---: | ---: | ---: |\n");
    for (scenario, summaries) in scenarios.iter().zip(&results) {
        for s in summaries {
            if s.ops_per_sec.is_nan() {
                report.push_str(&format!(
                    "| {} ({}) | {} | n/a | n/a | n/a |\n",
                    scenario.name, scenario.ops, s.driver
                ));
                continue;
            }
            report.push_str(&format!(
                "| {} ({}) | {} | {:.0} | {:.0} | {:.0} |\n",
                scenario.name, scenario.ops, s.driver, s.ops_per_sec, s.p50_us, s.p99_us
            ));
        }
    }
    report.push_str("\n| scenario | what | curator-rs / Curator | curator-rs / Kazoo | curator-rs / bare client |\n| --- | --- | ---: | ---: | ---: |\n");
    for (scenario, summaries) in scenarios.iter().zip(&results) {
        let rate = |name: &str| {
            summaries
                .iter()
                .find(|s| s.driver == name)
                .map_or(f64::NAN, |s| s.ops_per_sec)
        };
        let ours = rate("curator-rs");
        report.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            scenario.name,
            scenario.what,
            ratio_text(ours / rate("Curator (Java)")),
            ratio_text(ours / rate("Kazoo (Python)")),
            ratio_text(ours / rate("zookeeper-client (bare)"))
        ));
    }
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
            bytes("curator-rs"),
            bytes("Curator (Java)"),
            bytes("Kazoo (Python)"),
            bytes("curator-rs") / bytes("Curator (Java)"),
            bytes("curator-rs") / bytes("Kazoo (Python)"),
        ));
    }
    println!("{report}");

    let bench_dir = workspace.join("target/bench");
    std::fs::create_dir_all(&bench_dir).map_err(|e| e.to_string())?;
    let json = serde_json::json!({ "date": date, "machine": machine(), "zookeeper": version, "results": raw });
    std::fs::write(bench_dir.join("side-by-side.json"), json.to_string())
        .map_err(|e| e.to_string())?;
    let png = if write_docs {
        workspace.join("docs/benchmarks-side-by-side.png")
    } else {
        bench_dir.join("side-by-side.png")
    };
    chart(&png, &scenarios, &results)?;
    println!(
        "chart: {}\nraw samples: {}",
        png.display(),
        bench_dir.join("side-by-side.json").display()
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
