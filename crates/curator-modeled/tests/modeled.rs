//! Modeled paths against a real ZooKeeper server: CRUD with versions, typed children, the
//! spec's options as the server stores them, schemas, transactions. Every test works under a
//! root of its own; a plain client looks at what the server holds.

use std::time::Duration;

use curator_framework::acl::{Acl, Perms};
use curator_framework::codec::Utf8;
use curator_framework::schema::{DataValidator, Schema, SchemaSet, Violation};
use curator_framework::types::EventType;
use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_modeled::{ModelSpec, Modeled, Parents, ZPath};
use curator_test::{TestingServer, Timing, unique_root};

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
struct User {
    name: String,
    admin: bool,
}

fn user(name: &str) -> User {
    User {
        name: name.to_owned(),
        admin: false,
    }
}

fn template(root: &str, rest: &str) -> ZPath {
    ZPath::parse(&format!("{root}{rest}")).unwrap()
}

/// The users of `/root/orgs/{org}/users/{id}`, parents made as containers.
fn users(client: &CuratorFramework, root: &str) -> Modeled<User> {
    let spec = ModelSpec::<User>::builder(template(root, "/orgs/{org}/users/{id}"))
        .parents(Parents::Containers)
        .build()
        .unwrap();
    Modeled::new(client.clone(), spec)
}

async fn raw(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client.get_data().for_path(path).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_with_versions() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-crud");
    let ada = users(&client, &root).resolve(("acme", 1)).unwrap();
    let path = format!("{root}/orgs/acme/users/1");

    assert_eq!(ada.set(&user("Ada")).await.unwrap(), path);
    assert_eq!(
        raw(&client, &path).await,
        br#"{"name":"Ada","admin":false}"#
    );
    // Curator's default: set does not overwrite.
    assert_eq!(ada.set(&user("Eve")).await, Err(Error::NodeExists));
    assert_eq!(ada.read().await.unwrap(), user("Ada"));

    let node = ada.read_as_znode().await.unwrap();
    assert_eq!(node.path.full_path().unwrap(), path);
    assert_eq!(node.stat.version, 0);
    let promoted = User {
        admin: true,
        ..node.model.clone()
    };
    let stat = ada.update_with_version(&promoted, 0).await.unwrap();
    assert_eq!(stat.version, 1);
    // A second writer from the same read loses, and changes nothing.
    assert_eq!(
        ada.update_with_version(&user("Mallory"), 0).await,
        Err(Error::BadVersion)
    );
    assert_eq!(ada.read().await.unwrap(), promoted);
    assert_eq!(ada.delete_with_version(0).await, Err(Error::BadVersion));
    assert!(ada.check_exists().await.unwrap().is_some());
    ada.delete_with_version(1).await.unwrap();
    assert_eq!(ada.read().await, Err(Error::NoNode));
    assert_eq!(ada.check_exists().await.unwrap(), None);
    assert_eq!(ada.update(&promoted).await, Err(Error::NoNode));
    assert_eq!(ada.delete().await, Err(Error::NoNode));
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_children_and_lists() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-children");
    let users = users(&client, &root);
    for (org, id, name) in [
        ("acme", 2, "Bo"),
        ("acme", 1, "Al"),
        ("initech", 1, "Peter"),
    ] {
        users
            .resolve((org, id))
            .unwrap()
            .set(&user(name))
            .await
            .unwrap();
    }

    let acme = users.resolve(["acme"]).unwrap();
    let listed = acme.list().await.unwrap();
    let names: Vec<_> = listed.iter().map(|n| n.model.name.as_str()).collect();
    assert_eq!(names, ["Al", "Bo"]);
    assert_eq!(
        listed[1].path.full_path().unwrap(),
        format!("{root}/orgs/acme/users/2")
    );

    // The directory itself, as a resolved model path: its children are users.
    let directory = acme
        .parent()
        .unwrap()
        .resolve(Vec::<String>::new())
        .unwrap();
    assert_eq!(
        directory.path().to_string(),
        format!("{root}/orgs/acme/users")
    );
    let children = directory.children().await.unwrap();
    assert_eq!(
        children.iter().map(ZPath::node_name).collect::<Vec<_>>(),
        ["1", "2"]
    );
    assert_eq!(directory.children_as_znodes().await.unwrap(), listed);

    // A resolved path lists itself; a missing directory lists nothing.
    assert_eq!(
        users
            .resolve(("initech", 1))
            .unwrap()
            .list()
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        users
            .resolve(["nobody"])
            .unwrap()
            .list()
            .await
            .unwrap()
            .is_empty()
    );

    // A node that is not a user fails the listing, naming it.
    let bad = format!("{root}/orgs/acme/users/3");
    client.create().for_path(&bad, b"not json").await.unwrap();
    match acme.list().await {
        Err(Error::Decode { path, .. }) => assert_eq!(path, bad),
        other => panic!("expected a decode error, got {other:?}"),
    }
    match directory.children_as_znodes().await {
        Err(Error::Decode { path, .. }) => assert_eq!(path, bad),
        other => panic!("expected a decode error, got {other:?}"),
    }

    // Unresolved paths never reach the server.
    for result in [users.read().await.map(|_| ()), acme.delete().await] {
        match result {
            Err(Error::InvalidArgument(message)) => {
                assert!(message.contains("parameters left"), "{message}")
            }
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(matches!(users.list().await, Err(Error::InvalidArgument(_))));
    assert!(matches!(
        users.resolve(("acme", "a/b")),
        Err(Error::InvalidPath { .. })
    ));
    client.close().await.unwrap();
}

/// The create mode, ACL, TTL, parents, overwrite and compression of a spec, as the server
/// stores them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_options_reach_the_server() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-options");

    // Ephemeral sequential jobs under a container parent.
    let jobs = Modeled::new(
        client.clone(),
        ModelSpec::builder(template(&root, "/jobs/job-"))
            .codec(Utf8)
            .create_mode(CreateMode::EphemeralSequential)
            .parents(Parents::Containers)
            .build()
            .unwrap(),
    );
    let first = jobs.set(&"one".to_owned()).await.unwrap();
    let second = jobs.set(&"two".to_owned()).await.unwrap();
    assert!(first.starts_with(&format!("{root}/jobs/job-")), "{first}");
    assert!(second > first);
    let stat = client
        .check_exists()
        .for_path(&first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(Some(stat.ephemeral_owner), client.session_id());
    let listed = jobs.parent().unwrap().children().await.unwrap();
    assert_eq!(listed.len(), 2);
    // The parent is a container: the server removes it once its children are gone.
    let (_, parent_gone) = client
        .check_exists()
        .watched()
        .for_path(&format!("{root}/jobs"))
        .await
        .unwrap();
    for job in [&first, &second] {
        client.delete().for_path(job).await.unwrap();
    }
    let event = tokio::time::timeout(Timing::new().wait(), parent_gone)
        .await
        .expect("the container parent is removed");
    assert_eq!(event.event_type, EventType::NodeDeleted);

    // A TTL model: the server removes the node once its TTL has passed without a change.
    let short = Modeled::new(
        client.clone(),
        ModelSpec::builder(template(&root, "/short"))
            .codec(Utf8)
            .create_mode(CreateMode::PersistentWithTtl)
            .ttl(Duration::from_millis(1))
            .build()
            .unwrap(),
    );
    let path = short.set(&"soon gone".to_owned()).await.unwrap();
    let (exists, gone) = client
        .check_exists()
        .watched()
        .for_path(&path)
        .await
        .unwrap();
    if exists.is_some() {
        let event = tokio::time::timeout(Timing::new().wait(), gone)
            .await
            .expect("the TTL node is removed");
        assert_eq!(event.event_type, EventType::NodeDeleted);
    }

    // A TTL node with its own ACL, overwritten by `set`, compressed.
    let ttl = Duration::from_secs(3600);
    let settings = Modeled::new(
        client.clone(),
        ModelSpec::builder(template(&root, "/settings/{name}"))
            .codec(Utf8)
            .create_mode(CreateMode::PersistentWithTtl)
            .ttl(ttl)
            .acl(vec![Acl::world_anyone(
                Perms::READ | Perms::WRITE | Perms::DELETE,
            )])
            .parents(Parents::Persistent)
            .set_data_if_exists()
            .compressed()
            .build()
            .unwrap(),
    );
    let color = settings.resolve(["color"]).unwrap();
    let path = color.set(&"red".to_owned()).await.unwrap();
    color.set(&"blue".to_owned()).await.unwrap();
    assert_eq!(color.read().await.unwrap(), "blue");
    let stored = raw(&client, &path).await;
    assert_eq!(&stored[..2], [0x1f, 0x8b], "gzip, as Curator writes it");
    let (acl, _) = client.get_acl().for_path(&path).await.unwrap();
    assert_eq!(
        acl,
        vec![Acl::world_anyone(
            Perms::READ | Perms::WRITE | Perms::DELETE
        )]
    );
    client.close().await.unwrap();
}

/// Refuses data holding "forbidden".
struct NoForbidden;

impl DataValidator for NoForbidden {
    fn is_valid(&self, _schema: &Schema, _path: &str, data: &[u8]) -> bool {
        !String::from_utf8_lossy(data).contains("forbidden")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_of_models() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-schema");

    // A schema given to the spec is checked before each write.
    let pattern = format!("^{root}/notes/[a-z]+$");
    let schema = Schema::builder_regex(&pattern)
        .name("notes")
        .data_validator(NoForbidden)
        .can_be_deleted(false)
        .build()
        .unwrap();
    let notes = Modeled::new(
        client.clone(),
        ModelSpec::builder(template(&root, "/notes/{id}"))
            .codec(Utf8)
            .parents(Parents::Persistent)
            .schema(schema)
            .build()
            .unwrap(),
    );
    let note = notes.resolve(["a"]).unwrap();
    let refused = |result: Result<_, Error>| match result {
        Err(Error::SchemaViolation {
            schema, violation, ..
        }) => (schema, violation),
        other => panic!("expected a schema violation, got {other:?}"),
    };
    assert_eq!(
        refused(note.set(&"forbidden".to_owned()).await.map(drop)),
        (Some("notes".to_owned()), Violation::InvalidData)
    );
    assert_eq!(
        client
            .check_exists()
            .for_path(&format!("{root}/notes"))
            .await
            .unwrap(),
        None
    );
    note.set(&"fine".to_owned()).await.unwrap();
    assert_eq!(
        refused(note.update(&"forbidden".to_owned()).await.map(drop)),
        (Some("notes".to_owned()), Violation::InvalidData)
    );
    assert_eq!(
        refused(note.delete().await),
        (Some("notes".to_owned()), Violation::CannotBeDeleted)
    );
    assert_eq!(
        refused(
            notes
                .resolve(["A1"])
                .unwrap()
                .set(&"x".to_owned())
                .await
                .map(drop)
        )
        .1,
        Violation::NoSchema
    );
    assert!(notes.resolve(["a"]).unwrap().delete_op(None).is_err());
    assert_eq!(note.read().await.unwrap(), "fine");

    // Without one, the derived schema holds other writers to the model: put it in a
    // client's schema set.
    let users = users(&client, &root);
    let strict = SchemaSet::strict(vec![users.spec().schema()]).unwrap();
    let checked = curator_testkit::started(
        curator_testkit::builder(&server.connect_string(), Duration::from_secs(10))
            .schema_set(strict),
    )
    .await;
    let path = format!("{root}/orgs/acme/users/1");
    let error = checked.create().for_path(&path, b"{}").await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::SchemaViolation {
                violation: Violation::InvalidData,
                ..
            }
        ),
        "{error:?}"
    );
    let error = checked
        .create()
        .with_mode(CreateMode::Ephemeral)
        .for_path(&path, br#"{"name":"x","admin":true}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::SchemaViolation {
                violation: Violation::CannotBeEphemeral,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(client.check_exists().for_path(&path).await.unwrap(), None);
    checked.close().await.unwrap();

    // A spec with an ACL: its derived schema refuses nodes made with another ACL.
    let locked_down = vec![Acl::world_anyone(Perms::READ)];
    let readonly = ModelSpec::builder(template(&root, "/readonly/{id}"))
        .codec(Utf8)
        .acl(locked_down.clone())
        .build()
        .unwrap();
    let strict = SchemaSet::strict(vec![readonly.schema()]).unwrap();
    let checked = curator_testkit::started(
        curator_testkit::builder(&server.connect_string(), Duration::from_secs(10))
            .schema_set(strict),
    )
    .await;
    let path = format!("{root}/readonly/r1");
    let error = checked
        .create()
        .creating_parents_if_needed()
        .for_path(&path, b"text")
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::SchemaViolation {
                violation: Violation::InvalidAcl,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(client.check_exists().for_path(&path).await.unwrap(), None);
    checked.close().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_of_models() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-tx");
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .unwrap();
    let accounts = Modeled::new(
        client.clone(),
        ModelSpec::<i64>::builder(template(&root, "/{account}"))
            .build()
            .unwrap(),
    );
    let (a, b) = (
        accounts.resolve(["a"]).unwrap(),
        accounts.resolve(["b"]).unwrap(),
    );
    a.set(&100).await.unwrap();

    let read = a.read_as_znode().await.unwrap();
    accounts
        .in_transaction(vec![
            a.update_op(&(read.model - 30), Some(read.stat.version))
                .unwrap(),
            b.create_op(&30).unwrap(),
            a.check_op(None).unwrap(),
        ])
        .await
        .unwrap();
    assert_eq!((a.read().await.unwrap(), b.read().await.unwrap()), (70, 30));

    // The same move from the stale read: refused as a whole.
    let error = accounts
        .in_transaction(vec![
            b.update_op(&60, None).unwrap(),
            a.update_op(&(read.model - 30), Some(read.stat.version))
                .unwrap(),
        ])
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Transaction { .. }), "{error:?}");
    assert_eq!((a.read().await.unwrap(), b.read().await.unwrap()), (70, 30));

    accounts
        .in_transaction(vec![b.delete_op(Some(0)).unwrap()])
        .await
        .unwrap();
    assert_eq!(b.check_exists().await.unwrap(), None);
    client.close().await.unwrap();
}

/// A chunked model: values over 1 MiB through set, read, update (with versions), list and
/// delete; the chunk containers stay out of listings; what cannot work is refused.
#[tokio::test]
async fn chunked_models_hold_values_over_a_mib() {
    use curator_framework::codec::Raw;
    use curator_values::chunked::{CHUNK_DIR_SUFFIX, ChunkSettings};
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let root = unique_root("modeled-chunked");
    let spec = ModelSpec::builder(template(&root, "/blobs/{id}"))
        .codec(Raw)
        .parents(Parents::Containers)
        .chunked_with(ChunkSettings::new().with_max_size(8 << 20))
        .build()
        .unwrap();
    let blobs: Modeled<Vec<u8>, Raw> = Modeled::new(client.clone(), spec);
    let big = |seed: u8, len: usize| {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect::<Vec<u8>>()
    };
    let a = blobs.resolve(["a"]).unwrap();
    let b = blobs.resolve(["b"]).unwrap();
    a.set(&big(1, 3_000_000)).await.unwrap();
    b.set(&b"small".to_vec()).await.unwrap();
    assert_eq!(a.set(&big(2, 10)).await, Err(Error::NodeExists));
    let node = a.read_as_znode().await.unwrap();
    assert!(node.model == big(1, 3_000_000));
    a.update_with_version(&big(3, 2_500_000), node.stat.version)
        .await
        .unwrap();
    assert_eq!(
        a.update_with_version(&big(4, 2_500_000), node.stat.version)
            .await,
        Err(Error::BadVersion)
    );
    assert!(a.read().await.unwrap() == big(3, 2_500_000));
    // The chunk container is a sibling; listings leave it out.
    let (names, _) = client
        .get_children()
        .for_path(&format!("{root}/blobs"))
        .await
        .unwrap();
    assert!(names.contains(&format!("a{CHUNK_DIR_SUFFIX}")), "{names:?}");
    let listed = blobs.list().await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed[0].model == big(3, 2_500_000));
    assert_eq!(listed[1].model, b"small");
    let children = blobs
        .resolve(["a"])
        .unwrap()
        .parent()
        .unwrap()
        .children()
        .await
        .unwrap();
    assert_eq!(children.len(), 2);
    // Too large: a typed error, nothing written.
    assert!(matches!(
        b.update(&big(5, 9 << 20)).await,
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(b.read().await.unwrap(), b"small");
    // Delete takes the chunks too.
    a.delete().await.unwrap();
    assert_eq!(a.read().await, Err(Error::NoNode));
    assert_eq!(
        client
            .check_exists()
            .for_path(&format!("{root}/blobs/a{CHUNK_DIR_SUFFIX}"))
            .await,
        Ok(None)
    );
    // Refused: transactions, the cache, modes other than persistent.
    assert!(matches!(
        a.create_op(&big(6, 10)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        a.update_op(&big(6, 10), None),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(blobs.cached(), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        ModelSpec::<User>::builder(template(&root, "/e/{id}"))
            .create_mode(CreateMode::Ephemeral)
            .chunked()
            .build(),
        Err(Error::InvalidArgument(_))
    ));
    // The derived schema accepts the manifests the model writes.
    let (manifest, _) = client
        .get_data()
        .for_path(&format!("{root}/blobs/b"))
        .await
        .unwrap();
    assert!(curator_values::chunked::is_manifest(&manifest));
}
