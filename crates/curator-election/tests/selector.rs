//! `LeaderSelector` against a real ZooKeeper server.

use std::sync::Arc;
use std::time::Duration;

use curator_election::LeaderSelector;
use curator_framework::CuratorFramework;
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;
use parking_lot::Mutex;
use tokio::time::Instant;

/// (participant, leadership start, leadership end) for every leadership, one clock.
type Terms = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

/// Records a leadership's end when the task finishes or is cancelled (dropped).
struct EndOfTerm {
    terms: Terms,
    id: String,
    started: Instant,
}

impl Drop for EndOfTerm {
    fn drop(&mut self) {
        self.terms
            .lock()
            .push((self.id.clone(), self.started, Instant::now()));
    }
}

fn assert_no_overlap(terms: &[(String, Instant, Instant)]) {
    let mut sorted = terms.to_vec();
    sorted.sort_by_key(|t| t.1);
    for pair in sorted.windows(2) {
        assert!(
            pair[0].2 <= pair[1].1,
            "{} led until {:?}, {} from {:?}",
            pair[0].0,
            pair[0].2,
            pair[1].0,
            pair[1].1
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_requeue_cycles_leadership_without_overlap() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("selector-cycle");
    let terms: Terms = Arc::default();
    let mut selectors = Vec::new();
    for i in 0..3 {
        let terms = Arc::clone(&terms);
        let id = format!("s{i}");
        let task_id = id.clone();
        let selector = LeaderSelector::builder(
            testkit::client(&server.connect_string()).await,
            &path,
            id,
            move |_context| {
                let end = EndOfTerm {
                    terms: Arc::clone(&terms),
                    id: task_id.clone(),
                    started: Instant::now(),
                };
                async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    drop(end);
                }
            },
        )
        .auto_requeue()
        .build()
        .unwrap();
        selector.start().await.unwrap();
        selectors.push(selector);
    }
    curator_test::eventually("nine leaderships", || async { terms.lock().len() >= 9 }).await;
    for selector in &selectors {
        selector.close().await.unwrap();
    }
    let terms = terms.lock().clone();
    assert_no_overlap(&terms);
    let leaders: std::collections::HashSet<&str> = terms.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        leaders.len(),
        3,
        "leadership cycles through every participant: {leaders:?}"
    );
}

/// A selector whose task leads until told to stop, recording its term.
fn waiting_selector(
    client: CuratorFramework,
    path: &str,
    id: &str,
    terms: &Terms,
    requeue: bool,
) -> LeaderSelector {
    let terms = Arc::clone(terms);
    let task_id = id.to_owned();
    let builder = LeaderSelector::builder(client, path, id, move |context| {
        let end = EndOfTerm {
            terms: Arc::clone(&terms),
            id: task_id.clone(),
            started: Instant::now(),
        };
        async move {
            context.lost().await;
            drop(end);
        }
    });
    let builder = if requeue {
        builder.auto_requeue()
    } else {
        builder
    };
    builder.build().unwrap()
}

async fn queued(selector: &LeaderSelector, n: usize) {
    curator_test::eventually("participants queue", || async {
        selector.participants().await.unwrap().len() >= n
    })
    .await;
}

/// `a` (on `a_client`) leads and `b` (on `b_client`) waits behind it; both requeue
/// automatically when `requeue`.
async fn a_leads_b_waits(
    a_client: CuratorFramework,
    b_client: CuratorFramework,
    path: &str,
    terms: &Terms,
    requeue: bool,
) -> (LeaderSelector, LeaderSelector) {
    let a = waiting_selector(a_client, path, "a", terms, requeue);
    a.start().await.unwrap();
    curator_test::eventually("a leads", || async { a.has_leadership() }).await;
    let b = waiting_selector(b_client, path, "b", terms, requeue);
    b.start().await.unwrap();
    queued(&b, 2).await;
    (a, b)
}

/// Who led, in order.
fn leaders(terms: &Terms) -> Vec<String> {
    terms.lock().iter().map(|t| t.0.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interruption_cancels_the_task_and_passes_leadership_on() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("selector-interrupt");
    let terms: Terms = Arc::default();
    let (a, b) = a_leads_b_waits(
        testkit::client(&server.connect_string()).await,
        testkit::client(&server.connect_string()).await,
        &path,
        &terms,
        false,
    )
    .await;
    assert_eq!(b.leader().await.unwrap().unwrap().id, "a");
    assert_eq!(b.participants().await.unwrap()[1].id, "b");

    a.interrupt_leadership();
    curator_test::eventually("b leads", || async { b.has_leadership() }).await;
    assert!(!a.has_leadership());
    b.close().await.unwrap();
    a.close().await.unwrap();
    assert_eq!(leaders(&terms), ["a", "b"]);
    let terms = terms.lock().clone();
    assert_no_overlap(&terms);
}

/// A leader cut off from the server: its task is cancelled at `Suspended`, before the server can
/// expire its session, so it has stopped before the next leader starts. (With an expiry injected
/// at once, which of the two processes acts first is not defined: the server deletes the node as
/// the old leader hears of the end; so that case only checks the hand-over.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leaders_task_is_cancelled_before_the_next_leader_starts() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = unique_root("selector-partition");
    let terms: Terms = Arc::default();
    let session_timeout = Timing::new().scale(Duration::from_secs(4));
    let (a, b) = a_leads_b_waits(
        testkit::client_with(&proxy.connect_string(), session_timeout).await,
        testkit::client(&server.connect_string()).await,
        &path,
        &terms,
        false,
    )
    .await;

    proxy.pause();
    curator_test::eventually("b leads once a's session expired", || async {
        b.has_leadership()
    })
    .await;
    assert!(!a.has_leadership());
    b.close().await.unwrap();
    proxy.resume();
    a.close().await.unwrap();
    assert_eq!(leaders(&terms), ["a", "b"]);
    let terms = terms.lock().clone();
    assert_no_overlap(&terms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_leader_hands_over() {
    let server = TestingServer::start().await.unwrap();
    let path = unique_root("selector-expiry");
    let terms: Terms = Arc::default();
    let a_client = testkit::client(&server.connect_string()).await;
    let (a, b) = a_leads_b_waits(
        a_client.clone(),
        testkit::client(&server.connect_string()).await,
        &path,
        &terms,
        false,
    )
    .await;

    a_client.inject_session_expiration().await.unwrap();
    curator_test::eventually("b leads and a's term ended", || async {
        b.has_leadership() && terms.lock().iter().any(|t| t.0 == "a")
    })
    .await;
    assert!(!a.has_leadership());
    b.close().await.unwrap();
    assert_eq!(leaders(&terms), ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_ends_the_term_and_leadership_resumes_without_overlap() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let path = unique_root("selector-restart");
    let terms: Terms = Arc::default();
    let (a, b) = a_leads_b_waits(
        testkit::client(&server.connect_string()).await,
        testkit::client(&server.connect_string()).await,
        &path,
        &terms,
        true,
    )
    .await;

    // The connection drops (same sessions): the leader's task is stopped at Suspended, and
    // after the reconnect one of the two leads again.
    server.restart().await.unwrap();
    curator_test::eventually("a's term ended", || async {
        terms.lock().iter().any(|t| t.0 == "a")
    })
    .await;
    curator_test::eventually("someone leads again", || async {
        a.has_leadership() || b.has_leadership()
    })
    .await;
    assert!(!(a.has_leadership() && b.has_leadership()));
    a.close().await.unwrap();
    b.close().await.unwrap();
    let terms = terms.lock().clone();
    assert!(terms.len() >= 2, "{terms:?}");
    assert_no_overlap(&terms);
}
