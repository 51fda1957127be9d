//! The recipe contract, as the barriers keep it (with `curator_testkit::contract`'s helpers).
//! None of them is long-lived: each has a `new` (no options), nothing to start or close and no
//! listeners; they run no background work while used, waiters end when their client closes,
//! and the only cleanup left to the background (the node of an abandoned `enter`) runs as a
//! recipe task that ends.

use std::time::Duration;

use curator_barriers::{DistributedBarrier, DistributedDoubleBarrier, Site, TwoPhaseCommit};
use curator_framework::Error;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::contract;
use tokio::time::Instant;

#[test]
fn handles_and_futures_are_send_and_sync() {
    contract::send_sync::<DistributedBarrier>();
    contract::send_sync::<DistributedDoubleBarrier>();
    contract::send_sync::<TwoPhaseCommit>();
    contract::send_sync::<Site>();
    // Never called: the futures only have to type-check as `Send`.
    fn send<T: Send>(_: &T) {}
    let _futures =
        |barrier: DistributedBarrier, double: DistributedDoubleBarrier, tx: TwoPhaseCommit| {
            send(&barrier.wait_on_barrier());
            send(&double.enter());
            send(&double.leave());
            send(&tx.join("site"));
            send(&tx.outcome(Duration::ZERO));
        };
}

#[tokio::test]
async fn construction_validates_its_input() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let bad = "bad path";
    assert!(matches!(
        DistributedBarrier::new(client.clone(), bad),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        DistributedDoubleBarrier::new(client.clone(), bad, 2),
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        DistributedDoubleBarrier::new(client.clone(), "/barrier", 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        TwoPhaseCommit::new(client.clone(), bad),
        Err(Error::InvalidPath { .. })
    ));
    client.close().await.unwrap();
}

#[tokio::test]
async fn an_abandoned_enter_leaves_nothing_and_the_member_may_enter_again() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root("contract-double-barrier");
    let member = DistributedDoubleBarrier::new(client.clone(), &path, 2).unwrap();
    {
        // Polled until its node exists (it cannot finish: it is one of two members), then dropped.
        let entering = member.enter();
        tokio::pin!(entering);
        let end = Instant::now() + Timing::new().wait();
        while curator_testkit::children(&client, &path).await.is_empty() {
            let polled = tokio::time::timeout(Duration::from_millis(10), &mut entering).await;
            assert!(polled.is_err(), "one of two members entered: {polled:?}");
            assert!(
                Instant::now() < end,
                "the member's node was not made in time"
            );
        }
        assert_eq!(client.metrics().recipe_tasks, 0, "entering runs no task");
    }
    curator_testkit::eventually("the abandoned member's node is deleted", || async {
        curator_testkit::children(&client, &path).await.is_empty()
    })
    .await;
    contract::no_recipe_tasks(&client).await;

    let other = DistributedDoubleBarrier::new(
        curator_testkit::client(&server.connect_string()).await,
        &path,
        2,
    )
    .unwrap();
    let (mine, theirs) = tokio::join!(member.enter(), other.enter());
    mine.unwrap();
    theirs.unwrap();
    let (mine, theirs) = tokio::join!(member.leave(), other.leave());
    mine.unwrap();
    theirs.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 0);
    client.close().await.unwrap();
}

#[tokio::test]
async fn waiters_end_when_their_client_closes() {
    let server = TestingServer::start().await.unwrap();
    let root = unique_root("contract-barrier-close");
    let owner = curator_testkit::client(&server.connect_string()).await;
    let barrier_path = format!("{root}/barrier");
    DistributedBarrier::new(owner.clone(), &barrier_path)
        .unwrap()
        .set_barrier()
        .await
        .unwrap();

    let client = curator_testkit::client(&server.connect_string()).await;
    let barrier = DistributedBarrier::new(client.clone(), &barrier_path).unwrap();
    let member =
        DistributedDoubleBarrier::new(client.clone(), &format!("{root}/double"), 2).unwrap();
    let waiting = tokio::spawn(async move { barrier.wait_on_barrier().await });
    let entering = tokio::spawn(async move { member.enter().await });
    curator_testkit::eventually("the member waits in the barrier", || async {
        curator_testkit::children(&owner, &format!("{root}/double"))
            .await
            .len()
            == 1
    })
    .await;
    assert_eq!(client.metrics().recipe_tasks, 0);

    client.close().await.unwrap();
    let waited = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .expect("the barrier's waiter ends")
        .unwrap();
    assert_eq!(waited, Err(Error::Closed));
    let entered = tokio::time::timeout(Timing::new().wait(), entering)
        .await
        .expect("the double barrier's waiter ends")
        .unwrap();
    assert_eq!(entered, Err(Error::Closed));
    assert_eq!(client.metrics().recipe_tasks, 0);
    // The closed session took the member's node with it.
    curator_testkit::eventually("the member's node is gone", || async {
        curator_testkit::children(&owner, &format!("{root}/double"))
            .await
            .is_empty()
    })
    .await;
    owner.close().await.unwrap();
}
