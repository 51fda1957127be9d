//! Reports on scenarios built by the Rust recipes equal the known scenario: holders, waiters in
//! order, identities and session ids.

mod common;

use curator_barriers::{DistributedBarrier, DistributedDoubleBarrier};
use curator_counters::SharedCount;
use curator_election::LeaderLatch;
use curator_framework::{CreateMode, CuratorFramework};
use curator_inspect::{Layout, Participant, Report, Who, inspect};
use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases,
};
use curator_nodes::GroupMember;
use curator_queues::{DistributedPriorityQueue, SimpleDistributedQueue};
use curator_test::{TestingServer, Timing, unique_root};

use common::{client, report_when};

/// (who, session) of each participant.
fn who(list: &[Participant]) -> Vec<(Who, i64)> {
    list.iter().map(|p| (p.who.clone(), p.session_id)).collect()
}

fn me(client: &CuratorFramework) -> (Who, i64) {
    (Who::from(client.identity()), client.session_id().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutex_holder_and_waiters_in_order_then_the_next_after_expiry() {
    let server = TestingServer::start().await.unwrap();
    let (a, b, c) = (
        client(&server, "alpha").await,
        client(&server, "beta").await,
        client(&server, "gamma").await,
    );
    let path = unique_root("inspect-mutex");
    let guard = InterProcessMutex::builder(a.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mut waiters = Vec::new();
    for (n, waiter) in [&b, &c].into_iter().enumerate() {
        let mutex = InterProcessMutex::builder(waiter.clone(), &path)
            .build()
            .unwrap();
        waiters.push(tokio::spawn(async move {
            let guard = mutex.acquire().await.unwrap();
            std::future::pending::<()>().await;
            drop(guard);
        }));
        report_when(&a, &path, "the waiter queues", |r| r.waiters.len() == n + 1).await;
    }

    let report = inspect(&a, &path).await.unwrap();
    assert_eq!(report.layout, Layout::Mutex);
    assert_eq!(who(&report.holders), vec![me(&a)]);
    assert_eq!(who(&report.waiters), vec![me(&b), me(&c)]);
    let (_, stat) = a.get_data().for_path(guard.node_path()).await.unwrap();
    assert_eq!(report.holders[0].since_ms, stat.ctime);
    assert_eq!(
        format!("{}/{}", path, report.holders[0].node),
        guard.node_path()
    );
    let text = report.to_string();
    assert!(
        text.contains("alpha on") && text.contains("beta on"),
        "{text}"
    );

    // The holder's session expires: the next report shows beta holding, gamma waiting.
    let (_, mut watch) = curator_inspect::watch(&c, &path).await.unwrap();
    a.inject_session_expiration().await.unwrap();
    let deadline = tokio::time::Instant::now() + Timing::new().wait();
    loop {
        let report = tokio::time::timeout_at(deadline, watch.next())
            .await
            .expect("beta holds before the deadline")
            .unwrap()
            .unwrap();
        if who(&report.holders) == vec![me(&b)] {
            assert_eq!(who(&report.waiters), vec![me(&c)]);
            break;
        }
    }
    for task in waiters {
        task.abort();
    }
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_readers_hold_a_writer_waits() {
    let server = TestingServer::start().await.unwrap();
    let (a, b, c) = (
        client(&server, "reader-1").await,
        client(&server, "reader-2").await,
        client(&server, "writer").await,
    );
    let path = unique_root("inspect-rw");
    let r1 = InterProcessReadWriteLock::builder(a.clone(), &path)
        .build()
        .unwrap();
    let r2 = InterProcessReadWriteLock::builder(b.clone(), &path)
        .build()
        .unwrap();
    let w = InterProcessReadWriteLock::builder(c.clone(), &path)
        .build()
        .unwrap();
    let g1 = r1.read_lock().acquire().await.unwrap();
    let g2 = r2.read_lock().acquire().await.unwrap();
    let writer = tokio::spawn(async move {
        let guard = w.write_lock().acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    let report = report_when(&a, &path, "the writer queues", |r| r.waiters.len() == 1).await;
    assert_eq!(report.layout, Layout::ReadWriteLock);
    assert_eq!(who(&report.holders), vec![me(&a), me(&b)]);
    assert_eq!(who(&report.waiters), vec![me(&c)]);
    let roles: Vec<_> = report
        .holders
        .iter()
        .chain(&report.waiters)
        .map(|p| p.role.clone().unwrap())
        .collect();
    assert_eq!(roles, ["read", "read", "write"]);
    writer.abort();
    drop((g1, g2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_leases_and_a_waiting_acquirer() {
    let server = TestingServer::start().await.unwrap();
    let (a, b, c) = (
        client(&server, "lease-a").await,
        client(&server, "lease-b").await,
        client(&server, "lease-c").await,
    );
    let path = unique_root("inspect-semaphore");
    let sem = |client: &CuratorFramework| {
        InterProcessSemaphoreV2::builder(client.clone(), &path, MaxLeases::Fixed(2))
            .build()
            .unwrap()
    };
    let la = sem(&a).acquire().await.unwrap();
    let lb = sem(&b).acquire().await.unwrap();
    let waiting = sem(&c);
    let task = tokio::spawn(async move {
        let lease = waiting.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(lease);
    });
    let report = report_when(&a, &path, "the third acquirer waits", |r| {
        r.waiters.len() == 1
    })
    .await;
    assert_eq!(report.layout, Layout::SemaphoreV2, "{report:?}");
    assert_eq!(who(&report.holders), vec![me(&a), me(&b)]);
    assert_eq!(who(&report.waiters), vec![me(&c)]);
    task.abort();
    drop((la, lb));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_latch_leader_and_participants() {
    let server = TestingServer::start().await.unwrap();
    let (a, b) = (
        client(&server, "latch-a").await,
        client(&server, "latch-b").await,
    );
    let path = unique_root("inspect-latch");
    let first = LeaderLatch::builder(a.clone(), &path, "first")
        .build()
        .unwrap();
    first.start().await.unwrap();
    first.await_leadership().await.unwrap();
    let second = LeaderLatch::builder(b.clone(), &path, "second")
        .build()
        .unwrap();
    second.start().await.unwrap();
    let report = report_when(&a, &path, "both take part", |r| r.waiters.len() == 1).await;
    assert_eq!(report.layout, Layout::LeaderLatch);
    let leader = report.leader.clone().unwrap();
    assert_eq!(
        (leader.who.text.as_deref(), leader.session_id),
        (Some("first"), a.session_id().unwrap())
    );
    assert_eq!(
        report
            .waiters
            .iter()
            .map(|p| (p.who.text.clone().unwrap(), p.session_id))
            .collect::<Vec<_>>(),
        vec![("second".to_owned(), b.session_id().unwrap())]
    );
    first.close().await.unwrap();
    let report = report_when(&b, &path, "second leads", |r| {
        r.leader.as_ref().and_then(|l| l.who.text.as_deref()) == Some("second")
    })
    .await;
    assert!(report.waiters.is_empty());
    second.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_counters_groups_and_queues() {
    let server = TestingServer::start().await.unwrap();
    let (a, b) = (
        client(&server, "member-a").await,
        client(&server, "member-b").await,
    );
    let root = unique_root("inspect-misc");

    let barrier_path = format!("{root}/barrier");
    DistributedBarrier::new(a.clone(), &barrier_path)
        .unwrap()
        .set_barrier()
        .await
        .unwrap();
    let report = inspect(&b, &barrier_path).await.unwrap();
    assert_eq!(
        (report.layout, report.who),
        (Layout::Barrier, Some(Who::from(a.identity())))
    );

    let double_path = format!("{root}/double");
    let mut entering = Vec::new();
    for member in [&a, &b] {
        let barrier = DistributedDoubleBarrier::new(member.clone(), &double_path, 3).unwrap();
        entering.push(tokio::spawn(async move { barrier.enter().await }));
        let n = entering.len();
        report_when(member, &double_path, "the member enters", |r| {
            r.members.len() == n
        })
        .await;
    }
    let report = inspect(&a, &double_path).await.unwrap();
    assert_eq!(report.layout, Layout::DoubleBarrier);
    assert_eq!(who(&report.members), vec![me(&a), me(&b)]);
    assert_eq!(report.ready, Some(false));
    for task in entering {
        task.abort();
    }

    let count_path = format!("{root}/count");
    let count = SharedCount::new(a.clone(), &count_path, 7).unwrap();
    count.start().await.unwrap();
    let report = inspect(&a, &count_path).await.unwrap();
    assert_eq!(
        (report.layout, report.value),
        (Layout::SharedCount, Some(7))
    );

    let group_path = format!("{root}/group");
    let members = [
        GroupMember::new(a.clone(), &group_path, "m1", b"payload-1").unwrap(),
        GroupMember::new(b.clone(), &group_path, "m2", b"payload-2").unwrap(),
    ];
    for member in &members {
        member.start().await.unwrap();
    }
    let report = report_when(&a, &group_path, "both members", |r| r.members.len() == 2).await;
    assert_eq!(report.layout, Layout::GroupMember);
    assert_eq!(
        report
            .members
            .iter()
            .map(|p| (p.node.as_str(), p.who.text.as_deref(), p.session_id))
            .collect::<Vec<_>>(),
        vec![
            ("m1", Some("payload-1"), a.session_id().unwrap()),
            ("m2", Some("payload-2"), b.session_id().unwrap())
        ]
    );

    let simple_path = format!("{root}/simple");
    let simple = SimpleDistributedQueue::builder(a.clone(), &simple_path)
        .build()
        .unwrap();
    for item in [b"one", b"two"] {
        simple.offer(item).await.unwrap();
    }
    let report = inspect(&a, &simple_path).await.unwrap();
    assert_eq!(report.layout, Layout::SimpleQueue);
    let queue = report.queue.unwrap();
    assert_eq!(
        (queue.depth, queue.oldest.as_deref()),
        (2, Some("qn-0000000000"))
    );
    let (_, stat) = a
        .get_data()
        .for_path(&format!("{simple_path}/qn-0000000000"))
        .await
        .unwrap();
    assert_eq!(queue.oldest_since_ms, Some(stat.ctime));

    let priority_path = format!("{root}/priority");
    let priority: DistributedPriorityQueue<String> =
        DistributedPriorityQueue::builder(a.clone(), &priority_path)
            .build()
            .unwrap();
    priority.start().await.unwrap();
    priority.put(&"later".to_owned(), 5).await.unwrap();
    priority.put(&"first".to_owned(), -1).await.unwrap();
    let report = inspect(&a, &priority_path).await.unwrap();
    assert_eq!(report.layout, Layout::PriorityQueue);
    let queue = report.queue.unwrap();
    assert_eq!(queue.depth, 2);
    assert!(
        queue
            .oldest
            .as_deref()
            .unwrap()
            .starts_with("queue-0FFFFFFFF"),
        "{queue:?}"
    );
    assert_eq!(report.descendants, Some(2));
}

#[tokio::test]
async fn services_several_locks_and_unknown_layouts() {
    let server = TestingServer::start().await.unwrap();
    let a = client(&server, "svc").await;
    let root = unique_root("inspect-generic");

    // Service discovery instances as Java's Jackson writes them.
    let json = r#"{"name":"api","id":"i1","address":"10.0.0.1","port":80,"sslPort":null,"payload":null,"registrationTimeUTC":0,"serviceType":"DYNAMIC","uriSpec":null}"#;
    a.create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/services/api/i1"), json)
        .await
        .unwrap();
    let report = inspect(&a, &format!("{root}/services")).await.unwrap();
    assert_eq!(report.layout, Layout::ServiceDiscovery);
    assert_eq!(report.sections.len(), 1);
    assert_eq!(report.sections[0].layout, Layout::Service);
    assert_eq!(
        report.sections[0].members[0].who.text.as_deref(),
        Some("i1 at 10.0.0.1:80")
    );

    // Two mutexes under one parent: several locks.
    let g1 = InterProcessMutex::builder(a.clone(), &format!("{root}/locks/x"))
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let g2 = InterProcessMutex::builder(a.clone(), &format!("{root}/locks/y"))
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let report = inspect(&a, &format!("{root}/locks")).await.unwrap();
    assert_eq!(report.layout, Layout::MultiLock);
    assert_eq!(
        report
            .sections
            .iter()
            .map(|s| (s.layout, who(&s.holders)))
            .collect::<Vec<_>>(),
        vec![(Layout::Mutex, vec![me(&a)]), (Layout::Mutex, vec![me(&a)])]
    );
    drop((g1, g2));

    // Anything else: a generic report, and a missing node.
    a.create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/plain/child"), b"some bytes")
        .await
        .unwrap();
    let report = inspect(&a, &format!("{root}/plain")).await.unwrap();
    assert_eq!(
        (report.layout, report.children, report.descendants),
        (Layout::Generic, 1, Some(1))
    );
    let report = inspect(&a, &format!("{root}/none")).await.unwrap();
    assert_eq!(report.layout, Layout::Missing);
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), report);
}

/// `watch` goes on through a session expiry of the inspecting client: a lock taken after it is
/// reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_reports_on_through_a_session_expiry() {
    let server = TestingServer::start().await.unwrap();
    let (watcher, holder) = (
        client(&server, "watcher").await,
        client(&server, "holder").await,
    );
    let path = unique_root("inspect-watch-expiry");
    let (first, mut watch) = curator_inspect::watch(&watcher, &path).await.unwrap();
    assert!(first.holders.is_empty());
    watcher.inject_session_expiration().await.unwrap();
    let guard = InterProcessMutex::builder(holder.clone(), &path)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let reported = tokio::time::timeout(Timing::new().wait(), async {
        loop {
            let report = watch
                .next()
                .await
                .expect("the watch goes on after the expiry")
                .unwrap();
            if report.holders.len() == 1 {
                return report;
            }
        }
    })
    .await
    .expect("the holder is reported");
    assert_eq!(who(&reported.holders), vec![me(&holder)]);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_delay_records_show_holders_and_running_failures() {
    let server = TestingServer::start().await.unwrap();
    let (a, b) = (
        client(&server, "alpha").await,
        client(&server, "beta").await,
    );
    let hour = std::time::Duration::from_secs(3600);
    let path = unique_root("inspect-lock-delay");
    let mutex = |client: &CuratorFramework| {
        InterProcessMutex::builder(client.clone(), &path)
            .lock_delay(hour)
            .build()
            .unwrap()
    };
    let guard = mutex(&a).acquire().await.unwrap();
    let node = curator_framework::paths::node_name(guard.node_path()).to_owned();
    let report = inspect(&b, &path).await.unwrap();
    assert_eq!(report.layout, Layout::Mutex);
    assert_eq!(
        report.lock_delay,
        Some(vec![curator_inspect::DelayLine {
            node: node.clone(),
            failed: false,
            delay_ms: 3_600_000,
            until_ms: None
        }])
    );
    assert!(
        report
            .to_string()
            .contains(&format!("held by {node} (delay 1h0m)")),
        "{report}"
    );

    // The holder's session expires; the next contender sees the failure, and the lock stays
    // unavailable: the report says until when (on ZooKeeper's clock).
    a.inject_session_expiration().await.unwrap();
    let b_mutex = mutex(&b);
    curator_test::eventually("the failed holder's node is gone", || async {
        b_mutex.participant_nodes().await.unwrap().is_empty()
    })
    .await;
    assert!(b_mutex.try_acquire().await.unwrap().is_none());
    let report = inspect(&b, &path).await.unwrap();
    assert_eq!((report.layout, report.guess), (Layout::Mutex, true));
    let lines = report.lock_delay.clone().expect("a record");
    assert!(
        matches!(lines.as_slice(), [line] if line.failed && line.node == node
            && line.until_ms.is_some_and(|until| until > now_ms() + 3_000_000)),
        "{lines:?}"
    );
    let text = report.to_string();
    assert!(
        text.contains(&format!(
            "failed: {node} (delay 1h0m): unavailable, ends in"
        )),
        "{text}"
    );
    drop(guard);

    // A semaphore with a lock-delay and no lease now is still recognized (its `leases`
    // directory is persistent, for the record).
    let semaphore_path = unique_root("inspect-lock-delay-semaphore");
    let semaphore =
        InterProcessSemaphoreV2::builder(b.clone(), &semaphore_path, MaxLeases::Fixed(2))
            .lock_delay(hour)
            .build()
            .unwrap();
    semaphore.acquire().await.unwrap().release().await.unwrap();
    let report = inspect(&b, &semaphore_path).await.unwrap();
    for child in ["leases", "locks"] {
        let p = format!("{semaphore_path}/{child}");
        eprintln!(
            "{child}: {:?}",
            b.get_data()
                .for_path(&p)
                .await
                .map(|(d, s)| (String::from_utf8_lossy(&d).to_string(), s.ephemeral_owner))
        );
        eprintln!(
            "{child} children: {:?}",
            b.get_children().for_path(&p).await.map(|c| c.0)
        );
    }
    assert_eq!(report.layout, Layout::SemaphoreV2, "{report:?}");
    assert_eq!(report.lock_delay, Some(Vec::new()));
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}
