//! The recipe contract for `CachedModeled`: `start()` once (`AlreadyStarted` the second time,
//! `Closed` after close), events through `listenable()` and `stream()`, `close()` twice, no
//! recipe task left once closed, or once its client is closed with it started (what was
//! loaded stays readable, as a closed cache's content does; after `close()` reads are `Closed`).

use curator_framework::Error;
use curator_modeled::{ModelSpec, Modeled, ModeledEvent, ZPath};
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::{client, eventually};
use futures::StreamExt;
use tokio::sync::mpsc;

fn names(root: &str) -> ZPath {
    ZPath::parse(&format!("{root}/{{name}}")).unwrap()
}

async fn no_recipe_tasks(client: &curator_framework::CuratorFramework) {
    // The client's count drops a moment after the task ends (on the task's own thread).
    eventually("the recipe tasks to end", || {
        std::future::ready(client.metrics().recipe_tasks == 0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_model_keeps_the_contract() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-modeled");
    let spec = ModelSpec::<u32>::builder(names(&root)).build().unwrap();
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();
    let cached = Modeled::new(client.clone(), spec).cached().unwrap();
    let (sender, mut heard) = mpsc::unbounded_channel();
    let _listening = cached.listenable().add_listener(move |event| {
        let _ = sender.send(event);
    });
    let mut stream = cached.stream();

    cached.start().await.unwrap();
    assert_eq!(cached.start().await, Err(Error::AlreadyStarted));
    assert!(client.metrics().recipe_tasks >= 1);
    cached.resolve(["a"]).unwrap().set(&7).await.unwrap();
    let created =
        |event: &ModeledEvent<u32>| matches!(event, ModeledEvent::Created(node) if node.model == 7);
    let wait = Timing::new().wait();
    tokio::time::timeout(wait, async {
        while !created(&heard.recv().await.unwrap()) {}
    })
    .await
    .expect("the listener hears a's creation");
    tokio::time::timeout(wait, async {
        while !created(&stream.next().await.unwrap()) {}
    })
    .await
    .expect("the stream hears a's creation");

    cached.close().await.unwrap();
    cached.close().await.unwrap();
    assert_eq!(cached.start().await, Err(Error::Closed));
    no_recipe_tasks(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_ends_a_cached_model() {
    let server = TestingServer::start().await.unwrap();
    let client = client(&server.connect_string()).await;
    let root = unique_root("contract-modeled-client");
    let spec = ModelSpec::<u32>::builder(names(&root)).build().unwrap();
    let cached = Modeled::new(client.clone(), spec).cached().unwrap();
    cached.start().await.unwrap();
    cached.initialized().await.unwrap();
    client.close().await;
    no_recipe_tasks(&client).await;
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
