//! Leader election with a `LeaderLatch`: participants join one election, exactly one leads;
//! when the leader leaves, the next in line leads, until the last one is left.
//!
//! ```text
//! cargo run -p curator-examples --bin leader_latch -- --participants 3
//! ```

use clap::Parser;
use curator_election::LeaderLatch;
use curator_examples::{Result, ZooKeeper};

/// Participants hand leadership on, one leaving after another.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The election's path
    #[arg(long, default_value = "/examples/leader-latch")]
    path: String,
    /// How many participants join the election
    #[arg(long, default_value_t = 3)]
    participants: usize,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let mut latches = Vec::new();
    for participant in 0..args.participants {
        let latch = LeaderLatch::builder(
            server.client().await?,
            &args.path,
            format!("participant-{participant}"),
        )
        .build()?;
        latch.start().await?;
        latches.push(latch);
    }
    while !latches.is_empty() {
        // Wait until one of them leads (each latch's `await_leadership` resolves when it does).
        let waits = latches
            .iter()
            .map(|latch| Box::pin(latch.await_leadership()));
        let (led, leader, _) = futures::future::select_all(waits).await;
        led?;
        let latch = latches.remove(leader);
        let hold = latch.hold().expect("a leader holds");
        println!(
            "{} leads (epoch {:#x}); {} waiting",
            latch.id(),
            hold.fencing_token(),
            latches.len()
        );
        // The leader leaves: its node goes, and the next participant leads.
        latch.close().await?;
        println!("{} left", latch.id());
    }
    server.remove(&[&args.path]).await?;
    Ok(())
}
