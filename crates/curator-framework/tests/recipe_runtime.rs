//! The recipe runtime against a real server: recipe tasks live in the client's task tree, the
//! client's close cancels and awaits them, listeners hear nothing afterwards and streams end.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_framework::recipe::{Hold, Lifecycle};
use curator_framework::{ConnectionState, CreateMode, Error};
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;

#[tokio::test]
async fn the_clients_close_cancels_and_awaits_recipe_tasks() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let tasks = client.recipe_tasks("test recipe");
    let ended = Arc::new(AtomicUsize::new(0));

    // A task that runs until cancelled, and notes that it ended.
    struct NoteOnDrop(Arc<AtomicUsize>);
    impl Drop for NoteOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let note = NoteOnDrop(Arc::clone(&ended));
    tasks
        .spawn(async move {
            let _note = note;
            std::future::pending::<()>().await;
        })
        .detach();
    // A cooperative one finishes its step before it ends.
    let steps = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&steps);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    tasks
        .child("cooperative")
        .spawn_cooperative(|cancelled| async move {
            let _ = started_tx.send(());
            cancelled.cancelled().await;
            // Work after the cancellation still runs to its end.
            tokio::time::sleep(Duration::from_millis(50)).await;
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .detach();
    started_rx.await.unwrap();
    // A handle dropped cancels its task at once.
    let dropped = tasks.spawn(std::future::pending());
    assert_eq!(client.metrics().recipe_tasks, 3);
    drop(dropped);
    curator_test::eventually("the dropped handle's task ends", || async {
        client.metrics().recipe_tasks == 2
    })
    .await;

    client.close().await.unwrap();
    assert_eq!(client.metrics().recipe_tasks, 0);
    assert_eq!(ended.load(Ordering::SeqCst), 1, "the task was dropped");
    assert_eq!(
        steps.load(Ordering::SeqCst),
        1,
        "the cooperative task finished"
    );
    assert!(tasks.is_cancelled());
    // Spawning after the close runs nothing.
    tasks.spawn(std::future::pending()).detach();
    curator_test::eventually("a task spawned after close ends at once", || async {
        client.metrics().recipe_tasks == 0
    })
    .await;
}

#[tokio::test]
async fn after_close_no_listener_hears_and_streams_end() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let container = client.listener_container::<u32>("test events");
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let _listener = container.listenable().add_listener(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let mut events = container.listenable().map(|n| n * 2).stream();
    let mut states = client.connection_state_stream();
    container.publish(1);
    assert_eq!(events.next().await, Some(2));
    assert_eq!(heard.load(Ordering::SeqCst), 1);

    client.close().await.unwrap();
    container.publish(2);
    assert_eq!(
        tokio::time::timeout(Timing::new().wait(), events.next())
            .await
            .unwrap(),
        None,
        "a client's stream ends with the client"
    );
    assert_eq!(
        tokio::time::timeout(Timing::new().wait(), states.next_connected())
            .await
            .unwrap(),
        Err(Error::Closed)
    );
    assert_eq!(heard.load(Ordering::SeqCst), 1, "nothing heard after close");
}

#[tokio::test]
async fn a_hold_is_lost_when_the_connection_is_suspended() {
    let server = TestingServer::start().await.unwrap();
    let proxy = curator_test::FaultProxy::start(&server.connect_string())
        .await
        .unwrap();
    let client = support::connected(&proxy.connect_string()).await;
    let path = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{}/held", unique_root("hold")), b"")
        .with_stat()
        .await
        .unwrap();
    let hold = Hold::new(&client, path.0.clone(), path.1.czxid);
    assert_eq!(hold.node_path(), path.0);
    assert_eq!(hold.fencing_token(), path.1.czxid);
    assert!(!hold.is_lost());
    let mut states = client.connection_state_stream();
    // What a state listener finds when it hears of an error state: the hold already lost.
    let seen_lost = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let _listening = client.connection_state_listenable().add_listener({
        let (hold, seen_lost) = (hold.clone(), Arc::clone(&seen_lost));
        move |state: ConnectionState| seen_lost.lock().push((state, hold.is_lost()))
    });
    proxy.pause();
    support::expect_states(&mut states, &[ConnectionState::Suspended]).await;
    tokio::time::timeout(Timing::new().wait(), hold.lost())
        .await
        .expect("the hold is lost at Suspended");
    assert!(hold.is_lost());
    assert!(hold.clone().is_lost(), "clones share the signal");

    // Back on the same session: the old hold stays lost; one made now is not, until the next
    // error state.
    proxy.resume();
    support::expect_states(&mut states, &[ConnectionState::Reconnected]).await;
    assert!(hold.is_lost());
    let again = Hold::new(&client, path.0.clone(), path.1.czxid);
    assert!(!again.is_lost());
    proxy.pause();
    support::expect_states(&mut states, &[ConnectionState::Suspended]).await;
    tokio::time::timeout(Timing::new().wait(), again.lost())
        .await
        .expect("the new hold is lost at the next Suspended");
    proxy.resume();
    support::expect_states(&mut states, &[ConnectionState::Reconnected]).await;
    assert_eq!(
        seen_lost.lock()[..2],
        [
            (ConnectionState::Suspended, true),
            (ConnectionState::Reconnected, true)
        ],
        "a listener hearing Suspended finds the hold lost already"
    );
}

#[tokio::test]
async fn a_hold_is_lost_when_its_client_closes() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let hold = Hold::new(&client, "/anything".into(), 1);
    assert!(!hold.is_lost());
    client.close().await.unwrap();
    assert!(hold.is_lost());
    tokio::time::timeout(Timing::new().wait(), hold.lost())
        .await
        .expect("lost() resolves at the client's close");
}

#[test]
fn a_lifecycle_starts_once_and_closes_for_good() {
    let lifecycle = Lifecycle::new();
    assert_eq!(lifecycle.ensure_startable(), Ok(()));
    lifecycle.start().unwrap();
    assert_eq!(lifecycle.ensure_startable(), Err(Error::AlreadyStarted));
    assert!(lifecycle.close());
    assert_eq!(lifecycle.ensure_started(), Err(Error::Closed));
}
