//! What the inspector does not claim: a layout only when every child fits it, guesses marked
//! as guesses with the data beside them, our own lease and gate nodes, and nodes this session
//! may not read.

mod common;

use std::time::Duration;

use curator_framework::CreateMode;
use curator_framework::acl::Acl;
use curator_inspect::{Layout, inspect};
use curator_locks::{FencingGate, InterProcessMutex, NonBlockingLease};
use curator_test::{TestingServer, unique_root};

use common::client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leases_child_is_no_semaphore_and_our_lease_shows_its_holder_and_end() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "leaser").await;
    let root = unique_root("inspect-lease");
    let lease_path = format!("{root}/leases/daily");
    let grant = NonBlockingLease::new(a.clone(), &lease_path, "cron@host-1")
        .unwrap()
        .try_acquire(Duration::from_secs(600))
        .await
        .unwrap()
        .expect("a fresh lease is won");
    a.create()
        .for_path(&format!("{root}/settings"), b"x")
        .await
        .unwrap();

    // `leases` beside another child: not a semaphore.
    let report = inspect(&a, &root).await.unwrap();
    assert_eq!(report.layout, Layout::Generic, "{report}");
    assert!(report.holders.is_empty() && report.waiters.is_empty());
    // `leases` alone, holding a lease node (not `lease-<seq>` nodes): not a semaphore either.
    let report = inspect(&a, &format!("{root}/leases")).await.unwrap();
    assert_eq!(report.layout, Layout::Generic, "{report}");

    let report = inspect(&a, &lease_path).await.unwrap();
    assert_eq!(
        (report.layout, report.guess),
        (Layout::Lease, false),
        "{report}"
    );
    assert_eq!(report.until_ms, Some(grant.until_ms()));
    assert_eq!(report.token, Some(grant.fencing_token()));
    assert_eq!(report.holders.len(), 1, "{report}");
    assert_eq!(report.holders[0].who.text.as_deref(), Some("cron@host-1"));
    assert_eq!(report.holders[0].since_ms, grant.started_ms());
    let text = report.to_string();
    assert!(
        text.contains("lease") && text.contains("cron@host-1") && text.contains("ends in"),
        "{text}"
    );

    // Released: the holder is gone, the last taker and the end stay.
    assert!(grant.release().await.unwrap());
    let report = inspect(&a, &lease_path).await.unwrap();
    assert_eq!(report.layout, Layout::Lease);
    assert!(report.holders.is_empty(), "{report}");
    assert_eq!(
        report.who.and_then(|who| who.text).as_deref(),
        Some("cron@host-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_and_locks_beside_other_children_are_no_set_partitioner() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "plain").await;
    let root = unique_root("inspect-not-partitioner");
    for path in ["members/alice", "locks/orders", "config"] {
        a.create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{path}"), b"x")
            .await
            .unwrap();
    }
    let report = inspect(&a, &root).await.unwrap();
    assert_eq!(report.layout, Layout::Generic, "{report}");
    assert!(report.members.is_empty(), "{report}");
    // Exactly `members` and `locks`, but the member is a persistent node with data: no group.
    a.delete()
        .for_path(&format!("{root}/config"))
        .await
        .unwrap();
    let report = inspect(&a, &root).await.unwrap();
    assert_eq!(report.layout, Layout::Generic, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_recipe_name_among_other_children_is_no_recipe() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "mixed").await;
    let root = unique_root("inspect-mixed");
    for (dir, recipe_child) in [
        ("rw", "__READ__0000000001"),
        ("queue", "qn-0000000001"),
        ("items", "queue-0000000001"),
    ] {
        a.create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{dir}/{recipe_child}"), b"")
            .await
            .unwrap();
        a.create()
            .for_path(&format!("{root}/{dir}/notes"), b"hello")
            .await
            .unwrap();
        let report = inspect(&a, &format!("{root}/{dir}")).await.unwrap();
        assert_eq!(report.layout, Layout::Generic, "{dir}: {report}");
        assert!(
            report.queue.is_none() && report.holders.is_empty(),
            "{report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_is_no_counter_and_a_binary_guess_says_so_with_its_data() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "values").await;
    let root = unique_root("inspect-values");
    a.create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/flag"), b"true")
        .await
        .unwrap();
    a.create()
        .for_path(&format!("{root}/date"), b"12345678")
        .await
        .unwrap();
    a.create()
        .for_path(&format!("{root}/count"), [0_u8, 0, 0, 7])
        .await
        .unwrap();

    for (name, data) in [("flag", "\"true\""), ("date", "\"12345678\"")] {
        let report = inspect(&a, &format!("{root}/{name}")).await.unwrap();
        assert_eq!(
            (report.layout, report.value, report.data.as_deref()),
            (Layout::Generic, None, Some(data)),
            "{report}"
        );
    }
    let report = inspect(&a, &format!("{root}/count")).await.unwrap();
    assert_eq!(
        (report.layout, report.guess, report.value),
        (Layout::SharedCount, true, Some(7))
    );
    assert_eq!(report.data.as_deref(), Some("0x00000007 (4 bytes)"));
    let text = report.to_string();
    assert!(
        text.contains("shared count (a guess)") && text.contains("0x00000007"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fencing_gate_shows_the_highest_token_as_a_guess() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "fenced").await;
    let root = unique_root("inspect-gate");
    let guard = InterProcessMutex::builder(a.clone(), &format!("{root}/lock"))
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let gate = FencingGate::new(a.clone(), &format!("{root}/gate")).unwrap();
    assert!(
        gate.admit(guard.fencing_token())
            .await
            .unwrap()
            .is_admitted()
    );
    let report = inspect(&a, &format!("{root}/gate")).await.unwrap();
    assert_eq!(
        (report.layout, report.guess, report.token),
        (Layout::FencingGate, true, Some(guard.fencing_token())),
        "{report}"
    );
    assert!(
        report.to_string().contains(&format!(
            "highest token admitted: {}",
            guard.fencing_token()
        )),
        "{report}"
    );
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_without_read_permission_are_marked_and_the_rest_is_reported() {
    let server = TestingServer::start().await.unwrap();
    let reader = client(&server, "reader").await;
    let alice = curator_testkit::started(
        curator_testkit::builder(&server.connect_string(), Duration::from_secs(10))
            .identity("alice")
            .authorization("digest", b"alice:secret".to_vec()),
    )
    .await;
    let root = unique_root("inspect-acl");
    alice
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/open/plain"), b"x")
        .await
        .unwrap();
    alice
        .create()
        .with_acl(Acl::creator_all())
        .for_path(&format!("{root}/open/secret"), b"hidden")
        .await
        .unwrap();
    // A mutex whose holder's node only alice may read, and a waiter anyone may.
    let lock = format!("{root}/lock");
    alice.create().for_path(&lock, b"").await.unwrap();
    let held = alice
        .create()
        .with_mode(CreateMode::EphemeralSequential)
        .with_acl(Acl::creator_all())
        .for_path(&format!("{lock}/lock-"), b"")
        .await
        .unwrap();
    alice
        .create()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path(&format!("{lock}/lock-"), b"")
        .await
        .unwrap();

    let report = inspect(&reader, &format!("{root}/open")).await.unwrap();
    assert_eq!((report.layout, report.children), (Layout::Generic, 2));

    // ZOOKEEPER-2590 (3.8.4, 3.9.2): `exists` needs READ permission too, so such servers give
    // not even the stat of a node this session may not read; older ones do.
    let stat_refused = server
        .server_version()
        .await
        .unwrap()
        .exists_checks_read_permission();
    let report = inspect(&reader, &format!("{root}/open/secret"))
        .await
        .unwrap();
    assert!(report.no_read_permission, "{report}");
    assert_eq!(report.stat_unknown, stat_refused, "{report}");
    let data_len = if stat_refused { 0 } else { 6 };
    assert_eq!((report.data_len, report.data.as_deref()), (data_len, None));
    assert!(
        report.to_string().contains("no read permission"),
        "{report}"
    );

    let report = inspect(&reader, &lock).await.unwrap();
    assert_eq!(report.layout, Layout::Mutex, "{report}");
    let holder = &report.holders[0];
    assert!(holder.no_read_permission, "{report}");
    let session = if stat_refused {
        0
    } else {
        alice.session_id().unwrap()
    };
    assert_eq!(holder.session_id, session, "{report}");
    assert_eq!(report.waiters.len(), 1);
    assert_eq!(
        report.unreadable,
        vec![curator_framework::paths::node_name(&held).to_owned()]
    );
    assert!(
        report.to_string().contains("(no read permission)"),
        "{report}"
    );
    alice
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await
        .unwrap();
}
