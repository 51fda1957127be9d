//! The recipe contract (`curator_testkit::contract`) for every recipe of the crate, and what
//! each close leaves behind: a node's close deletes it, a TTL node's leaves it to its TTL, a
//! member's close leaves the group.

use std::time::Duration;

use curator_framework::{CreateMode, CuratorFramework};
use curator_nodes::{
    GroupMember, MemberEvent, PartitionState, PersistentNode, PersistentNodeBuilder,
    PersistentTtlNode, SetPartitioner, SetPartitionerBuilder,
};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::client;
use curator_testkit::contract::{self, Heard};

async fn exists(client: &CuratorFramework, path: &str) -> bool {
    client
        .check_exists()
        .for_path(path)
        .await
        .unwrap()
        .is_some()
}

fn joined(id: &'static str) -> impl Fn(&MemberEvent) -> bool {
    move |event| matches!(event, MemberEvent::Joined { id: joined, .. } if joined == id)
}

fn acquired(event: &PartitionState) -> bool {
    matches!(event, PartitionState::Acquired { items } if !items.is_empty())
}

#[test]
fn handles_and_builders_are_send_and_sync() {
    contract::send_sync::<PersistentNode>();
    contract::send_sync::<PersistentNodeBuilder>();
    contract::send_sync::<PersistentTtlNode>();
    contract::send_sync::<GroupMember>();
    contract::send_sync::<SetPartitioner>();
    contract::send_sync::<SetPartitionerBuilder>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_node_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = format!("{}/node", unique_root("contract-persistent-node"));
    let node = PersistentNode::builder(client.clone(), &path, CreateMode::Ephemeral, b"x")
        .build()
        .unwrap();
    contract::check(&client, &node, async || {
        tokio::time::timeout(Timing::new().wait(), node.initialized())
            .await
            .expect("created in time")
            .unwrap();
        assert!(node.is_initialized());
    })
    .await;
    assert!(!exists(&client, &path).await, "close deletes the node");

    let client = curator_testkit::client(&server.connect_string()).await;
    let node = PersistentNode::builder(client.clone(), &path, CreateMode::Ephemeral, b"x")
        .build()
        .unwrap();
    contract::ends_with_its_client_quietly(&client, &node).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = format!("{}/node", unique_root("contract-ttl-node"));
    let ttl = Duration::from_secs(60);
    let node = PersistentTtlNode::new(client.clone(), &path, ttl, b"x").unwrap();
    contract::check(&client, &node, async || {
        tokio::time::timeout(Timing::new().wait(), node.initialized())
            .await
            .expect("created in time")
            .unwrap();
    })
    .await;
    assert!(
        exists(&client, &path).await,
        "close leaves the node to its TTL"
    );

    let client = curator_testkit::client(&server.connect_string()).await;
    let node = PersistentTtlNode::new(client.clone(), &path, ttl, b"x").unwrap();
    contract::ends_with_its_client_quietly(&client, &node).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_member_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let group = unique_root("contract-group");
    let member = GroupMember::new(client.clone(), &group, "a", b"a").unwrap();
    contract::check_events(&client, &member, async || {}, joined("a")).await;
    assert!(
        !exists(&client, &format!("{group}/a")).await,
        "close leaves"
    );

    let client = curator_testkit::client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let member = GroupMember::new(client.clone(), &group, "a", b"a").unwrap();
    let b = format!("{group}/b");
    contract::ends_with_its_client(
        &client,
        &member,
        async || {},
        joined("a"),
        async || {
            other
                .create()
                .with_mode(CreateMode::Ephemeral)
                .for_path(&b, b"b")
                .await
                .unwrap();
        },
        joined("b"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_partitioner_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = unique_root("contract-partitioner");
    let partitioner = SetPartitioner::builder(client.clone(), &path, ["x", "y"])
        .settle(Duration::from_millis(10))
        .build()
        .unwrap();
    let mut closed = Heard::on(&partitioner.listenable());
    contract::check_events(&client, &partitioner, async || {}, acquired).await;
    closed
        .both("Closed", |state| *state == PartitionState::Closed)
        .await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let partitioner = SetPartitioner::builder(client.clone(), &path, ["x"])
        .settle(Duration::from_millis(10))
        .build()
        .unwrap();
    let joining = SetPartitioner::builder(other.clone(), &path, ["x"])
        .settle(Duration::from_millis(10))
        .build()
        .unwrap();
    contract::ends_with_its_client(
        &client,
        &partitioner,
        async || {},
        acquired,
        async || joining.start().await.unwrap(),
        |_| true,
    )
    .await;
    joining.close().await.unwrap();
}
