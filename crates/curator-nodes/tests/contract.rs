//! The recipe contract, for every long-lived recipe of the crate: built by `new`/`builder`,
//! `start()` once (`AlreadyStarted` the second time, `Closed` after close), events heard through
//! `listenable()` and through `stream()` where there are events, `close()` twice, and no recipe
//! task left once the recipes are closed, or once their client is closed with the recipes still
//! started (and then no listener hears anything more).

use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_nodes::{
    GroupMember, MemberEvent, PartitionState, PersistentNode, PersistentTtlNode, SetPartitioner,
};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;
use tokio::sync::mpsc;

/// A closure listener on `listenable`, forwarding what it hears.
fn listen<E: Clone + Send + 'static>(
    listenable: &Listenable<E>,
) -> (ListenerHandle, mpsc::UnboundedReceiver<E>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let handle = listenable.add_listener(move |event| {
        let _ = sender.send(event);
    });
    (handle, receiver)
}

async fn from_listener<E>(
    what: &str,
    receiver: &mut mpsc::UnboundedReceiver<E>,
    matches: impl Fn(&E) -> bool,
) {
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = receiver.recv().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard by the listener");
}

async fn from_stream<E>(what: &str, stream: &mut ListenerStream<E>, matches: impl Fn(&E) -> bool) {
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = stream.next().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard by the stream");
}

/// `tasks.close()` returns once the recipe's tasks ended; the client's count of them drops a
/// moment later (on the task's own thread), so it is polled.
async fn no_recipe_tasks(client: &CuratorFramework) {
    eventually("the recipe tasks to end", || {
        std::future::ready(client.metrics().recipe_tasks == 0)
    })
    .await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_node_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = format!("{}/node", unique_root("contract-persistent-node"));
    let node = PersistentNode::builder(client.clone(), &path, CreateMode::Ephemeral, b"x")
        .build()
        .unwrap();
    node.start().await.unwrap();
    assert_eq!(node.start().await, Err(Error::AlreadyStarted));
    assert!(
        node.wait_for_initial_create(Timing::new().wait())
            .await
            .unwrap()
    );
    assert!(client.metrics().recipe_tasks >= 1);
    node.close().await.unwrap();
    node.close().await.unwrap();
    assert_eq!(node.start().await, Err(Error::Closed));
    assert!(!exists(&client, &path).await, "close deletes the node");
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_node_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let path = format!("{}/node", unique_root("contract-ttl-node"));
    let node =
        PersistentTtlNode::new(client.clone(), &path, Duration::from_secs(60), b"x").unwrap();
    node.start().await.unwrap();
    assert_eq!(node.start().await, Err(Error::AlreadyStarted));
    assert!(
        node.wait_for_initial_create(Timing::new().wait())
            .await
            .unwrap()
    );
    node.close().await.unwrap();
    node.close().await.unwrap();
    assert_eq!(node.start().await, Err(Error::Closed));
    assert!(
        exists(&client, &path).await,
        "close leaves the node to its TTL"
    );
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_member_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let group = unique_root("contract-group");
    let member = GroupMember::new(client.clone(), &group, "a", b"a").unwrap();
    let (_listening, mut heard) = listen(&member.listenable());
    let mut stream = member.stream();
    member.start().await.unwrap();
    assert_eq!(member.start().await, Err(Error::AlreadyStarted));
    from_listener("a's join", &mut heard, joined("a")).await;
    from_stream("a's join", &mut stream, joined("a")).await;
    member.close().await.unwrap();
    member.close().await.unwrap();
    assert_eq!(member.start().await, Err(Error::Closed));
    assert!(
        !exists(&client, &format!("{group}/a")).await,
        "close leaves"
    );
    no_recipe_tasks(&client).await;
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
    let (_listening, mut heard) = listen(&partitioner.listenable());
    let mut stream = partitioner.stream();
    partitioner.start().await.unwrap();
    assert_eq!(partitioner.start().await, Err(Error::AlreadyStarted));
    from_listener("the share", &mut heard, acquired).await;
    from_stream("the share", &mut stream, acquired).await;
    partitioner.close().await.unwrap();
    partitioner.close().await.unwrap();
    assert_eq!(partitioner.start().await, Err(Error::Closed));
    from_listener("Closed", &mut heard, |s| *s == PartitionState::Closed).await;
    from_stream("Closed", &mut stream, |s| *s == PartitionState::Closed).await;
    no_recipe_tasks(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_every_started_recipe() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let other = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("contract-client-close");
    let node = PersistentNode::builder(
        client.clone(),
        &format!("{root}/node"),
        CreateMode::Ephemeral,
        b"x",
    )
    .build()
    .unwrap();
    let ttl = PersistentTtlNode::new(
        client.clone(),
        &format!("{root}/ttl"),
        Duration::from_secs(60),
        b"x",
    )
    .unwrap();
    let group = format!("{root}/group");
    let member = GroupMember::new(client.clone(), &group, "a", b"a").unwrap();
    let partitioner = SetPartitioner::builder(client.clone(), &format!("{root}/p"), ["x"])
        .settle(Duration::from_millis(10))
        .build()
        .unwrap();
    let (_m, mut member_heard) = listen(&member.listenable());
    let (_p, mut partitioner_heard) = listen(&partitioner.listenable());
    let mut member_stream = member.stream();
    let mut partitioner_stream = partitioner.stream();
    node.start().await.unwrap();
    ttl.start().await.unwrap();
    member.start().await.unwrap();
    partitioner.start().await.unwrap();
    from_listener("a's join", &mut member_heard, joined("a")).await;
    from_stream("a's join", &mut member_stream, joined("a")).await;
    from_listener("the share", &mut partitioner_heard, acquired).await;
    from_stream("the share", &mut partitioner_stream, acquired).await;
    assert!(client.metrics().recipe_tasks >= 5);

    client.close().await;
    assert_eq!(client.metrics().recipe_tasks, 0, "every recipe task ended");

    // A member joining, as the group member would have heard: nobody hears it.
    other
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{group}/b"), b"b")
        .await
        .unwrap();
    tokio::time::sleep(Timing::new().scale(Duration::from_millis(500))).await;
    while let Ok(event) = member_heard.try_recv() {
        assert!(
            !joined("b")(&event),
            "the member's listener heard {event:?}"
        );
    }
    // Streams of a closed client's containers hand out what they had, then end.
    let ends = Timing::new().wait();
    while let Some(event) = tokio::time::timeout(ends, member_stream.next())
        .await
        .unwrap()
    {
        assert!(!joined("b")(&event), "the stream heard {event:?}");
    }
    assert_eq!(
        tokio::time::timeout(ends, partitioner_stream.next()).await,
        Ok(None),
        "the partitioner's stream hears nothing more"
    );
    assert!(partitioner_heard.try_recv().is_err());
}
