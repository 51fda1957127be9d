//! `InterProcessReadWriteLock` against a real ZooKeeper server.

use std::time::Duration;

use curator_framework::paths;
use curator_locks::InterProcessReadWriteLock;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit as testkit;

const SHORT: Duration = Duration::from_millis(300);

#[tokio::test]
async fn readers_share_and_writers_exclude() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("rw-matrix");
    let a =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let b =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();

    // Read + read: together.
    let ra = a.read_lock().acquire().await.unwrap();
    let rb = b
        .read_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap()
        .expect("readers share");
    // Read held: no writer.
    assert!(
        b.write_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none()
    );
    drop(rb);
    ra.release().await.unwrap();

    // Write held: no reader, no other writer.
    let wa = a.write_lock().acquire().await.unwrap();
    assert!(
        b.read_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        b.write_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none()
    );
    // The write side is reentrant.
    let wa2 = a.write_lock().acquire().await.unwrap();
    wa2.release().await.unwrap();
    assert!(
        b.read_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none(),
        "still held once"
    );
    wa.release().await.unwrap();
    let rb = b
        .read_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap();
    assert!(rb.is_some());
}

#[tokio::test]
async fn a_reader_waits_for_a_writer_that_queued_before_it() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("rw-order");
    let first_reader =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let writer =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let late_reader =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();

    let read = first_reader.read_lock().acquire().await.unwrap();
    let queued = tokio::spawn({
        let writer = writer.clone();
        async move { writer.write_lock().acquire().await.map(drop) }
    });
    curator_test::eventually("the writer queues", || async {
        !writer
            .write_lock()
            .participant_nodes()
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    // A reader arriving after the queued writer waits, although only readers hold the lock.
    assert!(
        late_reader
            .read_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none()
    );
    read.release().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), queued)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_writer_downgrades_to_a_reader_without_letting_a_writer_in() {
    let server = TestingServer::start().await.unwrap();
    let observer = testkit::client(&server.connect_string()).await;
    let path = unique_root("rw-downgrade");
    let lock =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let other =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();

    let write = lock.write_lock().acquire().await.unwrap();
    let read = tokio::time::timeout(Timing::new().wait(), lock.read_lock().acquire())
        .await
        .unwrap()
        .unwrap();
    // Curator's layout: the downgrade's read node is plain ephemeral with the writer's sequence.
    let write_name = paths::node_name(write.node_path()).to_owned();
    let read_name = paths::node_name(read.node_path()).to_owned();
    assert!(
        paths::strip_protection(&write_name).starts_with("__WRIT__"),
        "{write_name}"
    );
    assert!(
        paths::strip_protection(&read_name).starts_with("__READ__"),
        "{read_name}"
    );
    assert_eq!(paths::sequence(&read_name), paths::sequence(&write_name));
    let stat = observer
        .check_exists()
        .for_path(read.node_path())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(stat.ephemeral_owner, 0);

    write.release().await.unwrap();
    // Downgraded: other readers come in, writers still wait for our read lock.
    let their_read = other
        .read_lock()
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap();
    assert!(their_read.is_some());
    drop(their_read);
    assert!(
        other
            .write_lock()
            .acquire_timeout(SHORT)
            .await
            .unwrap()
            .is_none()
    );
    read.release().await.unwrap();
    assert!(
        other
            .write_lock()
            .acquire_timeout(Timing::new().wait())
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn each_side_lists_only_its_own_participants() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("rw-participants");
    let a =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let b =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let read = a.read_lock().acquire().await.unwrap();
    let waiting = tokio::spawn({
        let b = b.clone();
        async move { b.write_lock().acquire().await.map(drop) }
    });
    curator_test::eventually("the writer queues", || async {
        !b.write_lock().participant_nodes().await.unwrap().is_empty()
    })
    .await;
    assert_eq!(
        a.read_lock().participant_nodes().await.unwrap(),
        vec![read.node_path().to_owned()]
    );
    assert_eq!(b.write_lock().participant_nodes().await.unwrap().len(), 1);
    read.release().await.unwrap();
    waiting.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_session_ends_lets_waiting_readers_in_and_knows_it_lost() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("rw-expiry");
    let writer_client = testkit::client(&server.connect_string()).await;
    let writer = InterProcessReadWriteLock::builder(writer_client.clone(), &path)
        .build()
        .unwrap();
    let reader =
        InterProcessReadWriteLock::builder(testkit::client(&server.connect_string()).await, &path)
            .build()
            .unwrap();
    let held = writer.write_lock().acquire().await.unwrap();
    let waiting = tokio::spawn({
        let reader = reader.clone();
        async move { reader.read_lock().acquire().await }
    });
    assert!(
        tokio::time::timeout(SHORT, held.lost()).await.is_err(),
        "held while the session lives"
    );
    writer_client.inject_session_expiration().await.unwrap();
    tokio::time::timeout(Timing::new().wait(), held.lost())
        .await
        .expect("the writer learns it lost the lock");
    let read = tokio::time::timeout(Timing::new().wait(), waiting)
        .await
        .expect("the reader gets in once the writer's node is gone")
        .unwrap()
        .unwrap();
    read.release().await.unwrap();
}
