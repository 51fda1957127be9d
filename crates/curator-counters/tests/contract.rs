//! The recipe contract (`curator_testkit::contract`) for every long-lived recipe of the crate,
//! and what it means for the others: ids are handed out only between `start` and `close`, and
//! an atomic value's background work (its marker's delete) ends with it.

use std::time::Duration;

use curator_counters::{
    DistributedAtomicLong, PromotedToLock, SequentialIdGenerator, SharedCount, SharedValue,
    SharedValueBuilder,
};
use curator_framework::Error;
use curator_framework::codec::{Json, Utf8};
use curator_framework::retry::RetryNTimes;
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, contract};

#[test]
fn handles_and_builders_are_send_and_sync() {
    contract::send_sync::<SharedValue<String, Utf8>>();
    contract::send_sync::<SharedValueBuilder<String, Json>>();
    contract::send_sync::<SharedCount>();
    contract::send_sync::<SequentialIdGenerator>();
    contract::send_sync::<DistributedAtomicLong>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_value_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = format!("{}/motd", unique_root("contract-shared-value"));
    let value = SharedValue::builder(c.clone(), &path, "hi".to_owned())
        .codec(Utf8)
        .build()
        .unwrap();
    contract::check_events(
        &c,
        &value,
        async || value.set_value("hello".to_owned()).await.unwrap(),
        |seen| seen.value == "hello",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_count_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = format!("{}/count", unique_root("contract-shared-count"));
    let count = SharedCount::new(c.clone(), &path, 1).unwrap();
    contract::check_events(
        &c,
        &count,
        async || count.set_count(2).await.unwrap(),
        |seen| seen.value == 2,
    )
    .await;

    let c = client(&server.connect_string()).await;
    let writer = SharedCount::new(client(&server.connect_string()).await, &path, 0).unwrap();
    let count = SharedCount::new(c.clone(), &path, 1).unwrap();
    contract::ends_with_its_client(
        &c,
        &count,
        async || count.set_count(3).await.unwrap(),
        |seen| seen.value == 3,
        async || writer.set_count(7).await.unwrap(),
        |seen| seen.value == 7,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_generator_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let ids = SequentialIdGenerator::new(c.clone(), &unique_root("contract-ids"), "id-").unwrap();
    assert_eq!(ids.next_id().await.unwrap_err(), Error::NotStarted);
    contract::check(&c, &ids, async || {
        assert!(ids.next_id().await.unwrap().name.starts_with("id-"));
    })
    .await;
    assert_eq!(ids.next_id().await.unwrap_err(), Error::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_atomic_values_work_ends_with_it() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("contract-atomic");
    let atomic = DistributedAtomicLong::builder(
        c.clone(),
        &format!("{root}/n"),
        RetryNTimes::new(5, Duration::ZERO),
    )
    .promoted_to_lock(PromotedToLock::new(
        &format!("{root}/n-lock"),
        RetryNTimes::new(5, Duration::ZERO),
    ))
    .build()
    .unwrap();
    assert!(atomic.increment().await.unwrap().succeeded);
    // Its marker is deleted in the background once the last handle goes.
    drop(atomic);
    contract::no_recipe_tasks(&c).await;
    assert!(
        curator_testkit::children(&c, &format!("{root}/n"))
            .await
            .is_empty(),
        "the marker went with the value"
    );
}
