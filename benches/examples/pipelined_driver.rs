//! One driver of the pipelined `get_data` scenario, alone, for instruction counting:
//! `valgrind --tool=callgrind target/release/examples/pipelined_driver ours|bare` against
//! `ZK_CONNECT`. Prints nothing but errors.

use std::time::Duration;

use curator_framework::CuratorFramework;
use futures::future::join_all;
use zookeeper_client as zk;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let driver = std::env::args().nth(1).unwrap_or_else(|| "ours".into());
    let batches: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let connect = std::env::var("ZK_CONNECT").expect("ZK_CONNECT");
    let path = "/";
    if driver == "ours" {
        let client = CuratorFramework::builder()
            .connect_string(&connect)
            .build()
            .unwrap();
        client.start().await.unwrap();
        client
            .block_until_connected(Duration::from_secs(30))
            .await
            .unwrap();
        for _ in 0..batches {
            let futures: Vec<_> = (0..1000)
                .map(|_| client.get_data().for_path(path).into_future())
                .collect();
            for result in join_all(futures).await {
                result.unwrap();
            }
        }
        client.close().await;
    } else {
        let client = zk::Client::connect(&connect).await.unwrap();
        for _ in 0..batches {
            let futures: Vec<_> = (0..1000).map(|_| client.get_data(path)).collect();
            for result in join_all(futures).await {
                result.unwrap();
            }
        }
    }
}
