//! A transaction: several writes that apply together or not at all. The second one fails its
//! version check, and none of its steps is applied. The third is guarded by a lock: it commits
//! only while the lock's node exists on the holder's session, checked by the server itself.
//!
//! ```text
//! cargo run -p curator-examples --bin transaction
//! ```

use clap::Parser;
use curator_examples::{Result, ZooKeeper};
use curator_framework::Error;
use curator_framework::ops::transaction::TransactionResult;
use curator_locks::InterProcessMutex;

/// All-or-nothing writes, plain and guarded by a lock.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// Where the example's nodes go
    #[arg(long, default_value = "/examples/transaction")]
    path: String,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let client = server.client().await?;
    let (balance, audit) = (
        format!("{}/balance", args.path),
        format!("{}/audit", args.path),
    );
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&balance, b"100")
        .await?;
    client.create().for_path(&audit, b"").await?;

    // Applied together: a new audit entry, the balance written, the audit node unchanged.
    let results = client
        .transaction()
        .create(&format!("{audit}/entry-1"), b"-30")
        .set_data(&balance, b"70")
        .check(&audit, 0)
        .commit()
        .await?;
    for result in &results {
        match result {
            TransactionResult::Create { path, .. } => println!("created {path}"),
            TransactionResult::SetData { stat } => println!("balance now version {}", stat.version),
            TransactionResult::Check => println!("audit node unchanged"),
            _ => {}
        }
    }

    // Not applied at all: the balance is no longer at version 0.
    let stale = client
        .transaction()
        .create(&format!("{audit}/entry-2"), b"-50")
        .set_data(&balance, b"50")
        .check(&balance, 0)
        .commit()
        .await;
    match stale {
        Err(Error::Transaction { index, cause }) => {
            println!("refused at step {index} ({cause}): nothing applied");
        }
        other => return Err(format!("expected a refused transaction, got {other:?}").into()),
    }
    let (data, _) = client.get_data().for_path(&balance).await?;
    println!("balance: {}", String::from_utf8_lossy(&data));

    // Guarded by a lock: commits only while this client holds it.
    let lock =
        InterProcessMutex::builder(client.clone(), &format!("{}-lock", args.path)).build()?;
    let guard = lock.acquire().await?;
    client
        .transaction()
        .guarded_by(&guard)
        .set_data(&balance, b"60")
        .create(&format!("{audit}/entry-3"), b"-10")
        .commit()
        .await?;
    println!(
        "guarded write committed under fencing token {}",
        guard.fencing_token()
    );
    guard.release().await?;

    client.close().await?;
    server
        .remove(&[&args.path, &format!("{}-lock", args.path)])
        .await?;
    Ok(())
}
