//! Service discovery: service instances register themselves (ephemeral nodes that the
//! discovery keeps through connection loss and session expiry), and a client finds them through
//! a provider that picks one at a time and skips instances reported down.
//!
//! ```text
//! cargo run -p curator-examples --bin discovery -- --instances 3
//! ```

use clap::Parser;
use curator_discovery::{ServiceDiscovery, ServiceInstance};
use curator_examples::{Result, ZooKeeper};
use serde::{Deserialize, Serialize};

/// Instances of a service register; a client picks among them.
#[derive(Parser)]
struct Args {
    #[command(flatten)]
    zookeeper: ZooKeeper,
    /// The discovery's base path
    #[arg(long, default_value = "/examples/discovery")]
    path: String,
    /// How many instances of the service register
    #[arg(long, default_value_t = 3)]
    instances: u16,
}

/// What each instance says about itself (its payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Details {
    zone: String,
}

#[tokio::main]
async fn main() -> Result {
    let args = Args::parse();
    let server = args.zookeeper.connect().await?;

    // Each instance: its own process (client), registering itself at start.
    let mut instances = Vec::new();
    for i in 0..args.instances {
        let me = ServiceInstance::builder("api")
            .id(format!("api-{i}"))
            .address("10.0.0.7")
            .port(8080 + i)
            .payload(Details {
                zone: format!("zone-{}", i % 2),
            })
            .build()?;
        let discovery = ServiceDiscovery::builder(server.client().await?, &args.path)
            .payload_type::<Details>()
            .this_instance(me)
            .build()?;
        discovery.start().await?;
        instances.push(discovery);
    }

    // A client of the service.
    let discovery = ServiceDiscovery::builder(server.client().await?, &args.path)
        .payload_type::<Details>()
        .build()?;
    discovery.start().await?;
    println!("services: {:?}", discovery.query_for_names().await?);
    let provider = discovery.service_provider_builder("api").build()?;
    provider.start().await?;
    for _ in 0..args.instances {
        let instance = provider.get_instance().expect("registered instances");
        let zone = instance.payload().map(|details| details.zone.as_str());
        println!(
            "calling {} at {}:{} in {}",
            instance.id(),
            instance.address().unwrap_or("?"),
            instance.port().unwrap_or(0),
            zone.unwrap_or("?")
        );
    }
    // An instance that stops answering: report it, and the provider skips it for a while.
    let failing = provider.get_instance().expect("registered instances");
    provider.note_error(&failing);
    provider.note_error(&failing);
    println!(
        "{} reported down; {} instances left to pick from",
        failing.id(),
        provider.get_all_instances().len()
    );

    provider.close().await?;
    discovery.close().await?;
    for instance in instances {
        instance.close().await?; // unregisters
    }
    server.remove(&[&args.path]).await?;
    Ok(())
}
