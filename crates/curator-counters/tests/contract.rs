//! Every recipe of the crate used exactly as the recipe contract says: `new` without options,
//! `builder(..)…build()` with them; `start`/`close` (a second start is `AlreadyStarted`, a second
//! close is fine); `listenable()` and `stream()`; and no task left running once the recipes or
//! the client are closed.

use std::sync::Arc;
use std::time::Duration;

use curator_counters::{
    DistributedAtomicLong, PromotedToLock, SequentialIdGenerator, SharedCount, SharedValue,
};
use curator_framework::Error;
use curator_framework::codec::Utf8;
use curator_framework::retry::RetryNTimes;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::client;
use futures::StreamExt;
use parking_lot::Mutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_follow_the_recipe_contract() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let root = unique_root("counters-contract");

    // A recipe with options: builder … build. Without: new.
    let value = SharedValue::builder(c.clone(), &format!("{root}/motd"), "hi".to_owned())
        .codec(Utf8)
        .build()
        .unwrap();
    let count = SharedCount::new(c.clone(), &format!("{root}/count"), 1).unwrap();
    let ids = SequentialIdGenerator::new(c.clone(), &format!("{root}/ids"), "id-").unwrap();
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

    assert_eq!(ids.next_id().await.unwrap_err(), Error::NotStarted);
    value.start().await.unwrap();
    count.start().await.unwrap();
    ids.start().await.unwrap();
    assert_eq!(value.start().await, Err(Error::AlreadyStarted));
    assert_eq!(count.start().await, Err(Error::AlreadyStarted));
    assert_eq!(ids.start().await, Err(Error::AlreadyStarted));
    assert!(
        c.metrics().recipe_tasks >= 2,
        "the followers run as the client's tasks"
    );

    // Events through listenable() and through stream().
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let _listener = value
        .listenable()
        .add_listener(move |v| sink.lock().push(v.value));
    let mut counts = count.stream();
    value.set_value("hello".to_owned()).await.unwrap();
    count.set_count(2).await.unwrap();
    let next = tokio::time::timeout(Timing::new().wait(), counts.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.value, 2);
    curator_testkit::eventually("the value listener hears the write", || async {
        heard.lock().contains(&"hello".to_owned())
    })
    .await;
    assert!(ids.next_id().await.unwrap().name.starts_with("id-"));
    assert!(atomic.increment().await.unwrap().succeeded);

    for close in [value.close().await, count.close().await, ids.close().await] {
        close.unwrap();
    }
    // Idempotent, and closed for good.
    value.close().await.unwrap();
    count.close().await.unwrap();
    ids.close().await.unwrap();
    assert_eq!(value.start().await, Err(Error::Closed));
    assert_eq!(ids.next_id().await.unwrap_err(), Error::Closed);
    assert_eq!(c.metrics().recipe_tasks, 0, "closed recipes leave no task");
    atomic.flush_markers().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_started_counters() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let writer = client(&server.connect_string()).await;
    let root = unique_root("counters-client-close");
    let count = SharedCount::new(c.clone(), &format!("{root}/count"), 1).unwrap();
    count.start().await.unwrap();
    let heard = Arc::new(Mutex::new(0));
    let sink = Arc::clone(&heard);
    let _listener = count.listenable().add_listener(move |_| *sink.lock() += 1);
    assert!(c.metrics().recipe_tasks > 0);

    c.close().await;
    assert_eq!(
        c.metrics().recipe_tasks,
        0,
        "the client's close ended the follower"
    );
    // Nothing is heard after the close, though the node changes.
    SharedCount::new(writer.clone(), &format!("{root}/count"), 0)
        .unwrap()
        .set_count(7)
        .await
        .unwrap();
    let probe = SharedCount::new(writer, &format!("{root}/count"), 0).unwrap();
    probe.start().await.unwrap();
    assert_eq!(probe.count().unwrap(), 7);
    probe.close().await.unwrap();
    assert_eq!(*heard.lock(), 0);
    // The recipe's own close still works after the client's.
    count.close().await.unwrap();
}
