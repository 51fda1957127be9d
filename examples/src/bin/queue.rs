//! A queue (`DistributedQueue`): a producer puts typed jobs, a consumer in another client takes
//! them in order, one at a time. With `--lock-safe`, a consumer that dies mid-job loses
//! nothing: the job is deleted only after it was processed.
//!
//! ```text
//! cargo run -p curator-examples --bin queue -- --jobs 5 --lock-safe
//! ```

use clap::Parser;
use curator_examples::{Result, ZooKeeper};
use curator_queues::DistributedQueue;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// A producer and a consumer share a queue of jobs.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The queue's path
    #[arg(long, default_value = "/examples/queue")]
    path: String,
    /// How many jobs to put
    #[arg(long, default_value_t = 5)]
    jobs: u32,
    /// Consume lock-safely (at least once: a job is deleted after it was processed)
    #[arg(long)]
    lock_safe: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job {
    id: u32,
    task: String,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;

    let (done_tx, mut done) = mpsc::unbounded_channel();
    let mut consumer = DistributedQueue::<Job>::builder(server.client().await?, &args.path)
        .consumer(move |job: Job| {
            let done_tx = done_tx.clone();
            async move {
                println!("consumed job {}: {}", job.id, job.task);
                let _ = done_tx.send(job.id);
                Ok::<_, std::io::Error>(())
            }
        });
    if args.lock_safe {
        consumer = consumer.lock_path(&format!("{}-locks", args.path));
    }
    let consumer = consumer.build()?;
    consumer.start().await?;

    let producer = DistributedQueue::<Job>::builder(server.client().await?, &args.path).build()?;
    producer.start().await?;
    for id in 0..args.jobs {
        producer
            .put(&Job {
                id,
                task: format!("resize image {id}"),
            })
            .await?;
    }
    println!("put {} jobs", args.jobs);
    for _ in 0..args.jobs {
        done.recv().await.expect("the consumer runs");
    }
    producer.close().await?;
    consumer.close().await?;

    server
        .remove(&[&args.path, &format!("{}-locks", args.path)])
        .await?;
    println!("every job consumed once");
    Ok(())
}
