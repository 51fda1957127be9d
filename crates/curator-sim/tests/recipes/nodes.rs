//! curator-nodes' single-server fault tests under the simulator: a group's membership through a
//! member's expiry and crash, persistent nodes through expiry and a server restart, and the set
//! partitioner through an expiry, a death, a cut connection and a server restart.
//!
//! The server's state is read from the model directly (no observer client).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_nodes::{
    GroupMember, MemberEvent, PartitionState, PersistentNode, SetPartitioner, round_robin,
};
use curator_sim::SimClient;
use futures::StreamExt;
use parking_lot::Mutex;

use crate::{SEEDS, run, session_of, sim, until};

type BoxError = Box<dyn std::error::Error>;

/// How long a test waits for what the real test waits for "in time".
const WAIT: Duration = Duration::from_secs(30);

/// The children of `path` on the server, sorted (none when it does not exist).
fn children(client: &SimClient, path: &str) -> Vec<String> {
    client
        .faults()
        .server()
        .with_model(|model| model.children(path))
        .unwrap_or_default()
}

/// The data and owner of the node at `path` on the server.
fn stored(client: &SimClient, path: &str) -> Option<(Vec<u8>, i64)> {
    client
        .faults()
        .server()
        .with_model(|model| model.node(path))
        .map(|(data, stat)| (data, stat.ephemeral_owner))
}

/// The membership of `group` as the server has it: id → payload.
fn server_members(client: &SimClient, group: &str) -> BTreeMap<String, Vec<u8>> {
    children(client, group)
        .into_iter()
        .filter_map(|child| {
            let (data, _) = stored(client, &format!("{group}/{child}"))?;
            Some((child, data))
        })
        .collect()
}

fn ids(members: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    members.keys().map(String::as_str).collect()
}

#[test]
fn membership_converges_as_members_join_change_leave_expire_and_crash() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let group = "/group/workers";
            let mut clients = Vec::new();
            let mut members = Vec::new();
            for id in ["a", "b", "c"] {
                let c = client.connect().await?;
                members.push(GroupMember::new(c.clone(), group, id, format!("{id}-1"))?);
                clients.push(c);
            }
            let mut a_events = members[0].listenable().stream();
            for member in &members {
                member.start().await?;
            }
            for member in &members {
                member.initialized().await?;
            }
            until("everyone sees a, b and c", WAIT, || async {
                members
                    .iter()
                    .all(|m| ids(&m.current_members()) == ["a", "b", "c"])
            })
            .await?;
            assert_eq!(members[2].current_members()["a"], b"a-1");

            // b changes its payload: everyone sees it, and so does the server.
            members[1].set_this_data(b"b-2").await?;
            until("b's new payload is seen", WAIT, || async {
                members.iter().all(|m| m.current_members()["b"] == b"b-2")
            })
            .await?;

            // c leaves.
            members[2].close().await?;
            until("a and b see that c left", WAIT, || async {
                members[..2]
                    .iter()
                    .all(|m| ids(&m.current_members()) == ["a", "b"])
            })
            .await?;

            // b's session expires: b comes back once, with its latest payload.
            let old = clients[1].session_id();
            client
                .faults()
                .expire_session(session_of(&clients[1]).await?);
            until("b is back on a new session, once", WAIT, || async {
                clients[1].session_id() != old
                    && server_members(&client, group)
                        == BTreeMap::from([
                            ("a".into(), b"a-1".to_vec()),
                            ("b".into(), b"b-2".to_vec()),
                        ])
                    && members[..2]
                        .iter()
                        .all(|m| ids(&m.current_members()) == ["a", "b"])
            })
            .await?;

            // a crashes (its session ends without a goodbye): b sees only itself.
            clients[0].close().await?;
            until("b sees that a is gone", WAIT, || async {
                ids(&members[1].current_members()) == ["b"]
                    && ids(&server_members(&client, group)) == ["b"]
            })
            .await?;

            // a's events told the story in order: the three joined (around the initial load),
            // then b changed, then c left.
            let mut story = Vec::new();
            while story.len() < 6 {
                story.push(a_events.next().await.ok_or("a's events go on")?);
            }
            let mut joined = Vec::new();
            for event in &story[..4] {
                match event {
                    MemberEvent::Joined { id, .. } => joined.push(id.clone()),
                    MemberEvent::Initialized => {}
                    other => panic!("expected joins and the initial load first, got {other:?}"),
                }
            }
            joined.sort();
            assert_eq!(joined, ["a", "b", "c"]);
            assert_eq!(
                story[4],
                MemberEvent::Changed {
                    id: "b".into(),
                    data: b"b-2".to_vec()
                }
            );
            assert_eq!(story[5], MemberEvent::Left { id: "c".into() });
            members[1].close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn an_ephemeral_node_comes_back_once_with_its_latest_data() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let (root, path) = ("/persistent-node", "/persistent-node/me");
            let owner = client.connect().await?;
            let observer = client.connect().await?;
            let node = PersistentNode::builder(owner.clone(), path, CreateMode::Ephemeral, b"v1")
                .build()?;
            node.start().await?;
            tokio::time::timeout(WAIT, node.initialized())
                .await
                .map_err(|_| "created in time")??;
            assert_eq!(node.actual_path().as_deref(), Some(path));
            assert_eq!(stored(&client, path).ok_or("created")?.0, b"v1");

            // Someone deletes it: it comes back, with the latest data.
            node.set_data(b"v2").await?;
            observer.delete().for_path(path).await?;
            until("re-created after deletion", WAIT, || async {
                stored(&client, path).is_some_and(|(data, _)| data == b"v2")
            })
            .await?;

            // The session ends: one node again, owned by the new session, with the latest data.
            node.set_data(b"v3").await?;
            let old_session = session_of(&owner).await?;
            client.faults().expire_session(old_session);
            until("re-created in the new session", WAIT, || async {
                children(&client, root).len() == 1
                    && stored(&client, path).is_some_and(|(data, owner_session)| {
                        data == b"v3"
                            && owner_session != old_session
                            && Some(owner_session) == owner.session_id()
                    })
            })
            .await?;

            node.close().await?;
            assert!(stored(&client, path).is_none(), "close deletes it");
            assert_eq!(node.start().await, Err(Error::Closed));
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn a_protected_sequential_node_keeps_its_path_through_expiry_and_restart() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let root = "/persistent-seq";
            let owner = client.connect().await?;
            let node = PersistentNode::builder(
                owner.clone(),
                &format!("{root}/member-"),
                CreateMode::EphemeralSequential,
                b"m",
            )
            .with_protection()
            .build()?;
            node.start().await?;
            tokio::time::timeout(WAIT, node.initialized())
                .await
                .map_err(|_| "created in time")??;
            let actual = node.actual_path().ok_or("a path")?;
            assert!(curator_framework::paths::is_protected(
                curator_framework::paths::node_name(&actual)
            ));

            client.faults().restart_server();
            until("still one node after a restart", WAIT, || async {
                children(&client, root).len() == 1 && stored(&client, &actual).is_some()
            })
            .await?;

            // Expire the session once the owner is connected again.
            client.faults().expire_session(session_of(&owner).await?);
            until("the same path in the new session", WAIT, || async {
                children(&client, root).len() == 1
                    && stored(&client, &actual)
                        .is_some_and(|(_, session)| Some(session) == owner.session_id())
            })
            .await?;
            assert_eq!(node.actual_path().ok_or("a path")?, actual);
            node.close().await?;
            Ok(())
        });
        run(&mut sim);
    }
}

const ITEMS: usize = 100;

fn items() -> Vec<String> {
    (0..ITEMS).map(|i| format!("item-{i:03}")).collect()
}

/// A member that does what an application does: on `Release` it lets go. Every transition it
/// saw is kept.
#[derive(Clone)]
struct Member {
    client: CuratorFramework,
    partitioner: SetPartitioner,
    seen: Arc<Mutex<Vec<PartitionState>>>,
}

/// A member `id` of the partitioner at `path`, on a new client of `client`'s host.
async fn member(client: &SimClient, path: &str, id: &str) -> Result<Member, BoxError> {
    let client = client.connect().await?;
    let partitioner = SetPartitioner::builder(client.clone(), path, items())
        .id(id)
        .settle(Duration::from_millis(100))
        .build()?;
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
    partitioner.start().await?;
    Ok(Member {
        client,
        partitioner,
        seen,
    })
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
fn server_owners(client: &SimClient, path: &str) -> Option<Vec<String>> {
    client.faults().server().with_model(|model| {
        items()
            .into_iter()
            .map(|item| {
                let dir = format!("{path}/locks/{item}");
                let children = model.children(&dir)?;
                let [only] = children.as_slice() else {
                    return None;
                };
                let (data, _) = model.node(&format!("{dir}/{only}"))?;
                Some(String::from_utf8(data).unwrap())
            })
            .collect()
    })
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

/// Whether `member` went through a `Failure` after its `from`-th transition.
fn failed_since(member: &Member, from: usize) -> bool {
    member.seen.lock()[from..]
        .iter()
        .any(|s| matches!(s, PartitionState::Failure { .. }))
}

#[test]
fn three_members_share_100_items_and_share_again_after_expiry_and_death() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        sim.client("c0", |client| async move {
            let path = "/partitioner";
            let a = member(&client, path, "a").await?;
            let b = member(&client, path, "b").await?;
            let c = member(&client, path, "c").await?;

            until(
                "a, b and c hold a disjoint, complete assignment",
                WAIT,
                || async {
                    partitioned(&[&a, &b, &c])
                        && server_owners(&client, path) == Some(expected_owners(&["a", "b", "c"]))
                },
            )
            .await?;
            assert_eq!(a.partitioner.acquired().len(), 34);
            assert_eq!(c.partitioner.acquired().len(), 33);

            // b's session expires: b is told to stop (Failure), everyone re-divides, and at the
            // end the three hold the same disjoint, complete assignment again.
            let before = b.seen.lock().len();
            client.faults().expire_session(session_of(&b.client).await?);
            until("b failed, and the three re-divided", WAIT, || async {
                failed_since(&b, before)
                    && partitioned(&[&a, &b, &c])
                    && server_owners(&client, path) == Some(expected_owners(&["a", "b", "c"]))
            })
            .await?;

            // c dies (its session ends without a goodbye): a and b take over its items.
            c.client.close().await?;
            until(
                "a and b hold a disjoint, complete assignment",
                WAIT,
                || async {
                    partitioned(&[&a, &b])
                        && server_owners(&client, path) == Some(expected_owners(&["a", "b"]))
                },
            )
            .await?;
            assert_eq!(a.partitioner.acquired().len(), 50);

            // Every member went through explicit states: never from one share straight to
            // another.
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

            a.partitioner.close().await?;
            assert_eq!(a.partitioner.state(), PartitionState::Closed);
            until("b takes everything", WAIT, || async {
                b.partitioner.acquired().len() == ITEMS
            })
            .await?;
            b.partitioner.close().await?;
            until("every lock is free", WAIT, || async {
                server_owners(&client, path).is_none()
            })
            .await?;
            Ok(())
        });
        run(&mut sim);
    }
}

#[test]
fn members_stop_on_a_cut_connection_and_a_server_restart_and_divide_again() {
    for seed in SEEDS {
        let mut sim = sim(seed);
        let path = "/partitioner-faults";
        let (b_tx, b_rx) = tokio::sync::oneshot::channel();
        let over = Arc::new(tokio::sync::Notify::new());
        // b, on a host of its own (its connection is cut, a's is not).
        sim.client("b", {
            let over = Arc::clone(&over);
            move |client| async move {
                let b = member(&client, path, "b").await?;
                let _ = b_tx.send(b.clone());
                over.notified().await;
                b.partitioner.close().await?;
                Ok(())
            }
        });
        sim.client("a", move |client| async move {
            let a = member(&client, path, "a").await?;
            let b = tokio::time::timeout(WAIT, b_rx).await??;
            let expected = expected_owners(&["a", "b"]);
            until("a and b divide the items", WAIT, || async {
                partitioned(&[&a, &b]) && server_owners(&client, path).as_ref() == Some(&expected)
            })
            .await?;

            // b's connection is cut (its session lives on): b stops (Failure), lets its items
            // go and takes its share again; the division is the same.
            let before = b.seen.lock().len();
            client.faults().cut("b");
            until("b failed and took its share again", WAIT, || async {
                failed_since(&b, before)
                    && partitioned(&[&a, &b])
                    && server_owners(&client, path).as_ref() == Some(&expected)
            })
            .await?;

            // The server restarts: both stop, then divide again.
            let (from_a, from_b) = (a.seen.lock().len(), b.seen.lock().len());
            client.faults().restart_server();
            until("both failed and divided again", WAIT, || async {
                failed_since(&a, from_a)
                    && failed_since(&b, from_b)
                    && partitioned(&[&a, &b])
                    && server_owners(&client, path).as_ref() == Some(&expected)
            })
            .await?;
            a.partitioner.close().await?;
            over.notify_one();
            Ok(())
        });
        run(&mut sim);
    }
}
