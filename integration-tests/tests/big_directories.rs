//! Big directories: listings past ZooKeeper's customary 1 MiB reply limit (`jute.maxbuffer`,
//! where the Java client drops its connection and retries forever), and the framework's own
//! `max_listing_bytes` limit, through the framework and the recipes that list children.
//!
//! Each test fills its directory with about 2,500 names of 446 bytes (a listing of 1.1 MB, over
//! [`JAVA_MAX_BUFFER`]): long names keep the directories cheap to make while the replies are as
//! large as 19,000 names of 50 bytes would make them. Fake contenders' names sort after every
//! real one (their sequence part starts with 9), so a real contender is first in line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use curator_caches::{CacheError, PathChildrenCache, PathChildrenCacheEvent, StartMode};
use curator_discovery::{ServiceCacheEvent, ServiceDiscovery};
use curator_election::{LatchEvent, LeaderLatch, LeaderObserver, LeaderSelector};
use curator_framework::ops::multi_read::ReadResult;
use curator_framework::retry::RetryPolicy;
use curator_framework::{CuratorFramework, Error, JAVA_MAX_BUFFER};
use curator_locks::InterProcessMutex;
use curator_nodes::{GroupMember, MemberEvent};
use curator_test::{TestingServer, Timing, unique_root};
use futures::StreamExt;

/// How many fake children each directory gets, and how long their names are.
const CHILDREN: usize = 2_500;
const NAME_LEN: usize = 446;
/// The limit of the clients that must fail: far below a big directory's listing.
const SMALL_LIMIT: usize = 64 * 1024;

/// A name of [`NAME_LEN`] bytes ending in `{marker}{sequence}`, sequence ≥ 9000000000.
fn fake_name(marker: &str, index: usize) -> String {
    let tail = format!("{marker}{}", 9_000_000_000_u64 + index as u64);
    format!("{}{tail}", "w".repeat(NAME_LEN - tail.len()))
}

/// Listing bytes of `CHILDREN` fake names (as the framework counts them).
fn big_listing_bytes() -> usize {
    4 + CHILDREN * (4 + NAME_LEN)
}

/// Creates `path` and [`CHILDREN`] persistent children named by `fake_name(marker, ..)`, many
/// requests in flight at once.
async fn fill(client: &CuratorFramework, path: &str, marker: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"")
        .await
        .unwrap();
    let creates = (0..CHILDREN).map(|index| {
        let child = format!("{path}/{}", fake_name(marker, index));
        let client = client.clone();
        async move { client.create().for_path(&child, b"").await }
    });
    let mut creates = futures::stream::iter(creates).buffer_unordered(256);
    while let Some(created) = creates.next().await {
        match created {
            // A create retried after a lost connection may meet its own first attempt's node.
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => panic!("creating a child failed: {error}"),
        }
    }
    assert!(big_listing_bytes() > JAVA_MAX_BUFFER);
}

/// A server, a client, and a new directory (a unique path named after `name`) filled by
/// [`fill`] with names of `marker`.
async fn big_directory(name: &str, marker: &str) -> (TestingServer, CuratorFramework, String) {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let path = unique_root(name);
    fill(&client, &path, marker).await;
    (server, client, path)
}

/// Closes `limited`, deletes `path` and everything under it, and closes `client`.
async fn tear_down(client: CuratorFramework, limited: CuratorFramework, path: &str) {
    limited.close().await.unwrap();
    client
        .delete()
        .deleting_children_if_needed()
        .for_path(path)
        .await
        .unwrap();
    client.close().await.unwrap();
}

/// Counts how often the framework asks whether to retry after `ResponseTooLarge` (and lets a
/// loaded machine's connection trouble be retried for a while).
#[derive(Debug, Default)]
struct CountingPolicy(AtomicU32);

impl RetryPolicy for CountingPolicy {
    fn allow_retry(&self, _: u32, elapsed: Duration, error: &Error) -> Option<Duration> {
        if matches!(error, Error::ResponseTooLarge { .. }) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        (elapsed < Timing::new().wait()).then_some(Duration::from_millis(100))
    }
}

/// A connected client whose listings may take at most `limit` bytes.
async fn limited_client(server: &TestingServer, limit: usize) -> CuratorFramework {
    let builder = curator_testkit::builder(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(15)),
    );
    curator_testkit::started(builder.max_listing_bytes(limit)).await
}

fn assert_too_large(error: &Error, path: &str) {
    match error {
        Error::ResponseTooLarge {
            path: listed,
            children,
            bytes,
            limit,
        } => {
            assert_eq!(listed, path);
            // A contender's own node may be listed too.
            assert!((CHILDREN..=CHILDREN + 1).contains(children), "{children}");
            assert!(*bytes >= big_listing_bytes(), "{bytes}");
            assert_eq!(*limit, SMALL_LIMIT);
            assert!(error.to_string().contains(path), "{error}");
        }
        other => panic!("expected ResponseTooLarge for {path}, got {other:?}"),
    }
}

/// A cache's read error for `path` carrying [`assert_too_large`]'s error.
fn assert_read_too_large(error: CacheError, path: &str) {
    match error {
        CacheError::Read { path: read, error } => {
            assert_eq!(read, path);
            assert_too_large(&error, path);
        }
        other => panic!("expected a read error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_listing_past_one_mib_arrives_whole_and_a_limit_fails_it_once_without_retrying() {
    let (server, client, path) = big_directory("big-listing", "n-").await;

    // No limit (the default): the reply is received whole, plainly, watched and in a multi-read.
    let (children, stat) = client.get_children().for_path(&path).await.unwrap();
    assert_eq!(children.len(), CHILDREN);
    assert_eq!(stat.num_children as usize, CHILDREN);
    let (children, _, _watcher) = client
        .get_children()
        .watched()
        .for_path(&path)
        .await
        .unwrap();
    assert_eq!(children.len(), CHILDREN);
    let read = client
        .multi_read()
        .get_children(&path)
        .commit()
        .await
        .unwrap();
    assert!(matches!(&read[..], [ReadResult::Children { children }] if children.len() == CHILDREN));

    // With a limit: a typed error at once, never handed to the retry policy, and the session
    // untouched (the next request works on it).
    let policy = Arc::new(CountingPolicy::default());
    let builder = curator_testkit::builder(
        &server.connect_string(),
        Timing::new().scale(Duration::from_secs(15)),
    )
    .retry_policy(Arc::clone(&policy))
    .max_listing_bytes(SMALL_LIMIT);
    let limited = curator_testkit::started(builder).await;
    let session = limited.session_id();
    let error = limited.get_children().for_path(&path).await.unwrap_err();
    assert_too_large(&error, &path);
    assert!(!error.is_retryable() && !error.is_retried());
    let error = limited
        .get_children()
        .watched()
        .for_path(&path)
        .await
        .unwrap_err();
    assert_too_large(&error, &path);
    // In a multi-read, only the listing that is too large fails.
    let read = limited
        .multi_read()
        .get_children(&path)
        .get_data(&path)
        .commit()
        .await
        .unwrap();
    match &read[..] {
        [ReadResult::Error(error), ReadResult::Data { .. }] => assert_too_large(error, &path),
        other => panic!("unexpected multi-read results: {other:?}"),
    }
    assert_eq!(
        policy.0.load(Ordering::SeqCst),
        0,
        "a too large listing is never retried"
    );
    // A small listing still works on the same session.
    let parent = path.rsplit_once('/').map(|(parent, _)| parent).unwrap();
    limited
        .get_children()
        .for_path(if parent.is_empty() { "/" } else { parent })
        .await
        .unwrap();
    assert_eq!(limited.session_id(), session);
    tear_down(client, limited, &path).await;
}

#[tokio::test]
async fn a_lock_works_past_one_mib_and_fails_acquire_with_the_typed_error_over_a_limit() {
    let (server, client, path) = big_directory("big-lock", "-lock-").await;

    // No limit: the contender's node is first in line and the 1.1 MB listing is read.
    let lock = InterProcessMutex::builder(client.clone(), &path)
        .build()
        .unwrap();
    let guard = lock.acquire().await.unwrap();
    assert_eq!(lock.participant_nodes().await.unwrap().len(), CHILDREN + 1);
    guard.release().await.unwrap();

    // Over a limit: acquire fails with the typed error, and its node does not stay behind.
    let limited = limited_client(&server, SMALL_LIMIT).await;
    let lock = InterProcessMutex::builder(limited.clone(), &path)
        .build()
        .unwrap();
    let error = lock.acquire().await.unwrap_err();
    assert_too_large(&error, &path);
    let error = lock
        .acquire_timeout(Timing::new().wait())
        .await
        .unwrap_err();
    assert_too_large(&error, &path);
    curator_testkit::eventually("the failed contender's node is deleted", || async {
        let (children, _) = client.get_children().for_path(&path).await.unwrap();
        children.len() == CHILDREN
    })
    .await;
    tear_down(client, limited, &path).await;
}

#[tokio::test]
async fn a_latch_leads_past_one_mib_and_an_election_over_a_limit_gives_up_with_the_typed_error() {
    let (server, client, path) = big_directory("big-latch", "-latch-").await;

    let latch = LeaderLatch::builder(client.clone(), &path, "big")
        .build()
        .unwrap();
    latch.start().await.unwrap();
    tokio::time::timeout(Timing::new().forever(), latch.await_leadership())
        .await
        .expect("leads within the deadline")
        .unwrap();
    latch.close().await.unwrap();

    // Over a limit: `start()` makes the offer; the background task reports the typed error
    // through the listener and never leads.
    let limited = limited_client(&server, SMALL_LIMIT).await;
    let latch = LeaderLatch::builder(limited.clone(), &path, "limited")
        .build()
        .unwrap();
    let mut events = latch.stream();
    latch.start().await.unwrap();
    // (A loaded machine may fail a step on a slow connection first; the latch retries those.)
    let failed = tokio::time::timeout(Timing::new().forever(), async {
        loop {
            match events.next().await.expect("events until close") {
                LatchEvent::Failed(error @ Error::ResponseTooLarge { .. }) => break error,
                LatchEvent::IsLeader => panic!("led over the limit"),
                _ => {}
            }
        }
    })
    .await
    .expect("a Failed event within the deadline");
    assert_too_large(&failed, &path);
    assert!(!latch.has_leadership());
    // It gave up: waiting to lead says why, and its offer is withdrawn.
    let error = latch.await_leadership().await.unwrap_err();
    assert_too_large(&error, &path);
    curator_testkit::eventually("the latch withdraws its offer", || async {
        let (children, _) = client.get_children().for_path(&path).await.unwrap();
        children.len() == CHILDREN
    })
    .await;
    latch.close().await.unwrap();

    // An observer over the limit fails its start.
    let observer = LeaderObserver::new(limited.clone(), &path).unwrap();
    let error = observer.start().await.unwrap_err();
    assert_too_large(&error, &path);
    observer.close().await.unwrap();

    // A selector over the limit (no listener of its own) tells the client's unhandled-error
    // listeners, and stops queueing: its lock node does not stay behind.
    let (errors_tx, mut errors) = tokio::sync::mpsc::unbounded_channel();
    let _errors = limited
        .unhandled_error_listenable()
        .add_listener(move |error| drop(errors_tx.send(error)));
    let selector = LeaderSelector::builder(limited.clone(), &path, "limited", |_| async {})
        .build()
        .unwrap();
    selector.start().await.unwrap();
    let reported = tokio::time::timeout(Timing::new().forever(), errors.recv())
        .await
        .expect("an unhandled error within the deadline")
        .unwrap();
    // Under the selector's one name: its kind and its path (no `metrics_name` given).
    assert_eq!(reported.context, format!("LeaderSelector {path}"));
    assert!(reported.message.contains(&path), "{reported}");
    assert!(!selector.has_leadership());
    curator_testkit::eventually("the selector's lock node is deleted", || async {
        let (children, _) = client.get_children().for_path(&path).await.unwrap();
        children.len() == CHILDREN
    })
    .await;
    selector.close().await.unwrap();
    tear_down(client, limited, &path).await;
}

#[tokio::test]
async fn a_cache_loads_past_one_mib_and_reports_max_children_and_the_limit_as_errors() {
    let (server, client, path) = big_directory("big-cache", "n-").await;

    async fn first_outcome(cache: &PathChildrenCache) -> PathChildrenCacheEvent {
        let mut events = cache.stream();
        cache.start().await.unwrap();
        // 2,500 reads: slow on a loaded machine.
        tokio::time::timeout(Timing::new().forever(), async {
            loop {
                let event = events.next().await.expect("events until close");
                if matches!(
                    event,
                    PathChildrenCacheEvent::Initialized(_) | PathChildrenCacheEvent::Error(_)
                ) {
                    break event;
                }
            }
        })
        .await
        .expect("initialized or failed within the deadline")
    }

    // No limit: the whole directory loads.
    let cache = PathChildrenCache::builder(client.clone(), &path)
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    let outcome = first_outcome(&cache).await;
    assert!(
        matches!(outcome, PathChildrenCacheEvent::Initialized(_)),
        "{outcome:?}"
    );
    assert_eq!(cache.current_data().len(), CHILDREN);
    cache.close().await.unwrap();

    // The cache's own bound still holds.
    let cache = PathChildrenCache::builder(client.clone(), &path)
        .with_start_mode(StartMode::PostInitializedEvent)
        .max_children(CHILDREN - 1)
        .build()
        .unwrap();
    match first_outcome(&cache).await {
        PathChildrenCacheEvent::Error(CacheError::TooManyChildren {
            children, limit, ..
        }) => assert_eq!((children, limit), (CHILDREN, CHILDREN - 1)),
        other => panic!("expected TooManyChildren, got {other:?}"),
    }
    cache.close().await.unwrap();

    // The client's limit: reported once as a read error, not retried.
    let limited = limited_client(&server, SMALL_LIMIT).await;
    let cache = PathChildrenCache::builder(limited.clone(), &path)
        .with_start_mode(StartMode::PostInitializedEvent)
        .build()
        .unwrap();
    match first_outcome(&cache).await {
        PathChildrenCacheEvent::Error(error) => assert_read_too_large(error, &path),
        other => panic!("expected a read error, got {other:?}"),
    }
    assert!(cache.current_data().is_empty());
    cache.close().await.unwrap();
    tear_down(client, limited, &path).await;
}

#[tokio::test]
async fn the_inspector_reads_past_one_mib_and_fails_with_the_typed_error_over_a_limit() {
    let (server, client, path) = big_directory("big-inspect", "n-").await;

    let report = curator_inspect::inspect(&client, &path).await.unwrap();
    assert_eq!(report.children, CHILDREN);

    let limited = limited_client(&server, SMALL_LIMIT).await;
    let error = curator_inspect::inspect(&limited, &path).await.unwrap_err();
    assert_too_large(&error, &path);
    tear_down(client, limited, &path).await;
}

#[tokio::test]
async fn group_membership_and_a_service_cache_over_a_limit_report_the_typed_error() {
    let server = TestingServer::start().await.unwrap();
    let client = curator_testkit::client(&server.connect_string()).await;
    let base = unique_root("big-members");
    // One directory serves as a group and as the instances of service "api".
    let path = format!("{base}/api");
    fill(&client, &path, "n-").await;
    let limited = limited_client(&server, SMALL_LIMIT).await;

    let member = GroupMember::new(limited.clone(), &path, "limited", b"").unwrap();
    let mut events = member.stream();
    member.start().await.unwrap();
    let error = tokio::time::timeout(Timing::new().forever(), async {
        loop {
            if let MemberEvent::Error(error) = events.next().await.expect("events until close") {
                break error;
            }
        }
    })
    .await
    .expect("an Error event within the deadline");
    assert_read_too_large(error, &path);
    member.close().await.unwrap();

    let discovery = ServiceDiscovery::builder(limited.clone(), &base)
        .build()
        .unwrap();
    let cache = discovery.service_cache_builder("api").build().unwrap();
    let mut events = cache.stream();
    // The initial load ends (with what could be read: nothing), and the error is an event.
    cache.start().await.unwrap();
    assert!(cache.instances().is_empty());
    let error = tokio::time::timeout(Timing::new().forever(), async {
        loop {
            if let ServiceCacheEvent::Error(error) =
                events.next().await.expect("events until close")
            {
                break error;
            }
        }
    })
    .await
    .expect("an Error event within the deadline");
    assert_read_too_large(error, &path);
    // A one-off query fails the same way.
    let error = discovery.query_for_instances("api").await.unwrap_err();
    assert_too_large(&error, &path);
    cache.close().await.unwrap();
    discovery.close().await.unwrap();
    tear_down(client, limited, &base).await;
}
