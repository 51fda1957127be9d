//! The recipe contract (`curator_testkit::contract`) for `LeaderLatch`, `LeaderSelector` and
//! `LeaderObserver`; and what leaderships add to it: each is a `Hold` on the leader's node,
//! lost when the leadership ends (by `close()`, or with the client's close).

use curator_election::{
    CloseMode, LatchEvent, LeaderLatch, LeaderLatchBuilder, LeaderObserver, LeaderSelector,
    LeaderSelectorBuilder, LeadershipContext, Participant,
};
use curator_framework::Error;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::contract::{self, Heard};
use futures::StreamExt;
use tokio::sync::mpsc;

fn is_leader(event: &LatchEvent) -> bool {
    *event == LatchEvent::IsLeader
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Timing::new().wait(), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

/// A selector on `path` whose leadership task hands its context out and runs until the
/// leadership ends.
fn selector(
    client: &curator_framework::CuratorFramework,
    path: &str,
) -> (LeaderSelector, mpsc::UnboundedReceiver<LeadershipContext>) {
    let (contexts_tx, contexts) = mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(client.clone(), path, "only", move |context| {
        let _ = contexts_tx.send(context.clone());
        async move { context.lost().await }
    })
    .build()
    .unwrap();
    (selector, contexts)
}

#[test]
fn handles_builders_and_futures_are_send_and_sync() {
    contract::send_sync::<LeaderLatch>();
    contract::send_sync::<LeaderLatchBuilder>();
    contract::send_sync::<LeaderSelector>();
    contract::send_sync::<LeaderSelectorBuilder>();
    contract::send_sync::<LeadershipContext>();
    contract::send_sync::<LatchEvent>();
    contract::send_sync::<LeaderObserver>();
    contract::send_sync::<Participant>();
    // Never called: the futures only have to type-check as `Send`.
    fn send<T: Send>(_: &T) {}
    let _futures = |latch: LeaderLatch| {
        send(&latch.await_leadership());
        send(&latch.proclaim("id"));
    };
}

#[tokio::test]
async fn a_leader_latch_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-latch");
    let latch = LeaderLatch::builder(client.clone(), &path, "only")
        .build()
        .unwrap();
    contract::check_events(&client, &latch, async || {}, is_leader).await;

    let client = curator_testkit::client(&server.connect_string()).await;
    let latch = LeaderLatch::builder(client.clone(), &path, "open")
        .build()
        .unwrap();
    contract::ends_with_its_client(
        &client,
        &latch,
        async || {},
        is_leader,
        async || {},
        |_| true,
    )
    .await;
}

#[tokio::test]
async fn a_latchs_leadership_is_a_hold_that_ends_with_close() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-latch-hold");
    assert!(matches!(
        LeaderLatch::builder(client.clone(), "bad path", "x").build(),
        Err(Error::InvalidPath { .. })
    ));
    let latch = LeaderLatch::builder(client.clone(), &path, "only")
        .close_mode(CloseMode::NotifyLeader)
        .build()
        .unwrap();
    let mut heard = Heard::on(&latch.listenable());
    let mut events = latch.stream();
    assert!(latch.hold().is_none());

    latch.start().await.unwrap();
    // start() returns with the offer made: this participant is in line.
    let node = latch.node_path().expect("the offer is made");
    assert_eq!(latch.participant_nodes().await.unwrap(), [node.as_str()]);
    assert_eq!(events.next().await, Some(LatchEvent::OfferMade));
    heard.both("IsLeader", is_leader).await;
    within("IsLeader through stream()", async {
        while !is_leader(&events.next().await.unwrap()) {}
    })
    .await;
    assert!(latch.has_leadership());
    assert_eq!(client.metrics().recipe_tasks, 1, "the latch's task");

    // Leadership is a hold: the latch node, its czxid, and a signal that it ended.
    let hold = latch.hold().expect("a leader holds");
    assert_eq!(hold.node_path(), node);
    contract::holds(&client, &hold).await;

    latch.close().await.unwrap();
    assert!(hold.is_lost(), "leadership ended with close()");
    assert!(latch.hold().is_none());
    assert!(!latch.has_leadership());
    assert_eq!(
        events.next().await,
        Some(LatchEvent::NotLeader),
        "CloseMode::NotifyLeader"
    );
    assert_eq!(events.next().await, Some(LatchEvent::Stopped));
    assert!(latch.participant_nodes().await.unwrap().is_empty());
    assert_eq!(latch.await_leadership().await, Err(Error::Closed));

    // Closing a latch that never started is fine too.
    let never = LeaderLatch::builder(client.clone(), &path, "never")
        .build()
        .unwrap();
    assert_eq!(never.close().await, Ok(()));
    assert_eq!(never.start().await, Err(Error::Closed));
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_leader_selector_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-selector");
    let (leader, mut contexts) = selector(&client, &path);
    let mut hold = None;
    contract::check(&client, &leader, async || {
        // The leader's task holds the lock node: its hold has the node's czxid as fencing token.
        let context = within("the task runs", contexts.recv()).await.unwrap();
        assert!(leader.has_leadership());
        assert_eq!(
            leader.participant_nodes().await.unwrap(),
            [context.node_path()]
        );
        contract::holds(&client, &context).await;
        assert_eq!(client.metrics().recipe_tasks, 1, "the selector's task");
        hold = Some(context);
    })
    .await;
    assert!(hold.unwrap().is_lost(), "the leadership ended with close()");
    assert!(!leader.has_leadership());
    assert!(
        leader.participant_nodes().await.unwrap().is_empty(),
        "close() released the lock"
    );

    let client = curator_testkit::client(&server.connect_string()).await;
    let (leader, _contexts) = selector(&client, &path);
    contract::ends_with_its_client_quietly(&client, &leader).await;
}

#[tokio::test]
async fn a_leader_observer_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-observer");
    let other = curator_testkit::client(&server.connect_string()).await;
    let observer = LeaderObserver::new(client.clone(), &path).unwrap();
    let leads = |id: &'static str| {
        move |leader: &Option<Participant>| leader.as_ref().is_some_and(|leader| leader.id == id)
    };
    let latch = LeaderLatch::builder(other.clone(), &path, "a")
        .build()
        .unwrap();
    contract::check_events(
        &client,
        &observer,
        async || latch.start().await.unwrap(),
        leads("a"),
    )
    .await;
    latch.close().await.unwrap();

    let client = curator_testkit::client(&server.connect_string()).await;
    let observer = LeaderObserver::new(client.clone(), &path).unwrap();
    let first = LeaderLatch::builder(other.clone(), &path, "b")
        .build()
        .unwrap();
    first.start().await.unwrap();
    let second = LeaderLatch::builder(other.clone(), &path, "c")
        .build()
        .unwrap();
    second.start().await.unwrap();
    contract::ends_with_its_client(
        &client,
        &observer,
        async || {},
        leads("b"),
        async || first.close().await.unwrap(),
        leads("c"),
    )
    .await;
    other.close().await.unwrap();
}

#[tokio::test]
async fn leaderships_left_open_end_with_the_clients_close() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("contract-client-close");
    let latch = LeaderLatch::builder(client.clone(), &format!("{root}/latch"), "open")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    within("the latch leads", latch.await_leadership())
        .await
        .unwrap();
    let latch_hold = latch.hold().unwrap();
    let (leader, mut contexts) = selector(&client, &format!("{root}/selector"));
    leader.start().await.unwrap();
    let selector_hold = within("the task runs", contexts.recv()).await.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 2);

    client.close().await.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 0, "both tasks ended");
    assert!(latch_hold.is_lost() && selector_hold.is_lost());
    assert!(!latch.has_leadership() && !leader.has_leadership());
    assert_eq!(latch.await_leadership().await, Err(Error::Closed));
    // The session, and the recipes' nodes with it, are gone: closing them now is fine.
    assert_eq!(latch.close().await, Ok(()));
    assert_eq!(leader.close().await, Ok(()));
}
