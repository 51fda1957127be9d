//! Every operation and option against a real ZooKeeper server.

mod support;

use std::time::Duration;

use curator_framework::acl::{Acl, Perms};
use curator_framework::ops::multi_read::ReadResult;
use curator_framework::ops::transaction::{TransactionOp, TransactionResult};
use curator_framework::{CreateMode, Error, paths};
use curator_test::{TestingServer, unique_root};

#[tokio::test]
async fn create_read_update_delete() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("crud");

    let path = client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/a/b"), b"one")
        .await
        .unwrap();
    assert_eq!(path, format!("{root}/a/b"));
    let (data, stat) = client.get_data().for_path(&path).await.unwrap();
    assert_eq!(
        (data.as_slice(), stat.version, stat.ephemeral_owner),
        (&b"one"[..], 0, 0)
    );

    let stat = client.set_data().for_path(&path, b"two").await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(
        client
            .set_data()
            .with_version(0)
            .for_path(&path, b"x")
            .await,
        Err(Error::BadVersion)
    );
    let stat = client
        .set_data()
        .with_version(1)
        .for_path(&path, b"three")
        .await
        .unwrap();
    assert_eq!(stat.version, 2);

    assert_eq!(
        client
            .check_exists()
            .for_path(&path)
            .await
            .unwrap()
            .map(|s| s.version),
        Some(2)
    );
    assert_eq!(
        client
            .check_exists()
            .for_path(&format!("{root}/none"))
            .await,
        Ok(None)
    );

    let (children, stat) = client
        .get_children()
        .for_path(&format!("{root}/a"))
        .await
        .unwrap();
    assert_eq!((children, stat.num_children), (vec!["b".to_owned()], 1));

    assert_eq!(
        client.create().for_path(&path, b"").await,
        Err(Error::NodeExists)
    );
    assert_eq!(
        client.delete().with_version(7).for_path(&path).await,
        Err(Error::BadVersion)
    );
    assert_eq!(
        client.delete().for_path(&format!("{root}/a")).await,
        Err(Error::NotEmpty)
    );
    client
        .delete()
        .with_version(2)
        .for_path(&path)
        .await
        .unwrap();
    assert_eq!(client.get_data().for_path(&path).await, Err(Error::NoNode));
    assert_eq!(client.delete().for_path(&path).await, Err(Error::NoNode));
    client.delete().quietly().for_path(&path).await.unwrap();

    let (created, stat) = client
        .create()
        .for_path(&format!("{root}/with-stat"), b"12345")
        .with_stat()
        .await
        .unwrap();
    assert_eq!(
        (created, stat.data_length),
        (format!("{root}/with-stat"), 5)
    );
}

#[tokio::test]
async fn create_modes() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "modes").await;

    let ephemeral = client
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&format!("{root}/e"), b"")
        .await
        .unwrap();
    let stat = client
        .check_exists()
        .for_path(&ephemeral)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Some(stat.ephemeral_owner), client.session_id());

    let first = client
        .create()
        .with_mode(CreateMode::PersistentSequential)
        .for_path(&format!("{root}/s-"), b"")
        .await
        .unwrap();
    let second = client
        .create()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path(&format!("{root}/s-"), b"")
        .await
        .unwrap();
    let (a, b) = (
        paths::sequence(&first).unwrap(),
        paths::sequence(&second).unwrap(),
    );
    assert!(b > a, "{first} then {second}");
    assert_eq!(paths::node_name(&first).len(), "s-".len() + 10);

    // A sequential create on a path ending in '/' names the node by its number alone.
    let bare = client
        .create()
        .with_mode(CreateMode::PersistentSequential)
        .for_path(&format!("{root}/"), b"")
        .await
        .unwrap();
    assert_eq!(paths::node_name(&bare).len(), 10);

    client
        .create()
        .with_mode(CreateMode::Container)
        .for_path(&format!("{root}/container"), b"")
        .await
        .unwrap();
    let ttl = client
        .create()
        .with_mode(CreateMode::PersistentWithTtl)
        .with_ttl(Duration::from_secs(60))
        .for_path(&format!("{root}/ttl"), b"")
        .await
        .unwrap();
    assert!(
        client
            .check_exists()
            .for_path(&ttl)
            .await
            .unwrap()
            .is_some()
    );
    let seq_ttl = client
        .create()
        .with_mode(CreateMode::PersistentSequentialWithTtl)
        .with_ttl(Duration::from_secs(60))
        .for_path(&format!("{root}/ttl-"), b"")
        .await
        .unwrap();
    assert!(paths::sequence(&seq_ttl).is_some());
}

#[tokio::test]
async fn parents_containers_and_default_data() {
    let server = TestingServer::start().await.unwrap();
    let client =
        support::started(support::builder(&server.connect_string()).default_data(b"dflt".to_vec()))
            .await;
    let root = unique_root("parents");
    let leaf = format!("{root}/x/y/z");
    assert_eq!(
        client.create().for_path(&leaf, b"").await,
        Err(Error::NoNode)
    );
    client
        .create()
        .creating_parent_containers_if_needed()
        .for_path_with_default_data(&leaf)
        .await
        .unwrap();
    assert_eq!(client.get_data().for_path(&leaf).await.unwrap().0, b"dflt");
    // Parents get empty data.
    assert_eq!(
        client
            .get_data()
            .for_path(&format!("{root}/x/y"))
            .await
            .unwrap()
            .0,
        b""
    );
    // Container parents are reaped by the server once their last child goes; persistent ones stay.
    let plain = format!("{root}/p/q");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&plain, b"")
        .await
        .unwrap();
    let (_, reaped) = client
        .check_exists()
        .watched()
        .for_path(&format!("{root}/x"))
        .await
        .unwrap();
    client.delete().for_path(&leaf).await.unwrap();
    client.delete().for_path(&plain).await.unwrap();
    let event = tokio::time::timeout(curator_test::Timing::new().wait(), reaped)
        .await
        .expect("container reaped");
    assert_eq!(
        event.event_type,
        curator_framework::types::EventType::NodeDeleted
    );
    assert!(
        client
            .check_exists()
            .for_path(&format!("{root}/p"))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn idempotent_and_or_set_data() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("idempotent");
    let node = format!("{root}/n");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&node, b"a")
        .await
        .unwrap();
    // On a first attempt, idempotence does not hide a real conflict.
    assert_eq!(
        client.create().idempotent().for_path(&node, b"a").await,
        Err(Error::NodeExists)
    );
    client
        .create()
        .or_set_data()
        .for_path(&node, b"b")
        .await
        .unwrap();
    assert_eq!(client.get_data().for_path(&node).await.unwrap().0, b"b");
    client.delete().idempotent().for_path(&node).await.unwrap();
    assert_eq!(
        client.delete().idempotent().for_path(&node).await,
        Err(Error::NoNode)
    );
}

#[tokio::test]
async fn deleting_children_if_needed_removes_a_deep_tree() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("tree");
    for path in ["a/b/c", "a/b/d", "a/e", "f"] {
        client
            .create()
            .creating_parents_if_needed()
            .for_path(&format!("{root}/{path}"), b"")
            .await
            .unwrap();
    }
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(&root)
        .await
        .unwrap();
    assert_eq!(client.check_exists().for_path(&root).await, Ok(None));
}

#[tokio::test]
async fn acls_are_read_and_written() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("acl");
    let node = client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();
    let (acl, stat) = client.get_acl().for_path(&node).await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
    assert_eq!(stat.aversion, 0);

    let read_only = vec![Acl::world_anyone(Perms::READ)];
    let stat = client
        .set_acl()
        .with_acl(read_only.clone())
        .with_version(0)
        .for_path(&node)
        .await
        .unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(client.get_acl().for_path(&node).await.unwrap().0, read_only);
    assert_eq!(
        client.set_data().for_path(&node, b"x").await,
        Err(Error::NoAuth)
    );
    assert_eq!(
        client
            .create()
            .for_path(&format!("{root}/child"), b"")
            .await,
        Err(Error::NoAuth)
    );
    assert_eq!(
        client
            .set_acl()
            .with_acl(Vec::new())
            .for_path(&node)
            .await
            .map(drop),
        Err(Error::InvalidArgument(
            "an ACL needs at least one entry".into()
        ))
    );
}

#[tokio::test]
async fn digest_authorization_and_creator_acls() {
    let server = TestingServer::start().await.unwrap();
    let owner = support::started(
        support::builder(&server.connect_string())
            .authorization("digest", b"alice:secret".to_vec()),
    )
    .await;
    let stranger = support::connected(&server.connect_string()).await;
    let root = support::create_root(&owner, "digest").await;
    let private = format!("{root}/private");
    owner
        .create()
        .with_acl(Acl::creator_all())
        .for_path(&private, b"mine")
        .await
        .unwrap();
    assert_eq!(
        owner.get_data().for_path(&private).await.unwrap().0,
        b"mine"
    );
    assert_eq!(
        stranger.get_data().for_path(&private).await,
        Err(Error::NoAuth)
    );
}

#[tokio::test]
async fn sync_and_get_config() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "sync").await;
    client.sync().for_path(&root).await.unwrap();
    // A standalone server answers with its (possibly empty) configuration node.
    let (_config, stat) = client.get_config().for_ensemble().await.unwrap();
    assert!(stat.czxid >= 0);
}

#[tokio::test]
async fn transactions_apply_all_or_nothing() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("txn");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/b"), b"")
        .await
        .unwrap();

    let results = client
        .transaction()
        .create(&format!("{root}/a"), b"1")
        .op(TransactionOp::create(&format!("{root}/seq-"), b"")
            .with_mode(CreateMode::PersistentSequential))
        .set_data(&format!("{root}/b"), b"2")
        .check(&format!("{root}/b"), 1)
        .commit()
        .await
        .unwrap();
    assert_eq!(results.len(), 4);
    assert!(
        matches!(&results[0], TransactionResult::Create { path, .. } if *path == format!("{root}/a"))
    );
    assert!(
        matches!(&results[1], TransactionResult::Create { path, .. } if paths::sequence(path).is_some())
    );
    assert!(matches!(&results[2], TransactionResult::SetData { stat } if stat.version == 1));
    assert_eq!(results[3], TransactionResult::Check);

    // The third step fails: neither the create before it nor the delete after it happens.
    let failed = client
        .transaction()
        .create(&format!("{root}/c"), b"")
        .set_data(&format!("{root}/b"), b"3")
        .check(&format!("{root}/b"), 99)
        .delete(&format!("{root}/a"))
        .commit()
        .await;
    assert_eq!(
        failed,
        Err(Error::Transaction {
            index: 2,
            cause: Box::new(Error::BadVersion)
        })
    );
    assert_eq!(
        client.check_exists().for_path(&format!("{root}/c")).await,
        Ok(None)
    );
    assert_eq!(
        client
            .get_data()
            .for_path(&format!("{root}/b"))
            .await
            .unwrap()
            .0,
        b"2"
    );
    assert!(
        client
            .check_exists()
            .for_path(&format!("{root}/a"))
            .await
            .unwrap()
            .is_some()
    );

    assert!(matches!(
        client.transaction().commit().await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn multi_read_answers_each_read_in_order_in_one_request() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = unique_root("multi-read");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&format!("{root}/a"), b"one")
        .await
        .unwrap();
    client
        .create()
        .for_path(&format!("{root}/b"), b"two")
        .await
        .unwrap();
    let results = client
        .multi_read()
        .get_children(&root)
        .get_data(&format!("{root}/a"))
        .get_data(&format!("{root}/missing"))
        .get_data(&format!("{root}/b"))
        .commit()
        .await
        .unwrap();
    assert_eq!(results.len(), 4);
    match &results[0] {
        ReadResult::Children { children } => {
            let mut children = children.clone();
            children.sort();
            assert_eq!(children, ["a", "b"]);
        }
        other => panic!("{other:?}"),
    }
    match &results[1] {
        ReadResult::Data { data, stat } => assert_eq!((&data[..], stat.version), (&b"one"[..], 0)),
        other => panic!("{other:?}"),
    }
    // A failed read does not fail the others.
    assert_eq!(results[2], ReadResult::Error(Error::NoNode));
    assert!(matches!(&results[3], ReadResult::Data { data, .. } if data == b"two"));

    // Namespaced handles read their own namespace.
    let namespaced = client
        .using_namespace(root.trim_start_matches('/'))
        .unwrap();
    let results = namespaced
        .multi_read()
        .get_data("/a")
        .commit()
        .await
        .unwrap();
    assert!(matches!(&results[0], ReadResult::Data { data, .. } if data == b"one"));

    // Bad input is refused before anything is sent.
    assert!(matches!(
        client.multi_read().get_data("no-slash").commit().await,
        Err(Error::InvalidPath { .. })
    ));
    assert!(matches!(
        client.multi_read().commit().await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn bad_input_is_a_typed_error_and_nothing_is_written() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "bad-input").await;
    let before = client.metrics().operations;

    for path in [
        "",
        "relative/path",
        "/trailing/",
        "/nul\0char",
        "/a//b",
        "/a/./b",
        "/",
    ] {
        let result = client.create().for_path(path, b"").await;
        assert!(
            matches!(result, Err(Error::InvalidPath { .. })),
            "create {path:?} gave {result:?}"
        );
        if path != "/" {
            assert!(
                matches!(
                    client.get_data().for_path(path).await,
                    Err(Error::InvalidPath { .. })
                ),
                "{path:?}"
            );
        }
    }
    let big = vec![0u8; 1024 * 1024];
    let node = format!("{root}/big");
    match client.create().for_path(&node, &big).await {
        Err(Error::InvalidArgument(message)) => assert!(message.contains("exceeds"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        client.set_data().for_path(&root, &big).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        client
            .create()
            .with_mode(CreateMode::PersistentWithTtl)
            .for_path(&format!("{root}/ttl"), b"")
            .await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        client
            .create()
            .with_ttl(Duration::from_secs(1))
            .for_path(&format!("{root}/ttl"), b"")
            .await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        client
            .create()
            .with_mode(CreateMode::PersistentWithTtl)
            .with_ttl(Duration::ZERO)
            .for_path(&format!("{root}/ttl"), b"")
            .await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        client.delete().for_path("/").await,
        Err(Error::InvalidPath { .. })
    ));
    // Nothing reached the server.
    assert_eq!(client.metrics().operations, before);
    assert_eq!(
        client.get_children().for_path(&root).await.unwrap().0,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn requests_reach_the_server_in_creation_order() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, "order").await;
    // Created (and so sent) in order, awaited in reverse: the sequence numbers follow creation.
    let futures: Vec<_> = (0..20)
        .map(|i| {
            client
                .create()
                .with_mode(CreateMode::PersistentSequential)
                .for_path(&format!("{root}/n-"), format!("{i}"))
                .into_future()
        })
        .collect();
    let mut created = Vec::new();
    for future in futures.into_iter().rev() {
        created.push(future.await.unwrap());
    }
    created.reverse();
    let sequences: Vec<i64> = created
        .iter()
        .map(|p| paths::sequence(p).unwrap())
        .collect();
    let mut sorted = sequences.clone();
    sorted.sort_unstable();
    assert_eq!(sequences, sorted);
    for (i, path) in created.iter().enumerate() {
        assert_eq!(
            client.get_data().for_path(path).await.unwrap().0,
            format!("{i}").into_bytes()
        );
    }
}

#[tokio::test]
async fn the_server_refusing_arguments_is_its_own_error() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    // `/zookeeper` belongs to the server: it answers BADARGUMENTS (-8).
    let error = client.delete().for_path("/zookeeper").await.unwrap_err();
    assert_eq!(error, Error::BadArguments);
    assert_eq!(error.code(), Some(-8));
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn who_am_i_names_the_sessions_identities() {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let identities = client.who_am_i().await.unwrap();
    assert!(
        identities
            .iter()
            .any(|identity| identity.scheme == "ip" && identity.id == "127.0.0.1"),
        "{identities:?}"
    );
    let digest = support::started(
        support::builder(&server.connect_string())
            .authorization("digest", b"alice:secret".to_vec()),
    )
    .await;
    let identities = digest.who_am_i().await.unwrap();
    assert!(
        identities
            .iter()
            .any(|identity| identity.to_string() == "digest:alice"),
        "{identities:?}"
    );
}
