//! SetPartitioner against a real ZooKeeper: members divide 100 items into a disjoint, complete
//! assignment, and divide them again when a member's session expires and when a member dies.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::{CuratorFramework, Error};
use curator_nodes::{PartitionState, SetPartitioner, round_robin};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;
use parking_lot::Mutex;

const ITEMS: usize = 100;

fn items() -> Vec<String> {
    (0..ITEMS).map(|i| format!("item-{i:03}")).collect()
}

/// A member that does what an application does: on `Release` it lets go. Every transition it
/// saw is kept.
struct Member {
    client: CuratorFramework,
    partitioner: SetPartitioner,
    seen: Arc<Mutex<Vec<PartitionState>>>,
}

async fn member(connect: &str, path: &str, id: &str) -> Member {
    let client = client(connect).await;
    let partitioner = SetPartitioner::builder(client.clone(), path, items())
        .id(id)
        .settle(Duration::from_millis(100))
        .build()
        .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut states = partitioner.listenable().stream();
    let (driver, log) = (partitioner.clone(), Arc::clone(&seen));
    tokio::spawn(async move {
        while let Some(state) = states.next().await {
            log.lock().push(state.clone());
            if state == PartitionState::Release {
                // Only valid while still in Release; a later state makes it an error.
                let _ = driver.release_set().await;
            }
        }
    });
    partitioner.start().await.unwrap();
    Member {
        client,
        partitioner,
        seen,
    }
}

/// Whether `members` hold a disjoint, complete assignment, each the round-robin share of the
/// members' ids.
fn partitioned(members: &[&Member]) -> bool {
    let ids: Vec<String> = members
        .iter()
        .map(|m| m.partitioner.id().to_owned())
        .collect();
    let mut all = BTreeSet::new();
    for m in members {
        let held = m.partitioner.acquired();
        if held.is_empty() || held != round_robin(m.partitioner.id(), &ids, &items()) {
            return false;
        }
        for item in held {
            assert!(all.insert(item.clone()), "{item} is held twice");
        }
    }
    all.len() == ITEMS
}

/// Each item's lock, as the server has it: exactly one lock node, holding its owner's id.
async fn server_owners(c: &CuratorFramework, path: &str) -> Option<Vec<String>> {
    let mut owners = Vec::new();
    for item in items() {
        let dir = format!("{path}/locks/{item}");
        let children = match c.get_children().for_path(&dir).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => return None,
            Err(error) => panic!("{error}"),
        };
        let [only] = children.as_slice() else {
            return None;
        };
        let (data, _) = c.get_data().for_path(&format!("{dir}/{only}")).await.ok()?;
        owners.push(String::from_utf8(data).unwrap());
    }
    Some(owners)
}

fn expected_owners(ids: &[&str]) -> Vec<String> {
    let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    let items = items();
    items
        .iter()
        .map(|item| {
            ids.iter()
                .find(|id| round_robin(id, &ids, &items).contains(item))
                .unwrap()
                .clone()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_share_100_items_and_share_again_after_expiry_and_death() {
    let server = TestingServer::start().await.unwrap();
    let connect = server.connect_string();
    let path = unique_root("partitioner");
    let observer = client(&connect).await;
    let a = member(&connect, &path, "a").await;
    let b = member(&connect, &path, "b").await;
    let c = member(&connect, &path, "c").await;

    eventually(
        "a, b and c hold a disjoint, complete assignment",
        || async {
            partitioned(&[&a, &b, &c])
                && server_owners(&observer, &path).await == Some(expected_owners(&["a", "b", "c"]))
        },
    )
    .await;
    assert_eq!(a.partitioner.acquired().len(), 34);
    assert_eq!(c.partitioner.acquired().len(), 33);

    // b's session expires: b is told to stop (Failure), everyone re-divides, and at the end the
    // three hold the same disjoint, complete assignment again.
    let before = b.seen.lock().len();
    b.client.inject_session_expiration().await.unwrap();
    eventually("b failed, and the three re-divided", || async {
        b.seen.lock()[before..]
            .iter()
            .any(|s| matches!(s, PartitionState::Failure { .. }))
            && partitioned(&[&a, &b, &c])
            && server_owners(&observer, &path).await == Some(expected_owners(&["a", "b", "c"]))
    })
    .await;

    // c dies (its session ends without a goodbye): a and b take over its items.
    c.client.close().await.unwrap();
    eventually("a and b hold a disjoint, complete assignment", || async {
        partitioned(&[&a, &b])
            && server_owners(&observer, &path).await == Some(expected_owners(&["a", "b"]))
    })
    .await;
    assert_eq!(a.partitioner.acquired().len(), 50);

    // Every member went through explicit states: never from one share straight to another.
    for m in [&a, &b] {
        let seen = m.seen.lock().clone();
        for pair in seen.windows(2) {
            if let PartitionState::Acquired { .. } = pair[0] {
                assert!(
                    matches!(
                        pair[1],
                        PartitionState::Release | PartitionState::Failure { .. }
                    ),
                    "{} went from {:?} to {:?}",
                    m.partitioner.id(),
                    pair[0],
                    pair[1]
                );
            }
            if let PartitionState::Acquired { .. } = pair[1] {
                assert_eq!(pair[0], PartitionState::Allocating);
            }
        }
    }

    a.partitioner.close().await.unwrap();
    assert_eq!(a.partitioner.state(), PartitionState::Closed);
    eventually("b takes everything", || async {
        b.partitioner.acquired().len() == ITEMS
    })
    .await;
    b.partitioner.close().await.unwrap();
    eventually("every lock is free", || async {
        server_owners(&observer, &path).await.is_none()
    })
    .await;
}

/// Whether `member` went through a `Failure` after its `from`-th transition.
fn failed_since(member: &Member, from: usize) -> bool {
    member.seen.lock()[from..]
        .iter()
        .any(|s| matches!(s, PartitionState::Failure { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_stop_on_a_cut_connection_and_a_server_restart_and_divide_again() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("partitioner-faults");
    let observer = client(&server.connect_string()).await;
    let a = member(&server.connect_string(), &path, "a").await;
    let b = member(&proxy.connect_string(), &path, "b").await;
    let expected = expected_owners(&["a", "b"]);
    eventually("a and b divide the items", || async {
        partitioned(&[&a, &b]) && server_owners(&observer, &path).await.as_ref() == Some(&expected)
    })
    .await;

    // b's connection is cut (its session lives on): b stops (Failure), lets its items go and
    // takes its share again; the division is the same.
    let before = b.seen.lock().len();
    proxy.drop_connections();
    eventually("b failed and took its share again", || async {
        failed_since(&b, before)
            && partitioned(&[&a, &b])
            && server_owners(&observer, &path).await.as_ref() == Some(&expected)
    })
    .await;

    // The server restarts: both stop, then divide again.
    let (from_a, from_b) = (a.seen.lock().len(), b.seen.lock().len());
    server.restart().await.unwrap();
    eventually("both failed and divided again", || async {
        failed_since(&a, from_a)
            && failed_since(&b, from_b)
            && partitioned(&[&a, &b])
            && server_owners(&observer, &path).await.as_ref() == Some(&expected)
    })
    .await;
    a.partitioner.close().await.unwrap();
    b.partitioner.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_release_needs_the_release_state() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let build = |items: Vec<&str>| SetPartitioner::builder(c.clone(), "/p", items).build();
    assert!(matches!(build(vec![]), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        build(vec!["x", "x"]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(build(vec!["a/b"]), Err(Error::InvalidPath { .. })));
    assert!(matches!(build(vec![".."]), Err(Error::InvalidPath { .. })));
    assert!(matches!(
        SetPartitioner::builder(c.clone(), "/p", ["x"])
            .id("a/b")
            .build(),
        Err(Error::InvalidPath { .. })
    ));
    let p = SetPartitioner::builder(c.clone(), &unique_root("p"), ["x"])
        .settle(Duration::from_millis(10))
        .build()
        .unwrap();
    let mut states = p.stream();
    p.start().await.unwrap();
    assert_eq!(p.start().await, Err(Error::AlreadyStarted));
    let acquired =
        async { while !matches!(states.next().await, Some(PartitionState::Acquired { .. })) {} };
    tokio::time::timeout(Timing::new().wait(), acquired)
        .await
        .expect("acquired in time");
    assert_eq!(p.acquired(), ["x"]);
    assert!(matches!(
        p.release_set().await,
        Err(Error::InvalidArgument(_))
    ));
    p.close().await.unwrap();
    assert_eq!(p.start().await, Err(Error::Closed));
}
