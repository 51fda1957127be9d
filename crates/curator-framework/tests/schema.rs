//! Schema sets against a real ZooKeeper server: refused operations never reach it, allowed ones
//! do. Each test works under a namespace of its own, and the schemas name paths without it
//! (as the caller does); a second client without a schema set looks at what the server holds.

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use curator_framework::acl::{Acl, Perms};
use curator_framework::schema::{Allowance, DataValidator, Schema, SchemaSet, Violation};
use curator_framework::{CreateMode, CuratorFramework, Error};
use curator_test::{TestingServer, unique_root};

/// Accepts UTF-8 text only.
struct Utf8;

impl DataValidator for Utf8 {
    fn is_valid(&self, _schema: &Schema, _path: &str, data: &[u8]) -> bool {
        std::str::from_utf8(data).is_ok()
    }
}

/// Accepts any data but refuses the wide-open ACL (anyone may do anything).
struct NotOpen;

impl DataValidator for NotOpen {
    fn is_valid(&self, _schema: &Schema, _path: &str, _data: &[u8]) -> bool {
        true
    }

    fn is_valid_acl(&self, _schema: &Schema, _path: &str, acl: &[Acl]) -> bool {
        acl != Acl::open_unsafe().as_slice()
    }
}

/// Accepts data that is not empty.
struct NonEmpty;

impl DataValidator for NonEmpty {
    fn is_valid(&self, _schema: &Schema, _path: &str, data: &[u8]) -> bool {
        !data.is_empty()
    }
}

/// A client with `set` under a fresh namespace, and a plain client under the same namespace.
async fn clients(server: &TestingServer, set: SchemaSet) -> (CuratorFramework, CuratorFramework) {
    let namespace = unique_root("schema").trim_start_matches('/').to_owned();
    let checked = support::started(
        support::builder(&server.connect_string())
            .namespace(namespace.clone())
            .schema_set(set),
    )
    .await;
    let plain =
        support::started(support::builder(&server.connect_string()).namespace(namespace)).await;
    (checked, plain)
}

/// The violation of a refused operation, with the schema it names.
fn refused<T: std::fmt::Debug>(result: Result<T, Error>) -> (Option<String>, String, Violation) {
    match result {
        Err(Error::SchemaViolation {
            schema,
            path,
            violation,
        }) => (schema, path, violation),
        other => panic!("expected a schema violation, got {other:?}"),
    }
}

fn config_schemas() -> SchemaSet {
    SchemaSet::strict(vec![
        Schema::builder("/config")
            .name("config")
            .documentation("settings, UTF-8, never ephemeral, never deleted")
            .data_validator(Utf8)
            .ephemeral(Allowance::Cannot)
            .sequential(Allowance::Cannot)
            .can_be_deleted(false)
            .build()
            .unwrap(),
        Schema::builder("/jobs")
            .name("jobs-parent")
            .ephemeral(Allowance::Cannot)
            .build()
            .unwrap(),
        Schema::builder_regex("/jobs/job-.*")
            .name("jobs")
            .sequential(Allowance::Must)
            .ephemeral(Allowance::Must)
            .build()
            .unwrap(),
        Schema::builder_regex("/quiet(/.*)?")
            .name("quiet")
            .watched(Allowance::Cannot)
            .build()
            .unwrap(),
    ])
    .unwrap()
}

#[tokio::test]
async fn bad_data_is_refused_before_the_server() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;

    let (schema, path, violation) =
        refused(client.create().for_path("/config", [0xff, 0xfe]).await);
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("config"), "/config", Violation::InvalidData)
    );
    assert_eq!(plain.check_exists().for_path("/config").await, Ok(None));

    client.create().for_path("/config", b"a=1").await.unwrap();
    let (_, _, violation) = refused(client.set_data().for_path("/config", [0xc3]).await);
    assert_eq!(violation, Violation::InvalidData);
    let (data, stat) = plain.get_data().for_path("/config").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"a=1"[..], 0));

    client.set_data().for_path("/config", b"a=2").await.unwrap();
    let (data, _) = plain.get_data().for_path("/config").await.unwrap();
    assert_eq!(data, b"a=2");
}

#[tokio::test]
async fn forbidden_modes_are_refused_before_the_server() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;

    let (schema, _, violation) = refused(
        client
            .create()
            .with_mode(CreateMode::Ephemeral)
            .for_path("/config", b"x")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), violation),
        (Some("config"), Violation::CannotBeEphemeral)
    );
    assert_eq!(plain.check_exists().for_path("/config").await, Ok(None));

    client.create().for_path("/jobs", b"").await.unwrap();
    let (schema, path, violation) = refused(client.create().for_path("/jobs/job-", b"").await);
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("jobs"), "/jobs/job-", Violation::MustBeEphemeral)
    );
    let (_, _, violation) = refused(
        client
            .create()
            .with_mode(CreateMode::Ephemeral)
            .for_path("/jobs/job-", b"")
            .await,
    );
    assert_eq!(violation, Violation::MustBeSequential);
    assert!(
        plain
            .get_children()
            .for_path("/jobs")
            .await
            .unwrap()
            .0
            .is_empty()
    );

    let created = client
        .create()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/jobs/job-", b"")
        .await
        .unwrap();
    assert!(created.starts_with("/jobs/job-"), "{created}");
    assert!(
        plain
            .check_exists()
            .for_path(&created)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_node_that_cannot_be_deleted_stays() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;
    client.create().for_path("/config", b"a=1").await.unwrap();

    let (schema, path, violation) = refused(client.delete().for_path("/config").await);
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("config"), "/config", Violation::CannotBeDeleted)
    );
    assert!(
        plain
            .check_exists()
            .for_path("/config")
            .await
            .unwrap()
            .is_some()
    );

    // Deletable nodes go.
    let job = client
        .create()
        .creating_parents_if_needed()
        .with_mode(CreateMode::EphemeralSequential)
        .for_path("/jobs/job-", b"")
        .await
        .unwrap();
    client.delete().for_path(&job).await.unwrap();
    assert_eq!(plain.check_exists().for_path(&job).await, Ok(None));
}

#[tokio::test]
async fn watches_where_they_are_forbidden_are_refused() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;
    client.create().for_path("/quiet", b"q").await.unwrap();

    let (schema, _, violation) = refused(client.get_data().watched().for_path("/quiet").await);
    assert_eq!(
        (schema.as_deref(), violation),
        (Some("quiet"), Violation::CannotBeWatched)
    );
    let (_, _, violation) = refused(client.get_children().watched().for_path("/quiet").await);
    assert_eq!(violation, Violation::CannotBeWatched);
    let (_, _, violation) = refused(client.check_exists().watched().for_path("/quiet/x").await);
    assert_eq!(violation, Violation::CannotBeWatched);
    let (_, _, violation) = refused(client.add_watch().for_path("/quiet").await);
    assert_eq!(violation, Violation::CannotBeWatched);

    // Unwatched reads of the same node pass.
    let (data, _) = client.get_data().for_path("/quiet").await.unwrap();
    assert_eq!(data, b"q");
    assert!(
        client
            .check_exists()
            .for_path("/quiet")
            .await
            .unwrap()
            .is_some()
    );
    // Elsewhere watches are fine.
    client.create().for_path("/config", b"a=1").await.unwrap();
    let (_, _, _watcher) = client
        .get_data()
        .watched()
        .for_path("/config")
        .await
        .unwrap();
    drop(plain);
}

#[tokio::test]
async fn must_be_watched_refuses_unwatched_reads() {
    let server = TestingServer::start().await.unwrap();
    let set = SchemaSet::allow_unknown(vec![
        Schema::builder("/watched")
            .name("watched")
            .watched(Allowance::Must)
            .build()
            .unwrap(),
    ])
    .unwrap();
    let (client, _plain) = clients(&server, set).await;
    client.create().for_path("/watched", b"w").await.unwrap();
    let (_, _, violation) = refused(client.get_data().for_path("/watched").await);
    assert_eq!(violation, Violation::MustBeWatched);
    let (data, _, _watcher) = client
        .get_data()
        .watched()
        .for_path("/watched")
        .await
        .unwrap();
    assert_eq!(data, b"w");
    // Unknown paths are allowed by this set.
    client.create().for_path("/anything", b"").await.unwrap();
}

#[tokio::test]
async fn transactions_are_checked_step_by_step_before_the_server() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;

    // A good first step does not go through when a later one is refused.
    let (schema, path, violation) = refused(
        client
            .transaction()
            .create("/jobs", b"")
            .create("/config", [0xff])
            .commit()
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("config"), "/config", Violation::InvalidData)
    );
    assert_eq!(plain.check_exists().for_path("/jobs").await, Ok(None));

    client
        .transaction()
        .create("/config", b"a=1")
        .set_data("/config", b"a=2")
        .commit()
        .await
        .unwrap();
    let (_, _, violation) = refused(
        client
            .transaction()
            .set_data("/config", [0xff])
            .commit()
            .await,
    );
    assert_eq!(violation, Violation::InvalidData);
    let (_, _, violation) = refused(client.transaction().delete("/config").commit().await);
    assert_eq!(violation, Violation::CannotBeDeleted);
    let (data, stat) = plain.get_data().for_path("/config").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"a=2"[..], 1));
}

#[tokio::test]
async fn a_strict_set_refuses_unknown_paths() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, config_schemas()).await;

    let (schema, path, violation) = refused(client.create().for_path("/elsewhere", b"").await);
    assert_eq!(
        (schema, path.as_str(), violation),
        (None, "/elsewhere", Violation::NoSchema)
    );
    assert_eq!(plain.check_exists().for_path("/elsewhere").await, Ok(None));
    let (_, _, violation) = refused(client.get_data().for_path("/elsewhere").await);
    assert_eq!(violation, Violation::NoSchema);

    // The plain client is not bound by the schemas.
    plain.create().for_path("/elsewhere", b"").await.unwrap();
}

#[tokio::test]
async fn set_acl_is_checked_by_the_validator_before_the_server() {
    let server = TestingServer::start().await.unwrap();
    let set = SchemaSet::strict(vec![
        Schema::builder("/secure")
            .name("secure")
            .data_validator(NotOpen)
            .build()
            .unwrap(),
    ])
    .unwrap();
    let (client, plain) = clients(&server, set).await;
    let guarded = vec![Acl::world_anyone(Perms::READ | Perms::ADMIN)];

    // A create is checked against the ACL it would send.
    let (schema, path, violation) = refused(
        client
            .create()
            .with_acl(Acl::open_unsafe())
            .for_path("/secure", b"s")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("secure"), "/secure", Violation::InvalidAcl)
    );
    assert_eq!(plain.check_exists().for_path("/secure").await, Ok(None));
    client
        .create()
        .with_acl(guarded.clone())
        .for_path("/secure", b"s")
        .await
        .unwrap();

    let (schema, path, violation) = refused(
        client
            .set_acl()
            .with_acl(Acl::open_unsafe())
            .for_path("/secure")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("secure"), "/secure", Violation::InvalidAcl)
    );
    let (acl, stat) = plain.get_acl().for_path("/secure").await.unwrap();
    assert_eq!((acl, stat.aversion), (guarded, 0));

    let wider = vec![Acl::world_anyone(Perms::READ | Perms::WRITE | Perms::ADMIN)];
    client
        .set_acl()
        .with_acl(wider.clone())
        .for_path("/secure")
        .await
        .unwrap();
    let (acl, stat) = plain.get_acl().for_path("/secure").await.unwrap();
    assert_eq!((acl, stat.aversion), (wider, 1));

    // A strict set refuses set_acl() where it has no schema; get_acl() is not checked (as in
    // Curator).
    plain.create().for_path("/elsewhere", b"").await.unwrap();
    let (schema, path, violation) = refused(
        client
            .set_acl()
            .with_acl(Acl::read_unsafe())
            .for_path("/elsewhere")
            .await,
    );
    assert_eq!(
        (schema, path.as_str(), violation),
        (None, "/elsewhere", Violation::NoSchema)
    );
    let (acl, _) = client.get_acl().for_path("/elsewhere").await.unwrap();
    assert_eq!(acl, Acl::open_unsafe());
}

fn app_schemas() -> SchemaSet {
    SchemaSet::strict(vec![
        Schema::builder("/apps").name("apps").build().unwrap(),
        Schema::builder_regex("/apps/[^/]+")
            .name("app")
            .documentation("one per application, carrying its descriptor")
            .data_validator(NonEmpty)
            .build()
            .unwrap(),
        Schema::builder_regex("/apps/[^/]+/.+")
            .name("app-nodes")
            .build()
            .unwrap(),
    ])
    .unwrap()
}

#[tokio::test]
async fn parents_a_create_would_make_are_checked_before_any_is_made() {
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, app_schemas()).await;

    // "/apps" may be made with empty data, "/apps/a1" may not: neither is made.
    let (schema, path, violation) = refused(
        client
            .create()
            .creating_parents_if_needed()
            .for_path("/apps/a1/settings", b"x")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("app"), "/apps/a1", Violation::InvalidData)
    );
    assert_eq!(plain.check_exists().for_path("/apps").await, Ok(None));
    let (schema, path, violation) = refused(
        client
            .create()
            .creating_parent_containers_if_needed()
            .for_path("/apps/a1/settings", b"x")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("app"), "/apps/a1", Violation::InvalidData)
    );
    assert_eq!(plain.check_exists().for_path("/apps").await, Ok(None));

    // A parent that already exists is not created, so its schema does not stand in the way.
    client.create().for_path("/apps", b"").await.unwrap();
    client
        .create()
        .for_path("/apps/a1", b"descriptor")
        .await
        .unwrap();
    client
        .create()
        .creating_parents_if_needed()
        .for_path("/apps/a1/x/y", b"y")
        .await
        .unwrap();
    let (data, _) = plain.get_data().for_path("/apps/a1/x/y").await.unwrap();
    assert_eq!(data, b"y");
    let (data, stat) = plain.get_data().for_path("/apps/a1").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"descriptor"[..], 0));
}

#[tokio::test]
async fn children_that_cannot_be_deleted_stop_a_recursive_delete_before_it_starts() {
    let server = TestingServer::start().await.unwrap();
    let set = SchemaSet::allow_unknown(vec![
        Schema::builder("/tree/b/keep")
            .name("keep")
            .can_be_deleted(false)
            .build()
            .unwrap(),
        Schema::builder_regex("/tree(/.*)?")
            .name("tree")
            .build()
            .unwrap(),
    ])
    .unwrap();
    let (client, plain) = clients(&server, set).await;
    let nodes = ["/tree", "/tree/a", "/tree/a/1", "/tree/b", "/tree/b/keep"];
    for node in nodes {
        plain.create().for_path(node, b"").await.unwrap();
    }

    let (schema, path, violation) = refused(
        client
            .delete()
            .deleting_children_if_needed()
            .for_path("/tree")
            .await,
    );
    assert_eq!(
        (schema.as_deref(), path.as_str(), violation),
        (Some("keep"), "/tree/b/keep", Violation::CannotBeDeleted)
    );
    for node in nodes {
        assert!(
            plain.check_exists().for_path(node).await.unwrap().is_some(),
            "{node} was deleted"
        );
    }

    // A subtree without protected nodes goes.
    client
        .delete()
        .deleting_children_if_needed()
        .for_path("/tree/a")
        .await
        .unwrap();
    assert_eq!(plain.check_exists().for_path("/tree/a").await, Ok(None));
    assert!(
        plain
            .check_exists()
            .for_path("/tree/b/keep")
            .await
            .unwrap()
            .is_some()
    );
}

/// The structure of the example in Curator's schema documentation, written for this test.
const CURATOR_STYLE_JSON: &str = r#"
[
    {
        "name": "test",
        "path": "/a/b/c",
        "ephemeral": "must",
        "sequential": "cannot",
        "metadata": {
            "origin": "outside",
            "priority": 2
        }
    },
    {
        "name": "test2",
        "path": "/a/.*",
        "isRegex": true,
        "schemaValidator": "utf8",
        "ephemeral": "cannot",
        "canBeDeleted": true,
        "documentation": "everything else under /a"
    },
    {
        "name": "locked",
        "path": "/locked",
        "watched": "CANNOT"
    }
]
"#;

#[tokio::test]
async fn curators_json_format_loads_and_is_enforced() {
    let validators: HashMap<String, Arc<dyn DataValidator>> =
        HashMap::from([("utf8".to_owned(), Arc::new(Utf8) as Arc<dyn DataValidator>)]);
    let set = SchemaSet::from_json(CURATOR_STYLE_JSON, &validators).unwrap();
    assert!(set.allows_unknown());
    let test = set.named("test").unwrap();
    assert_eq!(
        (
            test.path(),
            test.ephemeral(),
            test.sequential(),
            test.watched()
        ),
        (
            Some("/a/b/c"),
            Allowance::Must,
            Allowance::Cannot,
            Allowance::Can
        )
    );
    assert_eq!(test.metadata()["priority"], "2");
    assert!(
        !test.can_be_deleted(),
        "canBeDeleted defaults to false in the JSON"
    );
    let test2 = set.named("test2").unwrap();
    assert!(test2.is_regex() && test2.can_be_deleted());
    assert_eq!(test2.documentation(), "everything else under /a");
    assert_eq!(set.schema_for("/a/b/c").unwrap().name(), "test");
    assert_eq!(set.schema_for("/a/x").unwrap().name(), "test2");
    assert_eq!(set.named("locked").unwrap().watched(), Allowance::Cannot);

    let set = set.into_strict();
    let server = TestingServer::start().await.unwrap();
    let (client, plain) = clients(&server, set).await;
    let (_, _, violation) = refused(client.create().for_path("/a/x", [0xff]).await);
    assert_eq!(violation, Violation::InvalidData);
    assert_eq!(plain.check_exists().for_path("/a/x").await, Ok(None));
    let (_, _, violation) = refused(client.create().for_path("/a", b"").await);
    assert_eq!(violation, Violation::NoSchema);
}

#[test]
fn malformed_json_is_a_typed_error() {
    let none = HashMap::new();
    for bad in [
        "[{\"name\": \"x\", \"path\": \"/x\"",
        "{\"name\": \"x\", \"path\": \"/x\"}",
        "[{\"path\": \"/x\"}]",
        "[{\"name\": \"x\", \"path\": \"/x\", \"ephemeral\": \"sometimes\"}]",
        "[{\"name\": \"x\", \"path\": \"/x\", \"schemaValidator\": \"missing\"}]",
    ] {
        match SchemaSet::from_json(bad, &none) {
            Err(Error::InvalidArgument(reason)) => {
                assert!(reason.starts_with("schema set JSON"), "{reason}")
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SchemaSet>();
    assert_send_sync::<Schema>();
}
