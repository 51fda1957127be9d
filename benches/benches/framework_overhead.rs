//! The framework's overhead over its bare session layer (curator-session), on one real
//! ZooKeeper server, in one run.
//!
//! ```text
//! cargo bench -p curator-benches --bench framework_overhead [-- --quick]
//! ```

use std::time::Duration;

use curator_benches::harness::server_or_env;
use curator_benches::{median, rate, time};
use curator_framework::CuratorFramework;
use curator_framework::retry::RetryNTimes;
use curator_session::proto::CreateMode;
use curator_session::{Session, SessionConfig, open_acl};
use curator_test::{TestingServer, unique_root};
use futures::future::join_all;

struct Scenario {
    name: &'static str,
    ops: usize,
}

/// The framework's overhead over its bare session layer (curator-session), on one real
/// ZooKeeper server (started here unless ZK_CONNECT names one): sequential get_data, 1,000
/// pipelined get_data, sequential create + delete. Run through
/// `cargo bench -p curator-benches --bench framework_overhead -- [OPTIONS]`.
#[derive(Debug, clap::Parser)]
#[command(name = "framework_overhead", bin_name = "framework_overhead")]
struct Args {
    /// A short run: a quarter of the operations, 3 rounds.
    #[arg(long)]
    quick: bool,
    /// Measured rounds [default: 9; 3 with --quick].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    rounds: Option<u16>,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; test runners list or run bench targets without it (and
    // with their own flags, which are not this program's).
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let args = <Args as clap::Parser>::parse();
    let quick = args.quick;
    let rounds = args.rounds.map_or(if quick { 3 } else { 9 }, usize::from);
    let scale = if quick { 1 } else { 4 };

    let (_server, connect) = server_or_env(TestingServer::start_dedicated())
        .await
        .expect("a ZooKeeper server (run `just setup`)");
    let framework = CuratorFramework::builder()
        .connect_string(&connect)
        .retry_policy(RetryNTimes::new(3, Duration::from_millis(100)))
        .build()
        .unwrap();
    framework.start().await.unwrap();
    framework
        .block_until_connected(Duration::from_secs(30))
        .await
        .unwrap();
    let bare = Session::connect(SessionConfig::new(&connect).unwrap())
        .await
        .unwrap();

    let root = unique_root("bench");
    framework
        .create()
        .creating_parents_if_needed()
        .for_path(&root, vec![7u8; 100])
        .await
        .unwrap();
    let data_node = root.clone();

    let scenarios = [
        Scenario {
            name: "sequential get_data",
            ops: 500 * scale,
        },
        Scenario {
            name: "pipelined get_data (1,000 in flight)",
            ops: 1000 * scale,
        },
        Scenario {
            name: "sequential create + delete",
            ops: 250 * scale,
        },
    ];

    println!("ZooKeeper at {connect}; {rounds} rounds per driver, alternating; medians\n");
    println!("| scenario | framework ops/s | bare curator-session ops/s | framework / bare |");
    println!("| --- | ---: | ---: | ---: |");
    for (index, scenario) in scenarios.iter().enumerate() {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for round in 0..=rounds {
            let run_ours = || async {
                match index {
                    0 => {
                        for _ in 0..scenario.ops {
                            framework.get_data().for_path(&data_node).await.unwrap();
                        }
                    }
                    1 => {
                        for _ in 0..scenario.ops / 1000 {
                            let futures: Vec<_> = (0..1000)
                                .map(|_| framework.get_data().for_path(&data_node).into_future())
                                .collect();
                            for result in join_all(futures).await {
                                result.unwrap();
                            }
                        }
                    }
                    _ => {
                        for i in 0..scenario.ops {
                            let path = format!("{root}/n{i}");
                            framework.create().for_path(&path, b"x").await.unwrap();
                            framework.delete().for_path(&path).await.unwrap();
                        }
                    }
                }
            };
            let run_bare = || async {
                match index {
                    0 => {
                        for _ in 0..scenario.ops {
                            bare.get_data(&data_node).await.unwrap();
                        }
                    }
                    1 => {
                        for _ in 0..scenario.ops / 1000 {
                            let futures: Vec<_> =
                                (0..1000).map(|_| bare.get_data(&data_node)).collect();
                            for result in join_all(futures).await {
                                result.unwrap();
                            }
                        }
                    }
                    _ => {
                        for i in 0..scenario.ops {
                            let path = format!("{root}/b{i}");
                            bare.create(&path, b"x", open_acl(), CreateMode::Persistent, None)
                                .await
                                .unwrap();
                            bare.delete(&path, -1).await.unwrap();
                        }
                    }
                }
            };
            // Round 0 warms up both and is discarded; then the order alternates.
            let (a, b) = if round % 2 == 0 {
                let a = time(run_ours).await;
                (a, time(run_bare).await)
            } else {
                let b = time(run_bare).await;
                (time(run_ours).await, b)
            };
            if round > 0 {
                ours.push(a);
                theirs.push(b);
            }
        }
        let (ours, theirs) = (
            rate(scenario.ops, median(&mut ours)),
            rate(scenario.ops, median(&mut theirs)),
        );
        println!(
            "| {} | {ours:.0} | {theirs:.0} | {:.2} |",
            scenario.name,
            ours / theirs
        );
    }
    framework
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await
        .unwrap();
    framework.close().await.unwrap();
    bare.close().await.unwrap();
}
