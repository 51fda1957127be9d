//! `get_ephemerals()` and `get_all_children_number()` against a real server, with and without a
//! namespace.

mod support;

use curator_framework::{CreateMode, Error};
use curator_test::TestingServer;

#[tokio::test]
async fn get_ephemerals_lists_this_sessions_nodes_under_a_prefix() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let other = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "ephemerals").await;

    for (who, path) in [
        (&client, format!("{root}/a/one")),
        (&client, format!("{root}/a/two")),
        (&client, format!("{root}/ab")),
        (&other, format!("{root}/a/theirs")),
    ] {
        who.create()
            .creating_parents_if_needed()
            .with_mode(CreateMode::Ephemeral)
            .for_path(&path, b"")
            .await
            .unwrap();
    }
    client
        .create()
        .for_path(&format!("{root}/a/persistent"), b"")
        .await
        .unwrap();

    // A string prefix, as ZooKeeper matches it: `/a` also finds `/ab`.
    assert_eq!(
        client
            .get_ephemerals()
            .for_path(&format!("{root}/a"))
            .await
            .unwrap(),
        vec![
            format!("{root}/a/one"),
            format!("{root}/a/two"),
            format!("{root}/ab")
        ]
    );
    assert_eq!(
        other.get_ephemerals().for_path(&root).await.unwrap(),
        vec![format!("{root}/a/theirs")]
    );
    assert_eq!(
        client
            .get_ephemerals()
            .for_path(&format!("{root}/none"))
            .await
            .unwrap(),
        Vec::<String>::new()
    );
    assert!(matches!(
        client.get_ephemerals().for_path("no-slash").await,
        Err(Error::InvalidPath { .. })
    ));

    // Under a namespace: the prefix is the caller's, the answer too, and a sibling namespace
    // whose name starts the same is not inside it.
    let base = root.trim_start_matches('/');
    let ns = client.using_namespace(&format!("{base}/ns")).unwrap();
    let sibling = client.using_namespace(&format!("{base}/ns2")).unwrap();
    for (who, path) in [(&ns, "/x/mine"), (&sibling, "/x/other")] {
        who.create()
            .creating_parents_if_needed()
            .with_mode(CreateMode::Ephemeral)
            .for_path(path, b"")
            .await
            .unwrap();
    }
    assert_eq!(
        ns.get_ephemerals().for_path("/").await.unwrap(),
        vec!["/x/mine".to_owned()]
    );
    assert_eq!(
        ns.get_ephemerals().for_path("/x").await.unwrap(),
        vec!["/x/mine".to_owned()]
    );

    // Gone with the session.
    other.close().await.unwrap();
    assert_eq!(
        client
            .get_ephemerals()
            .for_path(&format!("{root}/a/theirs"))
            .await
            .unwrap(),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn get_all_children_number_counts_descendants() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "descendants").await;

    assert_eq!(
        client
            .get_all_children_number()
            .for_path(&format!("{root}/none"))
            .await,
        Err(Error::NoNode)
    );
    assert_eq!(
        client.get_all_children_number().for_path(&root).await,
        Ok(0)
    );
    for path in ["a", "a/b", "a/b/c", "d"] {
        client
            .create()
            .for_path(&format!("{root}/{path}"), b"")
            .await
            .unwrap();
    }
    assert_eq!(
        client.get_all_children_number().for_path(&root).await,
        Ok(4)
    );
    assert_eq!(
        client
            .get_all_children_number()
            .for_path(&format!("{root}/a"))
            .await,
        Ok(2)
    );

    let base = root.trim_start_matches('/');
    let ns = client.using_namespace(base).unwrap();
    assert_eq!(ns.get_all_children_number().for_path("/").await, Ok(4));
    assert_eq!(ns.get_all_children_number().for_path("/a/b").await, Ok(1));
}
