//! Queue throughput against the size of its backlog: fills a `SimpleDistributedQueue` with N
//! items (pipelined offers), measures put and take throughput over a window of operations at
//! that backlog, then drains it with competing consumers. Connects to `ZK_CONNECT`, or starts
//! a ZooKeeper server of its own with a 2 GiB heap (a million nodes need several hundred MiB).
//!
//! ```text
//! cargo run --release -p curator-queues --example backlog -- 100000
//! cargo run --release -p curator-queues --example backlog -- 100000 --flat
//! cargo run --release -p curator-queues --example backlog -- 1000000 --capacity 10000 --window 2000
//! cargo run --release -p curator-queues --example backlog -- 1000,100000,1000000 --rounds 20 --window 500
//! ```
//!
//! With several backlogs (a comma-separated list), every backlog's queue is filled first and the
//! windows then run in rounds, a window of puts and as many takes on each queue in turn (the
//! order rotating): the machine's drift over minutes (GC, snapshots, neighbours) hits every
//! backlog alike, so what differs between them is what a queue's own size costs. It prints, per
//! backlog, the median put and take rates over the rounds (and their lowest and highest), then
//! `spread`: the highest median over the lowest, for puts and for takes. All the queues live on
//! the server together throughout.
//!
//! Prints one line per run, `layout=… backlog=… fill_ops_s=… put_ops_s=… take_ops_s=…
//! drain_ops_s=…` (or `error=…` where the layout failed). Put and take in the window are
//! sequential (one operation in flight: the latency-bound rate of one producer or consumer);
//! the fill runs 256 offers in flight over 4 sessions, the drain 4 consumers.

use std::time::{Duration, Instant};

use clap::Parser;
use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_queues::SimpleDistributedQueue;
use curator_test::{TestingServer, unique_root};
use futures::StreamExt;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Queue throughput against the size of its backlog: fills a SimpleDistributedQueue with N items,
/// measures put and take throughput at that backlog, then drains it. Connects to ZK_CONNECT, or
/// starts a ZooKeeper server of its own (2 GiB heap).
#[derive(Debug, Parser)]
#[command(name = "backlog")]
struct Args {
    /// One backlog, or several (comma-separated, underscores allowed: 1_000,100_000) measured in
    /// interleaved rounds.
    #[arg(value_name = "N,...", value_delimiter = ',', value_parser = count, default_value = "1000")]
    backlogs: Vec<usize>,
    /// Rounds of windows (with several backlogs).
    #[arg(long, default_value_t = 10, value_parser = at_least_one)]
    rounds: usize,
    /// Items per bucket of the bucketed layout.
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one)]
    capacity: usize,
    /// Puts (and as many takes) per window.
    #[arg(long, default_value_t = 2000, value_parser = at_least_one)]
    window: usize,
    /// Measure the flat layout instead of the bucketed one.
    #[arg(long)]
    flat: bool,
    /// Leave the backlog on the server instead of draining it.
    #[arg(long = "no-drain", action = clap::ArgAction::SetFalse)]
    drain: bool,
}

/// A count, with optional `_` separators.
fn count(text: &str) -> std::result::Result<usize, String> {
    text.replace('_', "").parse().map_err(|e| format!("{e}"))
}

/// A count of at least 1.
fn at_least_one(text: &str) -> std::result::Result<usize, String> {
    match count(text)? {
        0 => Err("must be at least 1".to_owned()),
        n => Ok(n),
    }
}

async fn client(connect: &str) -> Result<CuratorFramework> {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(Duration::from_secs(30))
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.start().await?;
    Ok(client)
}

fn queue(client: CuratorFramework, path: &str, args: &Args) -> Result<SimpleDistributedQueue> {
    let builder = SimpleDistributedQueue::builder(client, path);
    let builder = if args.flat {
        builder
    } else {
        builder.bucketed(args.capacity)
    };
    Ok(builder.build()?)
}

fn rate(ops: usize, elapsed: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let ops = ops as f64;
    (ops / elapsed.as_secs_f64()).round()
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server;
    let connect = match std::env::var("ZK_CONNECT") {
        Ok(connect) => connect,
        Err(_) => {
            server = TestingServer::builder()
                .jvm_arg("-Xmx2g")
                .jvm_arg("-Xms1g")
                .start()
                .await?;
            server.connect_string()
        }
    };
    let c = client(&connect).await?;
    let layout = if args.flat {
        "flat".to_owned()
    } else {
        format!("bucketed({})", args.capacity)
    };
    // Fill: 4 sessions with 64 offers in flight each.
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&connect).await?);
    }
    warm_up(&clients, &args).await?;
    if let [backlog] = args.backlogs[..] {
        print!("layout={layout} backlog={backlog} window={}", args.window);
        let path = unique_root("backlog");
        let started = Instant::now();
        fill(&clients, &path, backlog, &args).await?;
        print!(" fill_ops_s={}", rate(backlog, started.elapsed()));
        let q = queue(c.clone(), &path, &args)?;
        print!(" put_ops_s={}", put_window(&q, args.window).await?);
        // From a fresh handle (its first take lists).
        let taker = queue(c.clone(), &path, &args)?;
        match take_window(&taker, args.window).await? {
            Ok(rate) => print!(" take_ops_s={rate}"),
            Err(error) => {
                println!(" take_error={error}");
                return Ok(());
            }
        }
        if args.drain {
            drain(&connect, &path, &args).await?;
        }
        println!();
    } else {
        interleaved(&c, &clients, &layout, &args).await?;
    }
    c.close().await?;
    Ok(())
}

/// 10,000 offers and takes on a path of their own, not measured: a fresh server's JIT would
/// otherwise make the first backlog measured look slow.
async fn warm_up(clients: &[CuratorFramework], args: &Args) -> Result {
    let warm = unique_root("backlog-warm-up");
    fill(clients, &warm, 10_000, args).await?;
    let q = queue(clients[0].clone(), &warm, args)?;
    while q.poll().await?.is_some() {}
    Ok(())
}

/// Offers `n` items to the queue at `path`, 64 in flight on each of `clients`.
async fn fill(clients: &[CuratorFramework], path: &str, n: usize, args: &Args) -> Result {
    let fillers = clients
        .iter()
        .map(|c| queue(c.clone(), path, args))
        .collect::<Result<Vec<_>>>()?;
    let mut offers = futures::stream::iter(0..n)
        .map(|i| {
            let q = &fillers[i % fillers.len()];
            async move { q.offer(format!("item-{i:08}").as_bytes()).await }
        })
        .buffer_unordered(256);
    while let Some(offered) = offers.next().await {
        offered?;
    }
    Ok(())
}

/// `n` offers, one at a time: the rate.
async fn put_window(q: &SimpleDistributedQueue, n: usize) -> Result<f64> {
    let started = Instant::now();
    for i in 0..n {
        q.offer(format!("window-{i:08}").as_bytes()).await?;
    }
    Ok(rate(n, started.elapsed()))
}

/// `n` takes, one at a time: the rate, or why a take failed (an error, or no item in 60 s).
async fn take_window(
    q: &SimpleDistributedQueue,
    n: usize,
) -> Result<std::result::Result<f64, String>> {
    let started = Instant::now();
    for _ in 0..n {
        match tokio::time::timeout(Duration::from_secs(60), q.take()).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Ok(Err(format!("{error:?}"))),
            Err(_) => return Ok(Err("no-item-within-60s".into())),
        }
    }
    Ok(Ok(rate(n, started.elapsed())))
}

/// Drains the queue at `path` with 4 competing consumers on their own sessions.
async fn drain(connect: &str, path: &str, args: &Args) -> Result {
    let started = Instant::now();
    let mut consumers = Vec::new();
    for _ in 0..4 {
        let q = queue(client(connect).await?, path, args)?;
        consumers.push(tokio::spawn(async move {
            let mut n = 0usize;
            while q.poll().await?.is_some() {
                n += 1;
            }
            Ok::<_, curator_framework::Error>(n)
        }));
    }
    let mut drained = 0;
    for consumer in consumers {
        drained += consumer.await??;
    }
    print!(
        " drained={drained} drain_ops_s={}",
        rate(drained, started.elapsed())
    );
    Ok(())
}

/// Fills a queue per backlog, then measures a put window and a take window on each in turn,
/// `rounds` times (the order rotating), and prints each backlog's median rates and the spread.
async fn interleaved(
    c: &CuratorFramework,
    clients: &[CuratorFramework],
    layout: &str,
    args: &Args,
) -> Result {
    let mut queues = Vec::new();
    for &backlog in &args.backlogs {
        let path = unique_root(&format!("backlog-{backlog}"));
        let started = Instant::now();
        fill(clients, &path, backlog, args).await?;
        println!(
            "layout={layout} backlog={backlog} fill_ops_s={}",
            rate(backlog, started.elapsed())
        );
        queues.push((backlog, queue(c.clone(), &path, args)?));
    }
    let mut puts = vec![Vec::new(); queues.len()];
    let mut takes = vec![Vec::new(); queues.len()];
    for round in 0..args.rounds {
        for turn in 0..queues.len() {
            let at = (round + turn) % queues.len();
            let q = &queues[at].1;
            puts[at].push(put_window(q, args.window).await?);
            match take_window(q, args.window).await? {
                Ok(rate) => takes[at].push(rate),
                Err(error) => {
                    println!("backlog={} take_error={error}", queues[at].0);
                    return Ok(());
                }
            }
        }
    }
    let mut put_medians = Vec::new();
    let mut take_medians = Vec::new();
    for (at, (backlog, _)) in queues.iter().enumerate() {
        let (put, take) = (summary(&mut puts[at]), summary(&mut takes[at]));
        println!(
            "layout={layout} backlog={backlog} window={} rounds={} put_ops_s={} (lowest {}, highest {}) take_ops_s={} (lowest {}, highest {})",
            args.window, args.rounds, put.0, put.1, put.2, take.0, take.1, take.2
        );
        put_medians.push(put.0);
        take_medians.push(take.0);
    }
    println!(
        "spread put={:.2} take={:.2}",
        spread(&put_medians),
        spread(&take_medians)
    );
    Ok(())
}

/// The median, lowest and highest of `rates`.
fn summary(rates: &mut [f64]) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = if n % 2 == 1 {
        rates[n / 2]
    } else {
        ((rates[n / 2 - 1] + rates[n / 2]) / 2.0).round()
    };
    (median, rates[0], rates[n - 1])
}

/// The highest of `values` over the lowest.
fn spread(values: &[f64]) -> f64 {
    let highest = values.iter().copied().fold(f64::MIN, f64::max);
    let lowest = values.iter().copied().fold(f64::MAX, f64::min);
    highest / lowest
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::Args;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once(&"backlog").chain(args))
    }

    #[test]
    fn arguments_are_checked() {
        Args::command().debug_assert();
        let args =
            parse(&["1_000,100000", "--flat", "--no-drain", "--rounds", "3"]).expect("valid");
        assert_eq!(args.backlogs, [1000, 100_000]);
        assert!(args.flat && !args.drain);
        assert_eq!(args.rounds, 3);
        let args = parse(&[]).expect("defaults");
        assert_eq!(args.backlogs, [1000]);
        assert!(!args.flat && args.drain);
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            ErrorKind::DisplayHelp
        );
        for bad in [
            &["--rounds", "abc"][..],
            &["--window", "0"],
            &["--capacity", "-1"],
            &["1000,x"],
            &["--qiuck"],
        ] {
            let error = parse(bad).expect_err("refused");
            assert_eq!(error.exit_code(), 2, "{bad:?}: {error}");
        }
    }
}
