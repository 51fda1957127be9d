//! The recipe contract, as `LeaderLatch` and `LeaderSelector` keep it: built by a builder,
//! `start()` once, `close()` idempotent, the latch's events through `listenable()` and
//! `stream()`, leadership as a `Hold`, and background work that ends with the recipe or with the
//! client.

use curator_election::{
    CloseMode, LatchEvent, LeaderLatch, LeaderLatchBuilder, LeaderObserver, LeaderSelector,
    LeaderSelectorBuilder, LeadershipContext, Participant,
};
use curator_framework::recipe::Hold;
use curator_framework::{CuratorFramework, Error};
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;
use tokio::sync::mpsc;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn handles_builders_and_futures_are_send_and_sync() {
    assert_send_sync::<LeaderLatch>();
    assert_send_sync::<LeaderLatchBuilder>();
    assert_send_sync::<LeaderSelector>();
    assert_send_sync::<LeaderSelectorBuilder>();
    assert_send_sync::<LeadershipContext>();
    assert_send_sync::<LatchEvent>();
    assert_send_sync::<LeaderObserver>();
    assert_send_sync::<Participant>();
    // Never called: the futures only have to type-check as `Send`.
    fn send<T: Send>(_: &T) {}
    let _futures = |latch: LeaderLatch, selector: LeaderSelector| {
        send(&latch.start());
        send(&latch.await_leadership());
        send(&latch.close());
        send(&selector.start());
        send(&selector.close());
        send(&latch.proclaim("id"));
    };
    let _observer_futures = |observer: LeaderObserver| {
        send(&observer.start());
        send(&observer.close());
    };
}

/// The stat of `node`, which must exist.
async fn czxid(client: &CuratorFramework, node: &str) -> i64 {
    client
        .check_exists()
        .for_path(node)
        .await
        .unwrap()
        .expect("the node exists")
        .czxid
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Timing::new().wait(), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

#[tokio::test]
async fn a_leader_latch_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-latch");
    assert!(matches!(
        LeaderLatch::builder(client.clone(), "bad path", "x").build(),
        Err(Error::InvalidPath { .. })
    ));
    let latch = LeaderLatch::builder(client.clone(), &path, "only")
        .close_mode(CloseMode::NotifyLeader)
        .build()
        .unwrap();
    let (heard_tx, mut heard) = mpsc::unbounded_channel();
    let _listener = latch.listenable().add_listener(move |event| {
        let _ = heard_tx.send(event);
    });
    let mut events = latch.stream();
    assert!(latch.hold().is_none());

    latch.start().await.unwrap();
    assert_eq!(latch.start().await, Err(Error::AlreadyStarted));
    // start() returns with the offer made: this participant is in line.
    let node = latch.node_path().expect("the offer is made");
    assert_eq!(latch.participant_nodes().await.unwrap(), [node.as_str()]);

    for (via, next) in [
        ("listenable()", heard.recv().await),
        ("stream()", events.next().await),
    ] {
        assert_eq!(next, Some(LatchEvent::OfferMade), "{via}");
    }
    let is_leader = |event: &LatchEvent| *event == LatchEvent::IsLeader;
    within("IsLeader through listenable()", async {
        while !is_leader(&heard.recv().await.unwrap()) {}
    })
    .await;
    within("IsLeader through stream()", async {
        while !is_leader(&events.next().await.unwrap()) {}
    })
    .await;
    assert!(latch.has_leadership());
    assert_eq!(client.metrics().recipe_tasks, 1, "the latch's task");

    // Leadership is a hold: the latch node, its czxid, and a signal that it ended.
    let hold = latch.hold().expect("a leader holds");
    assert_eq!(hold.node_path(), node);
    assert_eq!(hold.fencing_token(), czxid(&client, &node).await);
    assert!(!hold.is_lost());

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
    assert_eq!(latch.close().await, Ok(()));
    assert_eq!(latch.start().await, Err(Error::Closed));
    assert_eq!(latch.await_leadership().await, Err(Error::Closed));
    assert_eq!(client.metrics().recipe_tasks, 0);

    // Closing a latch that never started is fine too.
    let never = LeaderLatch::builder(client.clone(), &path, "never")
        .build()
        .unwrap();
    assert_eq!(never.close().await, Ok(()));
    assert_eq!(never.start().await, Err(Error::Closed));
    client.close().await;
}

#[tokio::test]
async fn a_leader_selector_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-selector");
    let (contexts_tx, mut contexts) = mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(client.clone(), &path, "only", move |context| {
        let _ = contexts_tx.send(context.clone());
        async move { context.lost().await }
    })
    .auto_requeue()
    .build()
    .unwrap();

    selector.start().await.unwrap();
    assert_eq!(selector.start().await, Err(Error::AlreadyStarted));
    // The leader's task holds the lock node: its hold has the node's czxid as fencing token.
    let context = within("the task runs", contexts.recv()).await.unwrap();
    assert!(selector.has_leadership());
    let hold: &Hold = &context;
    assert_eq!(
        selector.participant_nodes().await.unwrap(),
        [hold.node_path()]
    );
    assert_eq!(hold.fencing_token(), czxid(&client, hold.node_path()).await);
    assert!(!hold.is_lost());
    assert_eq!(client.metrics().recipe_tasks, 1, "the selector's task");

    selector.close().await.unwrap();
    assert!(hold.is_lost(), "the leadership ended with close()");
    assert!(!selector.has_leadership());
    assert!(
        selector.participant_nodes().await.unwrap().is_empty(),
        "close() released the lock"
    );
    assert_eq!(selector.close().await, Ok(()));
    assert_eq!(selector.start().await, Err(Error::Closed));
    assert_eq!(client.metrics().recipe_tasks, 0);
    client.close().await;
}

#[tokio::test]
async fn recipes_left_open_end_with_the_clients_close() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("contract-client-close");
    let latch = LeaderLatch::builder(client.clone(), &format!("{root}/latch"), "open")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    assert!(
        latch
            .await_leadership_timeout(Timing::new().wait())
            .await
            .unwrap()
    );
    let latch_hold = latch.hold().unwrap();
    let (contexts_tx, mut contexts) = mpsc::unbounded_channel();
    let selector = LeaderSelector::builder(
        client.clone(),
        &format!("{root}/selector"),
        "open",
        move |context| {
            let _ = contexts_tx.send(context.clone());
            async move { context.lost().await }
        },
    )
    .build()
    .unwrap();
    selector.start().await.unwrap();
    let selector_hold = within("the task runs", contexts.recv()).await.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 2);

    client.close().await;
    assert_eq!(client.metrics().recipe_tasks, 0, "both tasks ended");
    assert!(latch_hold.is_lost() && selector_hold.is_lost());
    assert!(!latch.has_leadership() && !selector.has_leadership());
    assert_eq!(latch.await_leadership().await, Err(Error::Closed));
    // The session, and the recipes' nodes with it, are gone: closing them now is fine.
    assert_eq!(latch.close().await, Ok(()));
    assert_eq!(selector.close().await, Ok(()));
}
