//! More recipe kinds built by the Rust recipes: leader selector, multi-lock, atomic long, set
//! partitioner, service discovery, and delay and id queues.

mod common;

use std::time::{Duration, SystemTime};

use curator_counters::DistributedAtomicLong;
use curator_discovery::{ServiceDiscovery, ServiceInstance};
use curator_election::LeaderSelector;
use curator_framework::retry::RetryNTimes;
use curator_inspect::{Layout, Who, inspect};
use curator_locks::{InterProcessMultiLock, InterProcessMutex};
use curator_nodes::SetPartitioner;
use curator_queues::{DistributedDelayQueue, DistributedIdQueue, DistributedQueue};
use curator_test::{TestingServer, unique_root};

use common::{client, report_when};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_leader_and_a_waiting_participant_by_id() {
    let server = TestingServer::start().await.unwrap();
    let (a, b) = (
        client(&server, "sel-a").await,
        client(&server, "sel-b").await,
    );
    let path = unique_root("inspect-selector");
    let lead_forever = |_context| std::future::pending::<()>();
    let first = LeaderSelector::builder(a.clone(), &path, "first", lead_forever)
        .build()
        .unwrap();
    first.start().await.unwrap();
    report_when(&a, &path, "first leads", |r| r.leader.is_some()).await;
    let second = LeaderSelector::builder(b.clone(), &path, "second", lead_forever)
        .build()
        .unwrap();
    second.start().await.unwrap();
    let report = report_when(&a, &path, "second waits", |r| r.waiters.len() == 1).await;
    assert_eq!(report.layout, Layout::LeaderSelector);
    let leader = report.leader.unwrap();
    assert_eq!(
        (leader.who.text.as_deref(), leader.session_id),
        (Some("first"), a.session_id().unwrap())
    );
    assert_eq!(
        (
            report.waiters[0].who.text.as_deref(),
            report.waiters[0].session_id
        ),
        (Some("second"), b.session_id().unwrap())
    );
    first.close().await.unwrap();
    second.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_lock_counter_partitioner_discovery_and_queues() {
    let server = TestingServer::start().await.unwrap();
    let (a, b) = (
        client(&server, "multi").await,
        client(&server, "other").await,
    );
    let root = unique_root("inspect-more");
    let me = (Who::from(a.identity()), a.session_id().unwrap());

    // A multi-lock over two mutexes under one parent, and a waiter on one of them.
    let multi = InterProcessMultiLock::new(vec![
        InterProcessMutex::builder(a.clone(), &format!("{root}/multi/x"))
            .build()
            .unwrap(),
        InterProcessMutex::builder(a.clone(), &format!("{root}/multi/y"))
            .build()
            .unwrap(),
    ]);
    let guard = multi.acquire().await.unwrap();
    let waiting = InterProcessMutex::builder(b.clone(), &format!("{root}/multi/y"))
        .build()
        .unwrap();
    let task = tokio::spawn(async move {
        let guard = waiting.acquire().await.unwrap();
        std::future::pending::<()>().await;
        drop(guard);
    });
    let report = report_when(&a, &format!("{root}/multi"), "the waiter queues", |r| {
        r.sections.iter().any(|s| s.waiters.len() == 1)
    })
    .await;
    assert_eq!(report.layout, Layout::MultiLock);
    let holders: Vec<_> = report
        .sections
        .iter()
        .map(|s| {
            (
                s.path.clone(),
                s.holders
                    .iter()
                    .map(|p| (p.who.clone(), p.session_id))
                    .collect::<Vec<_>>(),
                s.waiters.iter().map(|p| p.session_id).collect::<Vec<_>>(),
            )
        })
        .collect();
    assert_eq!(
        holders,
        vec![
            (format!("{root}/multi/x"), vec![me.clone()], vec![]),
            (
                format!("{root}/multi/y"),
                vec![me.clone()],
                vec![b.session_id().unwrap()]
            ),
        ]
    );
    task.abort();
    drop(guard);

    // An atomic long.
    let counter_path = format!("{root}/counter");
    let counter = DistributedAtomicLong::builder(
        a.clone(),
        &counter_path,
        RetryNTimes::new(10, Duration::from_millis(10)),
    )
    .build()
    .unwrap();
    counter.add(-42).await.unwrap();
    let report = inspect(&a, &counter_path).await.unwrap();
    assert_eq!(
        (report.layout, report.value),
        (Layout::AtomicLong, Some(-42))
    );

    // A set partitioner with one member holding both items.
    let partition_path = format!("{root}/partition");
    let partitioner = SetPartitioner::builder(a.clone(), &partition_path, ["i1", "i2"])
        .id("p1")
        .settle(Duration::ZERO)
        .build()
        .unwrap();
    partitioner.start().await.unwrap();
    let report = report_when(&a, &partition_path, "both items are held", |r| {
        r.sections.len() == 2 && r.sections.iter().all(|s| s.holders.len() == 1)
    })
    .await;
    assert_eq!(report.layout, Layout::SetPartitioner);
    assert_eq!(
        report
            .members
            .iter()
            .map(|m| (m.node.as_str(), m.session_id))
            .collect::<Vec<_>>(),
        vec![("members/p1", a.session_id().unwrap())]
    );
    assert!(
        report
            .sections
            .iter()
            .all(|s| s.holders[0].session_id == a.session_id().unwrap())
    );
    partitioner.close().await.unwrap();

    // Service discovery: a base path with one service and two instances.
    let base = format!("{root}/services");
    let discovery: ServiceDiscovery = ServiceDiscovery::builder(a.clone(), &base).build().unwrap();
    for (id, port) in [("i1", 80), ("i2", 81)] {
        let instance: ServiceInstance = ServiceInstance::builder("api")
            .id(id)
            .address("10.0.0.1")
            .port(port)
            .build()
            .unwrap();
        discovery.register_service(&instance).await.unwrap();
    }
    let report = inspect(&a, &base).await.unwrap();
    assert_eq!(report.layout, Layout::ServiceDiscovery);
    assert_eq!(
        report.sections[0]
            .members
            .iter()
            .map(|m| (m.who.text.clone().unwrap(), m.session_id))
            .collect::<Vec<_>>(),
        vec![
            ("i1 at 10.0.0.1:80".to_owned(), a.session_id().unwrap()),
            ("i2 at 10.0.0.1:81".to_owned(), a.session_id().unwrap())
        ]
    );
    discovery.close().await.unwrap();

    // Queues: plain, delay (the next due first), id.
    let plain_path = format!("{root}/plain");
    let plain = DistributedQueue::<String>::builder(a.clone(), &plain_path)
        .build()
        .unwrap();
    plain.start().await.unwrap();
    plain.put(&"one".to_owned()).await.unwrap();
    let report = inspect(&a, &plain_path).await.unwrap();
    assert_eq!(report.layout, Layout::DistributedQueue);
    assert_eq!(report.queue.unwrap().depth, 1);

    let delay_path = format!("{root}/delay");
    let delay = DistributedDelayQueue::<String>::builder(a.clone(), &delay_path)
        .build()
        .unwrap();
    delay.start().await.unwrap();
    let now = SystemTime::now();
    delay
        .put_at(&"late".to_owned(), now + Duration::from_secs(7200))
        .await
        .unwrap();
    delay
        .put_at(&"soon".to_owned(), now + Duration::from_secs(3600))
        .await
        .unwrap();
    let report = inspect(&a, &delay_path).await.unwrap();
    assert_eq!(report.layout, Layout::DelayQueue);
    let queue = report.queue.unwrap();
    assert_eq!(queue.depth, 2);
    assert!(
        queue.oldest.as_deref().unwrap().ends_with("0000000001"),
        "the one due first: {queue:?}"
    );

    let ids_path = format!("{root}/ids");
    let ids = DistributedIdQueue::<String>::builder(a.clone(), &ids_path)
        .build()
        .unwrap();
    ids.start().await.unwrap();
    ids.put(&"x".to_owned(), "job-7").await.unwrap();
    let report = inspect(&a, &ids_path).await.unwrap();
    assert_eq!(report.layout, Layout::IdQueue);
    assert_eq!(
        report.queue.unwrap().oldest.as_deref(),
        Some("queue-|job-7|0000000000")
    );
}
