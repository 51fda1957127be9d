//! GroupMember against a real ZooKeeper: members join, change their payload, leave, lose their
//! session and crash; every member's view converges to the server's membership.

use std::collections::BTreeMap;

use curator_framework::{CuratorFramework, Error};
use curator_nodes::{GroupMember, MemberEvent};
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;

/// The membership as the server has it: id → payload.
async fn server_members(c: &CuratorFramework, group: &str) -> BTreeMap<String, Vec<u8>> {
    let children = match c.get_children().for_path(group).await {
        Ok((children, _)) => children,
        Err(Error::NoNode) => Vec::new(),
        Err(error) => panic!("{error}"),
    };
    let mut members = BTreeMap::new();
    for child in children {
        if let Ok((data, _)) = c.get_data().for_path(&format!("{group}/{child}")).await {
            members.insert(child, data);
        }
    }
    members
}

fn ids(members: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    members.keys().map(String::as_str).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_converges_as_members_join_change_leave_expire_and_crash() {
    let server = TestingServer::start().await.unwrap();
    let group = format!("{}/workers", unique_root("group"));
    let observer = client(&server.connect_string()).await;
    let mut clients = Vec::new();
    let mut members = Vec::new();
    for id in ["a", "b", "c"] {
        let c = client(&server.connect_string()).await;
        let member = GroupMember::new(c.clone(), &group, id, format!("{id}-1")).unwrap();
        clients.push(c);
        members.push(member);
    }
    let mut a_events = members[0].listenable().stream();
    for member in &members {
        member.start().await.unwrap();
    }
    for member in &members {
        member.initialized().await.unwrap();
    }
    eventually("everyone sees a, b and c", || async {
        members
            .iter()
            .all(|m| ids(&m.current_members()) == ["a", "b", "c"])
    })
    .await;
    assert_eq!(members[2].current_members()["a"], b"a-1");

    // b changes its payload: everyone sees it, and so does the server.
    members[1].set_this_data(b"b-2").await.unwrap();
    eventually("b's new payload is seen", || async {
        members.iter().all(|m| m.current_members()["b"] == b"b-2")
    })
    .await;

    // c leaves.
    members[2].close().await.unwrap();
    eventually("a and b see that c left", || async {
        members[..2]
            .iter()
            .all(|m| ids(&m.current_members()) == ["a", "b"])
    })
    .await;

    // b's session expires: b comes back once, with its latest payload.
    let old = clients[1].session_id();
    clients[1].inject_session_expiration().await.unwrap();
    eventually("b is back on a new session, once", || async {
        clients[1].session_id() != old
            && server_members(&observer, &group).await
                == BTreeMap::from([("a".into(), b"a-1".to_vec()), ("b".into(), b"b-2".to_vec())])
            && members[..2]
                .iter()
                .all(|m| ids(&m.current_members()) == ["a", "b"])
    })
    .await;

    // a crashes (its session ends without a goodbye): b sees only itself.
    clients[0].close().await.unwrap();
    eventually("b sees that a is gone", || async {
        ids(&members[1].current_members()) == ["b"]
            && ids(&server_members(&observer, &group).await) == ["b"]
    })
    .await;

    // a's events told the story in order: the three joined (around the initial load), then b
    // changed, then c left.
    let mut story = Vec::new();
    while story.len() < 6 {
        story.push(a_events.next().await.unwrap());
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
    members[1].close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_member_ids_are_refused() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    for id in ["", "a/b", ".", "..", "zookeeper\u{0}"] {
        assert!(
            matches!(
                GroupMember::new(c.clone(), "/group", id, b""),
                Err(Error::InvalidPath { .. })
            ),
            "{id:?}"
        );
    }
    assert!(matches!(
        GroupMember::new(c.clone(), "no-slash", "a", b""),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        GroupMember::new(c.clone(), "/group", "a", vec![0u8; 2 << 20]),
        Err(Error::InvalidArgument(_))
    ));
    let member = GroupMember::new(c, "/group", "a", b"").unwrap();
    // Before it starts, the membership holds this member alone.
    assert_eq!(ids(&member.current_members()), ["a"]);
}
