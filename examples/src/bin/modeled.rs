//! A typed model (`Modeled`): nodes at a path template (`/users/{id}`) hold serde values, read
//! and written as values, never bytes; a cached view answers reads from memory once loaded.
//!
//! ```text
//! cargo run -p curator-examples --bin modeled
//! ```

use clap::Parser;
use curator_examples::{Result, ZooKeeper};
use curator_modeled::{ModelSpec, Modeled, Parents, ZPath};
use serde::{Deserialize, Serialize};

/// Users stored as JSON models, read directly and through a cache.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// Where the models live (the template is `<path>/{id}`)
    #[arg(long, default_value = "/examples/modeled")]
    path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct User {
    name: String,
    admin: bool,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;
    let client = server.client().await?;
    let spec = ModelSpec::<User>::builder(ZPath::parse(&format!("{}/{{id}}", args.path))?)
        .parents(Parents::Persistent)
        .build()?;
    let users = Modeled::new(client.clone(), spec);

    let ada = users.resolve(["ada"])?;
    ada.set(&User {
        name: "Ada".into(),
        admin: false,
    })
    .await?;
    users
        .resolve(["grace"])?
        .set(&User {
            name: "Grace".into(),
            admin: true,
        })
        .await?;
    // A versioned update: refused if someone else changed the node since it was read.
    let read = ada.read_as_znode().await?;
    let promoted = User {
        admin: true,
        ..read.model.clone()
    };
    ada.update_with_version(&promoted, read.stat.version)
        .await?;
    println!("ada: {:?}", ada.read().await?);

    // The cached view: reads wait for the initial load, then come from memory.
    let cached = users.cached()?;
    cached.start().await?;
    cached.initialized().await?;
    for user in cached.list().await? {
        println!("{} -> {:?}", user.path, user.model);
    }
    cached.close().await?;

    client.close().await?;
    server.remove(&[&args.path]).await?;
    Ok(())
}
