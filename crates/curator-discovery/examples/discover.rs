//! Two servers register themselves under `/services`; a client picks instances round robin,
//! reports a failing one, and sees a server go away. Connects to `ZK_CONNECT`, or starts a
//! ZooKeeper server of its own.
//!
//! ```text
//! cargo run -p curator-discovery --example discover
//! ```

use std::time::Duration;

use curator_discovery::{
    DownInstancePolicy, ServiceCacheEvent, ServiceDiscovery, ServiceInstance, UriSpec,
};
use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;
use curator_test::{TestingServer, unique_root};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Details {
    zone: String,
}

async fn client(connect: &str) -> Result<CuratorFramework> {
    let client = CuratorFramework::builder()
        .connect_string(connect)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3))
        .build()?;
    client.start().await?;
    Ok(client)
}

/// A server process: its own client and discovery, registering itself.
async fn serve(connect: &str, base: &str, port: u16) -> Result<ServiceDiscovery<Details>> {
    let me = ServiceInstance::builder("api")
        .id(format!("server-{port}"))
        .address("127.0.0.1")
        .port(port)
        .uri_spec(UriSpec::parse("{scheme}://{address}:{port}/v1")?)
        .payload(Details {
            zone: format!("zone-{}", port % 2),
        })
        .build()?;
    let discovery = ServiceDiscovery::builder(client(connect).await?, base)
        .payload_type::<Details>()
        .this_instance(me)
        .build()?;
    discovery.start().await?;
    Ok(discovery)
}

#[tokio::main]
async fn main() -> Result {
    let server;
    let connect = match std::env::var("ZK_CONNECT") {
        Ok(connect) => connect,
        Err(_) => {
            server = TestingServer::start().await?;
            server.connect_string()
        }
    };
    let base = unique_root("example-services");
    let first = serve(&connect, &base, 8081).await?;
    let second = serve(&connect, &base, 8082).await?;

    let discovery = ServiceDiscovery::builder(client(&connect).await?, &base)
        .payload_type::<Details>()
        .build()?;
    println!("services: {:?}", discovery.query_for_names().await?);
    let provider = discovery
        .service_provider_builder("api")
        .down_instance_policy(DownInstancePolicy::new(Duration::from_secs(30), 1))
        .build()?;
    let mut events = provider.cache().listenable().stream();
    provider.start().await?;
    for _ in 0..4 {
        if let Some(instance) = provider.get_instance() {
            let zone = instance.payload().map(|d| d.zone.as_str()).unwrap_or("?");
            println!("call {} ({zone})", instance.build_uri().unwrap_or_default());
        }
    }
    if let Some(failing) = provider.get_instance() {
        println!("{} fails; it is skipped for 30 s", failing.id());
        provider.note_error(&failing);
    }
    println!(
        "now: {:?}",
        provider
            .get_all_instances()
            .iter()
            .map(|i| i.id().to_owned())
            .collect::<Vec<_>>()
    );

    first.close().await?;
    while let Some(event) = events.next().await {
        if let ServiceCacheEvent::Removed(instance) = event {
            println!("{} went away", instance.id());
            break;
        }
    }
    println!(
        "left: {} instance(s) in the cache",
        provider.cache().instances().len()
    );
    second.close().await?;
    discovery.close().await?;
    Ok(())
}
