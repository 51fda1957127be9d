//! Queue throughput against the size of its backlog: fills a `SimpleDistributedQueue` with N
//! items (pipelined offers), measures put and take throughput over a window of operations at
//! that backlog, then drains it with competing consumers. Connects to `ZK_CONNECT`, or starts
//! a ZooKeeper server of its own with a 2 GiB heap (a million nodes need several hundred MiB).
//!
//! ```text
//! cargo run --release -p curator-queues --example backlog -- 100000
//! cargo run --release -p curator-queues --example backlog -- 100000 --flat
//! cargo run --release -p curator-queues --example backlog -- 1000000 --capacity 10000 --window 2000
//! ```
//!
//! Prints one line per run, `layout=… backlog=… fill_ops_s=… put_ops_s=… take_ops_s=…
//! drain_ops_s=…` (or `error=…` where the layout failed). Put and take in the window are
//! sequential (one operation in flight: the latency-bound rate of one producer or consumer);
//! the fill runs 256 offers in flight over 4 sessions, the drain 4 consumers.

use std::time::{Duration, Instant};

use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_queues::SimpleDistributedQueue;
use curator_test::{TestingServer, unique_root};
use futures::StreamExt;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

struct Args {
    backlog: usize,
    capacity: usize,
    window: usize,
    flat: bool,
    drain: bool,
}

fn args() -> Result<Args> {
    let mut args = Args {
        backlog: 1000,
        capacity: 10_000,
        window: 2000,
        flat: false,
        drain: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--flat" => args.flat = true,
            "--no-drain" => args.drain = false,
            "--capacity" => args.capacity = it.next().ok_or("--capacity needs a value")?.parse()?,
            "--window" => args.window = it.next().ok_or("--window needs a value")?.parse()?,
            n => args.backlog = n.replace('_', "").parse()?,
        }
    }
    Ok(args)
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
    let args = args()?;
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
    let path = unique_root("backlog");
    let c = client(&connect).await?;
    let q = queue(c.clone(), &path, &args)?;
    let layout = if args.flat {
        "flat".to_owned()
    } else {
        format!("bucketed({})", args.capacity)
    };
    print!(
        "layout={layout} backlog={} window={}",
        args.backlog, args.window
    );

    // Fill: 4 sessions with 64 offers in flight each.
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&connect).await?);
    }
    let fillers = clients
        .iter()
        .map(|c| queue(c.clone(), &path, &args))
        .collect::<Result<Vec<_>>>()?;
    // Warm-up (a fresh server's JIT would otherwise make small backlogs look slow): 10,000
    // offers and takes on another path, not measured.
    let warm = unique_root("backlog-warm-up");
    let warm_queues = clients
        .iter()
        .map(|c| queue(c.clone(), &warm, &args))
        .collect::<Result<Vec<_>>>()?;
    let mut offers = futures::stream::iter(0..10_000usize)
        .map(|i| {
            let q = &warm_queues[i % warm_queues.len()];
            async move { q.offer(b"warm-up").await }
        })
        .buffer_unordered(256);
    while let Some(offered) = offers.next().await {
        offered?;
    }
    drop(offers);
    while warm_queues[0].poll().await?.is_some() {}
    let started = Instant::now();
    let mut offers = futures::stream::iter(0..args.backlog)
        .map(|i| {
            let q = &fillers[i % fillers.len()];
            async move { q.offer(format!("item-{i:08}").as_bytes()).await }
        })
        .buffer_unordered(256);
    while let Some(offered) = offers.next().await {
        offered?;
    }
    drop(offers);
    print!(" fill_ops_s={}", rate(args.backlog, started.elapsed()));

    // Put window: one offer at a time, at a backlog of `backlog`.
    let started = Instant::now();
    for i in 0..args.window {
        q.offer(format!("window-{i:08}").as_bytes()).await?;
    }
    print!(" put_ops_s={}", rate(args.window, started.elapsed()));

    // Take window: one take at a time, from a fresh handle (its first take lists).
    let taker = queue(c.clone(), &path, &args)?;
    let started = Instant::now();
    for _ in 0..args.window {
        match tokio::time::timeout(Duration::from_secs(60), taker.take()).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                println!(" take_error={error:?}");
                return Ok(());
            }
            Err(_) => {
                println!(" take_error=no-item-within-60s");
                return Ok(());
            }
        }
    }
    print!(" take_ops_s={}", rate(args.window, started.elapsed()));

    if args.drain {
        // Drain: 4 competing consumers on their own sessions.
        let started = Instant::now();
        let mut consumers = Vec::new();
        for _ in 0..4 {
            let q = queue(client(&connect).await?, &path, &args)?;
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
    }
    println!();
    c.close().await;
    Ok(())
}
