//! The recipe contract (`curator_testkit::contract`) for `CachedModeled` (made by
//! `Modeled::cached`), and what a cache's close means for its reads: after its client's close
//! what was loaded stays readable, as a closed cache's content does; after its own, reads are
//! `Closed`.

use curator_framework::Error;
use curator_modeled::{CachedModeled, ModelSpec, Modeled, ModeledEvent, ZPath};
use curator_test::{TestingServer, unique_root};
use curator_testkit::{client, contract};

fn names(root: &str) -> ZPath {
    ZPath::parse(&format!("{root}/{{name}}")).unwrap()
}

fn created(model: u32) -> impl Fn(&ModeledEvent<u32>) -> bool {
    move |event| matches!(event, ModeledEvent::Created(node) if node.model == model)
}

#[test]
fn handles_are_send_and_sync() {
    contract::send_sync::<Modeled<u32>>();
    contract::send_sync::<CachedModeled<u32>>();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_model_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-modeled");
    let spec = ModelSpec::<u32>::builder(names(&root)).build().unwrap();
    curator_testkit::create(&client, &root).await;
    let cached = Modeled::new(client.clone(), spec.clone()).cached().unwrap();
    contract::check_events(
        &client,
        &cached,
        async || drop(cached.resolve(["a"]).unwrap().set(&7).await.unwrap()),
        created(7),
    )
    .await;
    assert_eq!(
        cached.resolve(["a"]).unwrap().read().await,
        Err(Error::Closed)
    );

    let client = curator_testkit::client(&server.connect_string()).await;
    let writer = Modeled::new(
        curator_testkit::client(&server.connect_string()).await,
        spec.clone(),
    );
    let cached = Modeled::new(client.clone(), spec).cached().unwrap();
    contract::ends_with_its_client(
        &client,
        &cached,
        async || {},
        |event| *event == ModeledEvent::Initialized,
        async || drop(writer.resolve(["b"]).unwrap().set(&8).await.unwrap()),
        created(8),
    )
    .await;
    // After the close, reads are `Closed`; before it, what was loaded stays readable.
    assert_eq!(
        cached.resolve(["b"]).unwrap().read().await,
        Err(Error::Closed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_model_stays_readable_after_its_clients_close() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-modeled-client");
    let spec = ModelSpec::<u32>::builder(names(&root)).build().unwrap();
    let cached = Modeled::new(client.clone(), spec).cached().unwrap();
    cached.start().await.unwrap();
    cached.initialized().await.unwrap();
    client.close().await.unwrap();
    contract::no_recipe_tasks(&client).await;
    assert_eq!(
        cached.resolve(["a"]).unwrap().read().await,
        Err(Error::NoNode)
    );
    cached.close().await.unwrap();
    assert_eq!(
        cached.resolve(["a"]).unwrap().read().await,
        Err(Error::Closed)
    );
}
