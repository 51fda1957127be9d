//! Leader election with a `LeaderSelector`: each participant runs a task while it leads; when
//! the task returns, leadership passes on, and with `auto_requeue` the participant queues again.
//! The task stops at once when its leadership is lost (`context.lost()`).
//!
//! ```text
//! cargo run -p curator-examples --bin leader_selector -- --participants 2 --turns 6
//! ```

use std::time::Duration;

use clap::Parser;
use curator_election::LeaderSelector;
use curator_examples::{Result, ZooKeeper};
use tokio::sync::mpsc;

/// Participants take turns leading, each turn a short task.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The election's path
    #[arg(long, default_value = "/examples/leader-selector")]
    path: String,
    /// How many participants take part
    #[arg(long, default_value_t = 2)]
    participants: usize,
    /// How many leaderships to watch before stopping
    #[arg(long, default_value_t = 6)]
    turns: usize,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let (turns_tx, mut turns) = mpsc::unbounded_channel();
    let mut selectors = Vec::new();
    for participant in 0..args.participants {
        let turns_tx = turns_tx.clone();
        let selector = LeaderSelector::builder(
            server.client().await?,
            &args.path,
            format!("participant-{participant}"),
            move |context| {
                let turns_tx = turns_tx.clone();
                async move {
                    let _ = turns_tx.send((participant, context.epoch()));
                    tokio::select! {
                        () = context.lost() => println!("participant-{participant} lost leadership"),
                        // The leader's work; returning gives leadership up.
                        () = tokio::time::sleep(Duration::from_millis(50)) => {}
                    }
                }
            },
        )
        .auto_requeue()
        .build()?;
        selector.start().await?;
        selectors.push(selector);
    }
    for _ in 0..args.turns {
        let (participant, epoch) = turns.recv().await.expect("the selectors run");
        println!("participant-{participant} leads (epoch {epoch:#x})");
    }
    for selector in &selectors {
        selector.close().await?;
    }
    server.remove(&[&args.path]).await?;
    println!("{} leaderships, one at a time", args.turns);
    Ok(())
}
