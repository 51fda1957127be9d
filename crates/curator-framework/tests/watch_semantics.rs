//! Watch semantics that changed between ZooKeeper 3.8 and 3.9, through the framework's public
//! API, on whichever server the run uses (`scripts/test.sh` runs the suite on both): each test
//! asks the server its version and asserts what that version does.
//!
//! - ZOOKEEPER-4466 (3.9.0): watches of different modes on one path coexist. Before it, the
//!   server kept one mode per path and session in each of its two watch tables (data and
//!   children), and the watch added last set it: a one-shot watch added on a path with a
//!   persistent watch turned that watch into a one-shot one, gone once it fired.
//! - ZOOKEEPER-4471 (3.9.0): removing a one-shot watch (`Data` or `Children`) removes only
//!   one-shot watches. Before it, it removed the session's whole entry for the path in that table,
//!   so a persistent watch on the path lost its data (or children) events.
//! - ZOOKEEPER-4472 (3.9.0): `Persistent` and `PersistentRecursive` watcher types remove one
//!   persistent watch, leaving the path's other watches in place. 3.8 has only `Children`,
//!   `Data` and `Any`.
//! - ZOOKEEPER-4475 (a client fix, Java 3.9.0): a recursive watch never reports
//!   `NodeChildrenChanged`, also when the same session has a children watch that makes the
//!   server send one for a path under it.
//! - ZOOKEEPER-4655 (3.9.0): a notification carries the zxid of the change that triggered it
//!   ([`WatchedEvent::zxid`]); 3.8 sends none.
//!
//! The session engine works around the 3.8 server where it can: where its own persistent watch
//! on a path already brings a one-shot watch's events, it asks the server for no one-shot watch
//! (so 3.8 never turns the persistent watch into a one-shot one), and it removes a one-shot
//! watch at the server only when no other watch of the session needs that table's entry for the
//! path. On those tests a 3.8 server shows what 3.9 does. Two persistent modes on one path
//! cannot be helped on 3.8.
//!
//! Writes come from the watching client itself, so each write's reply follows the
//! notifications it caused on the same connection: ZooKeeper sends a notification before the
//! reply that follows it, and a client delivers it first. That is how [`assert_quiet`] tells
//! that an event did not come, without sleeping.

mod support;

use futures::FutureExt;

use curator_framework::types::{EventType, WatchedEvent};
use curator_framework::watcher::PersistentWatcher;
use curator_framework::{CuratorFramework, Stat};
use curator_test::{ServerVersion, TestingServer, Timing, four_letter_word, server_version};

/// A client on the run's server, a fresh root for the test, and the server's version.
async fn setup(name: &str) -> (TestingServer, CuratorFramework, String, ServerVersion) {
    let server = TestingServer::start().await.unwrap();
    let client = support::connected(&server.connect_string()).await;
    let root = support::create_root(&client, name).await;
    let version = server_version(&server.connect_string()).await.unwrap();
    (server, client, root, version)
}

/// ZooKeeper 3.9's watch manager: ZOOKEEPER-4466, 4471, 4472 and 4655 are all in 3.9.0.
fn watch_manager_3_9(version: ServerVersion) -> bool {
    version.at_least(3, 9)
}

async fn within<T>(future: impl std::future::IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Timing::new().wait(), future)
        .await
        .expect("event in time")
}

/// The next event of `watcher` that is about a node (session events skipped).
async fn next_node_event(watcher: &mut PersistentWatcher) -> WatchedEvent {
    loop {
        let event = within(watcher.next()).await.expect("the watch ended early");
        if event.event_type != EventType::Session {
            return event;
        }
    }
}

/// The next `n` node events of `watcher`, as (type, path).
async fn next_events(watcher: &mut PersistentWatcher, n: usize) -> Vec<(EventType, String)> {
    let mut events = Vec::new();
    for _ in 0..n {
        let event = next_node_event(watcher).await;
        events.push((event.event_type, event.path));
    }
    events
}

/// Asserts that `watcher` has no node event from what `client` did so far. A read's reply
/// follows every notification the server sent before it on the connection, and the client
/// delivers those first, so once it is in, an event would be waiting.
async fn assert_quiet(watcher: &mut PersistentWatcher, client: &CuratorFramework, what: &str) {
    client.check_exists().for_path("/").await.unwrap();
    while let Some(event) = watcher.next().now_or_never() {
        let event = event.expect("the watch ended");
        assert_eq!(
            event.event_type,
            EventType::Session,
            "{what}: unexpected {event:?}"
        );
    }
}

/// The paths the server holds data watches of `client`'s session on (`wchc` lists the data
/// watch table by session; children watches are not in it).
async fn data_watches(server: &TestingServer, client: &CuratorFramework) -> Vec<String> {
    let session = format!("0x{:x}", client.session_id().expect("a session"));
    let dump = four_letter_word(&server.connect_string(), "wchc", Timing::new().wait())
        .await
        .unwrap();
    dump.lines()
        .skip_while(|line| line.trim() != session)
        .skip(1)
        .take_while(|line| line.starts_with('\t'))
        .map(|line| line.trim().to_owned())
        .collect()
}

fn event(event_type: EventType, path: &str) -> (EventType, String) {
    (event_type, path.to_owned())
}

/// ZOOKEEPER-4466: a one-shot data watch set on a path that has a persistent watch. On 3.9
/// both live on at the server. On 3.8 a one-shot watch would replace the persistent watch's
/// mode in the data table, so the session asks the server for none: the persistent watch brings
/// the one-shot watch its event, and both live on there too.
#[tokio::test]
async fn a_one_shot_watch_beside_a_persistent_watch_on_one_path() {
    let (_server, client, root, version) = setup("watch-4466-persistent").await;
    let node = format!("{root}/n");
    client.create().for_path(&node, b"").await.unwrap();
    let mut persistent = client.add_watch().for_path(&node).await.unwrap();
    let (_, _, one_shot) = client.get_data().watched().for_path(&node).await.unwrap();

    client.set_data().for_path(&node, b"1").await.unwrap();
    let fired = within(one_shot).await;
    assert_eq!(
        (fired.event_type, fired.path.as_str()),
        (EventType::NodeDataChanged, node.as_str())
    );
    client.set_data().for_path(&node, b"2").await.unwrap();
    client
        .create()
        .for_path(&format!("{node}/child"), b"")
        .await
        .unwrap();

    let expected = vec![
        event(EventType::NodeDataChanged, &node),
        event(EventType::NodeDataChanged, &node),
        event(EventType::NodeChildrenChanged, &node),
    ];
    assert_eq!(
        next_events(&mut persistent, expected.len()).await,
        expected,
        "ZooKeeper {version}"
    );
    assert_quiet(&mut persistent, &client, "after the child").await;
}

/// ZOOKEEPER-4466 for a recursive watch: an `exists` watch on its root. On 3.9 the recursive
/// watch goes on reporting the subtree. On 3.8 the one-shot watch would take over the root's
/// only entry (recursive watches live in the data table alone), so the session asks the server
/// for none, and the recursive watch goes on there too.
#[tokio::test]
async fn a_one_shot_watch_on_the_root_of_a_recursive_watch() {
    let (_server, client, root, _version) = setup("watch-4466-recursive").await;
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    let (stat, one_shot) = client
        .check_exists()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    assert!(stat.is_some());

    client.set_data().for_path(&root, b"1").await.unwrap();
    assert_eq!(
        within(one_shot).await.event_type,
        EventType::NodeDataChanged
    );
    assert_eq!(
        next_events(&mut recursive, 1).await,
        vec![event(EventType::NodeDataChanged, &root)]
    );

    let child = format!("{root}/a");
    client.create().for_path(&child, b"").await.unwrap();
    assert_eq!(
        next_events(&mut recursive, 1).await,
        vec![event(EventType::NodeCreated, &child)]
    );
}

/// ZOOKEEPER-4466 for two persistent watches: a plain one added on the root of a recursive one.
/// On 3.9 they coexist; on 3.8 the plain one's mode replaced the recursive one's in the data
/// table, so nothing below the root is reported any more (the plain watch, also in the
/// children table, still reports the root's children).
#[tokio::test]
async fn a_persistent_watch_added_on_the_root_of_a_recursive_one() {
    let (_server, client, root, version) = setup("watch-4466-two-persistent").await;
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    let mut plain = client.add_watch().for_path(&root).await.unwrap();

    let child = format!("{root}/a");
    client.create().for_path(&child, b"").await.unwrap();
    assert_eq!(
        next_events(&mut plain, 1).await,
        vec![event(EventType::NodeChildrenChanged, &root)]
    );
    if watch_manager_3_9(version) {
        assert_eq!(
            next_events(&mut recursive, 1).await,
            vec![event(EventType::NodeCreated, &child)]
        );
    } else {
        assert_quiet(&mut recursive, &client, "3.8 replaced the recursive mode").await;
    }
}

/// ZOOKEEPER-4471: removing a one-shot watch (a data watch on one node, a children watch on
/// another) on a path that also has a persistent watch. On 3.9 a removal takes the one-shot
/// watch only; on 3.8 it would take the session's whole entry for the path in that table, so
/// the session sends none while its persistent watch needs the entry: the persistent watch
/// keeps every kind of event on both. (The one-shot watches are set first, so 3.8's one mode per
/// path, ZOOKEEPER-4466, leaves the persistent mode in place.)
#[tokio::test]
async fn removing_a_one_shot_watch_leaves_a_persistent_watch_on_its_path_whole() {
    let (_server, client, root, version) = setup("watch-4471").await;
    let (data_node, children_node) = (format!("{root}/data"), format!("{root}/children"));
    for node in [&data_node, &children_node] {
        client.create().for_path(node, b"").await.unwrap();
    }
    let (_, _, data_watch) = client
        .get_data()
        .watched()
        .for_path(&data_node)
        .await
        .unwrap();
    let (_, _, children_watch) = client
        .get_children()
        .watched()
        .for_path(&children_node)
        .await
        .unwrap();
    let mut on_data_node = client.add_watch().for_path(&data_node).await.unwrap();
    let mut on_children_node = client.add_watch().for_path(&children_node).await.unwrap();

    data_watch.remove().await.unwrap();
    children_watch.remove().await.unwrap();
    for node in [&data_node, &children_node] {
        client.set_data().for_path(node, b"x").await.unwrap();
        client
            .create()
            .for_path(&format!("{node}/c"), b"")
            .await
            .unwrap();
    }

    let expected = vec![
        event(EventType::NodeDataChanged, &data_node),
        event(EventType::NodeChildrenChanged, &data_node),
    ];
    assert_eq!(
        next_events(&mut on_data_node, expected.len()).await,
        expected,
        "the data watch removed, ZooKeeper {version}"
    );
    let expected = vec![
        event(EventType::NodeDataChanged, &children_node),
        event(EventType::NodeChildrenChanged, &children_node),
    ];
    assert_eq!(
        next_events(&mut on_children_node, expected.len()).await,
        expected,
        "the children watch removed, ZooKeeper {version}"
    );
    assert_quiet(&mut on_data_node, &client, "data node").await;
    assert_quiet(&mut on_children_node, &client, "children node").await;
}

/// `PersistentWatcher::remove` beside a one-shot children watch on the same path: the one-shot
/// watch still fires, and the removed watch reports nothing more (on every version).
#[tokio::test]
async fn removing_a_persistent_watch_leaves_a_one_shot_watch_on_its_path() {
    let (_server, client, root, _version) = setup("watch-4472-one-shot").await;
    let (_, _, children_watch) = client
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    let persistent = client.add_watch().for_path(&root).await.unwrap();
    persistent.remove().await.unwrap();

    let child = format!("{root}/a");
    client.create().for_path(&child, b"").await.unwrap();
    let fired = within(children_watch).await;
    assert_eq!(
        (fired.event_type, fired.path.as_str()),
        (EventType::NodeChildrenChanged, root.as_str())
    );
}

/// ZOOKEEPER-4472: on 3.9 `PersistentWatcher::remove` removes that persistent watch at the
/// server (watcher type `Persistent`) and nothing else, here beside a one-shot children watch on
/// the same path. The server's data watch table (`wchc`), where the persistent watch has an entry
/// and the children watch has none, shows it gone. (3.8 cannot remove one watch of a path's
/// several: its removeWatches knows `Children`, `Data` and `Any`, and `Any` would take the
/// children watch too; the test above covers what a client sees there.)
#[tokio::test]
async fn on_3_9_a_removed_persistent_watch_is_gone_at_the_server() {
    let (server, client, root, version) = setup("watch-4472-server").await;
    if !watch_manager_3_9(version) {
        return;
    }
    let (_, _, children_watch) = client
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    let persistent = client.add_watch().for_path(&root).await.unwrap();
    assert!(data_watches(&server, &client).await.contains(&root));

    persistent.remove().await.unwrap();
    assert!(
        !data_watches(&server, &client).await.contains(&root),
        "the server still holds the removed persistent watch"
    );
    client
        .create()
        .for_path(&format!("{root}/a"), b"")
        .await
        .unwrap();
    assert_eq!(
        within(children_watch).await.event_type,
        EventType::NodeChildrenChanged
    );
}

/// ZOOKEEPER-4475: a recursive watch reports creations, deletions and data changes below it,
/// never `NodeChildrenChanged`, although the same session's children watches (on the root and
/// on a node below it) make the server send that event for paths under the recursive watch.
#[tokio::test]
async fn recursive_watches_get_no_children_changed_events() {
    let (_server, client, root, _version) = setup("watch-4475").await;
    let below = format!("{root}/a");
    client.create().for_path(&below, b"").await.unwrap();
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    let (_, _, on_root) = client
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();
    let (_, _, on_below) = client
        .get_children()
        .watched()
        .for_path(&below)
        .await
        .unwrap();

    let grandchild = format!("{below}/b");
    let sibling = format!("{root}/x");
    client.create().for_path(&grandchild, b"").await.unwrap();
    client.create().for_path(&sibling, b"").await.unwrap();
    client.set_data().for_path(&sibling, b"1").await.unwrap();

    assert_eq!(
        next_events(&mut recursive, 3).await,
        vec![
            event(EventType::NodeCreated, &grandchild),
            event(EventType::NodeCreated, &sibling),
            event(EventType::NodeDataChanged, &sibling),
        ]
    );
    assert_quiet(&mut recursive, &client, "after the data change").await;
    for (watch, path) in [(on_below, &below), (on_root, &root)] {
        let fired = within(watch).await;
        assert_eq!(
            (fired.event_type, fired.path.as_str()),
            (EventType::NodeChildrenChanged, path.as_str())
        );
    }
}

/// ZOOKEEPER-4655: on 3.9 each notification carries the zxid of the change that triggered it
/// (a creation's is the node's `czxid`, a data change's its `mzxid`, a deletion's and a
/// children change's the parent's new `pzxid`; the changes of one transaction share one); on
/// 3.8 none does.
#[tokio::test]
async fn notifications_carry_the_zxid_of_their_change() {
    let (_server, client, root, version) = setup("watch-4655").await;
    let mut recursive = client
        .add_watch()
        .recursive()
        .for_path(&root)
        .await
        .unwrap();
    let (_, _, children_watch) = client
        .get_children()
        .watched()
        .for_path(&root)
        .await
        .unwrap();

    let node = format!("{root}/n");
    let (_, created) = client
        .create()
        .for_path(&node, b"")
        .with_stat()
        .await
        .unwrap();
    let changed = client.set_data().for_path(&node, b"1").await.unwrap();
    let (first, second) = (format!("{root}/t1"), format!("{root}/t2"));
    client
        .transaction()
        .create(&first, b"")
        .create(&second, b"")
        .commit()
        .await
        .unwrap();
    let in_transaction = stat_of(&client, &first).await.czxid;
    assert_eq!(stat_of(&client, &second).await.czxid, in_transaction);
    client.delete().for_path(&node).await.unwrap();
    let deleted = stat_of(&client, &root).await.pzxid;

    let mut events = Vec::new();
    for _ in 0..5 {
        let event = next_node_event(&mut recursive).await;
        events.push((event.event_type, event.path, event.zxid));
    }
    let zxid = |zxid: i64| watch_manager_3_9(version).then_some(zxid);
    assert_eq!(
        events,
        vec![
            (EventType::NodeCreated, node.clone(), zxid(created.czxid)),
            (
                EventType::NodeDataChanged,
                node.clone(),
                zxid(changed.mzxid)
            ),
            (EventType::NodeCreated, first, zxid(in_transaction)),
            (EventType::NodeCreated, second, zxid(in_transaction)),
            (EventType::NodeDeleted, node, zxid(deleted)),
        ],
        "ZooKeeper {version}"
    );
    // The root's children changed first with the creation of `n`.
    let children_changed = within(children_watch).await;
    assert_eq!(
        (children_changed.event_type, children_changed.zxid),
        (EventType::NodeChildrenChanged, zxid(created.czxid)),
        "ZooKeeper {version}"
    );
}

async fn stat_of(client: &CuratorFramework, path: &str) -> Stat {
    client
        .check_exists()
        .for_path(path)
        .await
        .unwrap()
        .expect("the node exists")
}
