//! Typed views: values decoded with serde; data that does not decode is reported, never a panic.

mod support;

use curator_caches::{CuratorCache, TypedEvent};
use curator_framework::Error;
use curator_framework::codec::Utf8;
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Endpoint {
    host: String,
    port: u16,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_decode_and_bad_data_is_reported_as_an_error_event() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("typed");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/good"), br#"{"host":"a","port":1}"#)
        .await
        .unwrap();
    let cache = CuratorCache::builder(client.clone(), &format!("{root}/good"))
        .build()
        .unwrap();
    let typed = cache.typed::<Endpoint>();
    let mut events = typed.stream();
    cache.start().await.unwrap();
    let mut next = async || {
        tokio::time::timeout(Timing::new().wait(), events.next())
            .await
            .expect("an event in time")
            .unwrap()
    };
    match next().await {
        TypedEvent::Created { value, .. } => assert_eq!(value.port, 1),
        other => panic!("expected a value, got {other:?}"),
    }
    assert_eq!(next().await, TypedEvent::Initialized);

    let written = typed
        .encode(&Endpoint {
            host: "b".into(),
            port: 2,
        })
        .unwrap();
    client
        .set_data()
        .for_path(&format!("{root}/good"), written)
        .await
        .unwrap();
    match next().await {
        TypedEvent::Changed { value, .. } => assert_eq!(value.host, "b"),
        other => panic!("expected a change, got {other:?}"),
    }

    client
        .set_data()
        .for_path(&format!("{root}/good"), b"not json")
        .await
        .unwrap();
    match next().await {
        TypedEvent::Undecodable {
            node,
            error: Error::Decode { path, reason },
        } => {
            assert_eq!(path, format!("{root}/good"));
            assert_eq!(node.data(), Some(&b"not json"[..]));
            assert!(!reason.is_empty());
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    assert!(matches!(
        typed.get(&format!("{root}/good")),
        Some(Err(Error::Decode { .. }))
    ));
    // Another framework codec on the same cache reads the same bytes.
    assert_eq!(
        cache
            .typed::<String>()
            .codec(Utf8)
            .get(&format!("{root}/good"))
            .unwrap()
            .unwrap(),
        "not json"
    );
    // The raw cache still has the bytes, and it goes on.
    assert_eq!(
        cache.get(&format!("{root}/good")).unwrap().data(),
        Some(&b"not json"[..])
    );
    client
        .set_data()
        .for_path(&format!("{root}/good"), br#"{"host":"c","port":3}"#)
        .await
        .unwrap();
    match next().await {
        TypedEvent::Changed { value, .. } => assert_eq!(value.port, 3),
        other => panic!("expected a change, got {other:?}"),
    }
    assert_eq!(
        typed.get(&format!("{root}/good")).unwrap().unwrap(),
        Endpoint {
            host: "c".into(),
            port: 3
        }
    );
    cache.close().await.unwrap();
}
