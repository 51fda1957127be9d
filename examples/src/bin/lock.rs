//! A lock (`InterProcessMutex`): workers, each with its own client as separate processes would
//! have, take turns holding one lock. A holder passes its fencing token to what it protects and
//! stops as soon as its hold may be lost.
//!
//! ```text
//! cargo run -p curator-examples --bin lock -- --workers 3
//! ```

use std::time::Duration;

use clap::Parser;
use curator_examples::{Result, ZooKeeper};
use curator_locks::InterProcessMutex;

/// Workers take turns holding one lock.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The lock's path
    #[arg(long, default_value = "/examples/lock")]
    path: String,
    /// How many workers contend for the lock
    #[arg(long, default_value_t = 3)]
    workers: usize,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let mut workers = Vec::new();
    for worker in 0..args.workers {
        let client = server.client().await?;
        let mutex = InterProcessMutex::builder(client.clone(), &args.path).build()?;
        workers.push(tokio::spawn(async move {
            let guard = mutex.acquire().await?;
            println!(
                "worker {worker} holds the lock (fencing token {})",
                guard.fencing_token()
            );
            tokio::select! {
                // Connection trouble: someone else may hold the lock now. Stop at once.
                () = guard.lost() => println!("worker {worker} lost the lock"),
                // The protected work, handing guard.fencing_token() to what it writes.
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            guard.release().await?;
            println!("worker {worker} released the lock");
            client.close().await?;
            Ok::<_, curator_framework::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    server.remove(&[&args.path]).await?;
    println!("every worker held the lock once");
    Ok(())
}
