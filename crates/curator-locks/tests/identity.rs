//! Lock nodes and semaphore leases carry the identity of the client that made them, and a
//! revoker's marker still replaces it.

use std::time::Duration;

use curator_framework::identity::Identity;
use curator_locks::{
    InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, MaxLeases, Revoker,
};
use curator_test::{TestingServer, unique_root};
use curator_testkit as testkit;

#[tokio::test]
async fn lock_and_lease_nodes_name_their_maker() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::started(
        testkit::builder(&server.connect_string(), Duration::from_secs(10)).identity("lock-tests"),
    )
    .await;
    let me = Identity::this_process("lock-tests");
    assert_eq!(client.identity(), &me);
    let root = unique_root("lock-identity");

    let mutex = InterProcessMutex::builder(client.clone(), &format!("{root}/mutex"))
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let data = testkit::raw(&client, guard.node_path()).await;
    assert_eq!(Identity::parse(&data), Some(me.clone()));

    let rw = InterProcessReadWriteLock::builder(client.clone(), &format!("{root}/rw"))
        .build()
        .unwrap();
    let read = rw.read_lock().acquire().await.unwrap();
    assert_eq!(
        Identity::parse(&testkit::raw(&client, read.node_path()).await),
        Some(me.clone())
    );
    drop(read);

    let semaphore = InterProcessSemaphoreV2::builder(
        client.clone(),
        &format!("{root}/sem"),
        MaxLeases::Fixed(2),
    )
    .build()
    .unwrap();
    let lease = semaphore.acquire().await.unwrap();
    assert_eq!(
        Identity::parse(&testkit::raw(&client, lease.node_path()).await),
        Some(me.clone())
    );

    // Explicit node data still wins.
    let custom = InterProcessMutex::builder(client.clone(), &format!("{root}/custom"))
        .node_data("mine")
        .build()
        .unwrap();
    let held = custom.acquire().await.unwrap();
    assert_eq!(testkit::raw(&client, held.node_path()).await, b"mine");

    // Revocation writes its marker over the identity, and the holder hears it.
    let revocable = InterProcessMutex::builder(client.clone(), &format!("{root}/revocable"))
        .make_revocable(|| {})
        .build()
        .unwrap();
    let revoked = revocable.acquire().await.unwrap();
    Revoker::attempt_revoke(&client, revoked.node_path())
        .await
        .unwrap();
    tokio::time::timeout(
        curator_test::Timing::new().wait(),
        revoked.revocation_requested(),
    )
    .await
    .expect("the revocation is heard");
    drop((guard, lease, held, revoked));
}
