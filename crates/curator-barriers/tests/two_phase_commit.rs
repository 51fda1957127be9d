//! Two-phase commit against a real ZooKeeper: commit when all vote commit, abort on one abort,
//! on a crashed site and on a timeout; every participant learns the same outcome.

use std::time::Duration;

use curator_barriers::{Outcome, TwoPhaseCommit, Vote};
use curator_framework::Error;
use curator_test::{TestingServer, Timing, unique_root};
use curator_testkit::client;

/// Starts the transaction with `sites`, each site on its own client joined, and returns the
/// coordinator and the site handles.
async fn setup(
    server: &TestingServer,
    name: &str,
    sites: &[&str],
) -> (TwoPhaseCommit, Vec<curator_barriers::Site>) {
    let path = format!("{}/tx", unique_root(name));
    let coordinator = TwoPhaseCommit::new(client(&server.connect_string()).await, &path).unwrap();
    coordinator.begin(sites).await.unwrap();
    let mut joined = Vec::new();
    for site in sites {
        let tx = TwoPhaseCommit::new(client(&server.connect_string()).await, &path).unwrap();
        joined.push(tx.join(site).await.unwrap());
    }
    (coordinator, joined)
}

/// Every site votes (in its own task) and waits for the outcome; returns the outcomes.
async fn vote_all(sites: Vec<curator_barriers::Site>, votes: &[Vote]) -> Vec<Outcome> {
    let mut tasks = Vec::new();
    for (site, vote) in sites.into_iter().zip(votes.iter().copied()) {
        tasks.push(tokio::spawn(async move {
            site.vote(vote).await.unwrap();
            site.outcome(Timing::new().forever()).await.unwrap()
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_commit_votes_commit_for_everyone() {
    let server = TestingServer::start().await.unwrap();
    let (coordinator, sites) = setup(&server, "2pc-commit", &["db1", "db2", "cache"]).await;
    let waiting = tokio::spawn({
        let coordinator = coordinator.clone();
        async move { coordinator.outcome(Timing::new().forever()).await }
    });
    let outcomes = vote_all(sites, &[Vote::Commit; 3]).await;
    assert_eq!(outcomes, vec![Outcome::Commit; 3]);
    assert_eq!(waiting.await.unwrap().unwrap(), Outcome::Commit);
    coordinator.delete().await.unwrap();
    assert_eq!(coordinator.sites().await, Err(Error::NoNode));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_abort_vote_aborts_everyone_early() {
    let server = TestingServer::start().await.unwrap();
    let (coordinator, mut sites) = setup(&server, "2pc-abort", &["a", "b", "c"]).await;
    // c never votes: the abort does not wait for it.
    let silent = sites.pop().unwrap();
    let outcomes = vote_all(sites, &[Vote::Commit, Vote::Abort]).await;
    let expected = Outcome::Abort {
        reason: "site b voted abort".into(),
    };
    assert_eq!(outcomes, vec![expected.clone(); 2]);
    assert_eq!(
        silent.outcome(Timing::new().forever()).await.unwrap(),
        expected
    );
    assert_eq!(
        coordinator.outcome(Timing::new().forever()).await.unwrap(),
        expected
    );
    assert!(
        matches!(silent.vote(Vote::Commit).await, Ok(())),
        "a late vote is recorded but changes nothing"
    );
    assert!(matches!(
        silent.vote(Vote::Abort).await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_site_aborts_the_transaction() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/tx", unique_root("2pc-crash"));
    let coordinator = TwoPhaseCommit::new(client(&server.connect_string()).await, &path).unwrap();
    coordinator.begin(&["live", "doomed"]).await.unwrap();
    let live = TwoPhaseCommit::new(client(&server.connect_string()).await, &path)
        .unwrap()
        .join("live")
        .await
        .unwrap();
    let doomed_client = client(&server.connect_string()).await;
    let _doomed = TwoPhaseCommit::new(doomed_client.clone(), &path)
        .unwrap()
        .join("doomed")
        .await
        .unwrap();
    live.vote(Vote::Commit).await.unwrap();
    let waiting = tokio::spawn({
        let live = live.clone();
        async move { live.outcome(Timing::new().forever()).await }
    });
    // The doomed site's session ends before it votes.
    doomed_client.inject_session_expiration().await.unwrap();
    let expected = Outcome::Abort {
        reason: "site doomed vanished".into(),
    };
    assert_eq!(waiting.await.unwrap().unwrap(), expected);
    assert_eq!(
        coordinator.outcome(Timing::new().forever()).await.unwrap(),
        expected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_that_never_comes_times_the_transaction_out() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/tx", unique_root("2pc-timeout"));
    let coordinator = TwoPhaseCommit::new(client(&server.connect_string()).await, &path).unwrap();
    coordinator.begin(&["here", "absent"]).await.unwrap();
    let here = TwoPhaseCommit::new(client(&server.connect_string()).await, &path)
        .unwrap()
        .join("here")
        .await
        .unwrap();
    here.vote(Vote::Commit).await.unwrap();
    let timed_out = Outcome::Abort {
        reason: "timed out".into(),
    };
    assert_eq!(
        coordinator
            .outcome(Duration::from_millis(300))
            .await
            .unwrap(),
        timed_out
    );
    // Everyone else learns the same outcome, even a latecomer that would have voted commit.
    assert_eq!(
        here.outcome(Timing::new().forever()).await.unwrap(),
        timed_out
    );
    let late = TwoPhaseCommit::new(client(&server.connect_string()).await, &path)
        .unwrap()
        .join("absent")
        .await
        .unwrap();
    late.vote(Vote::Commit).await.unwrap();
    assert_eq!(
        late.outcome(Timing::new().forever()).await.unwrap(),
        timed_out
    );
}

#[tokio::test]
async fn bad_input_is_refused() {
    let server = TestingServer::start().await.unwrap();
    let c = client(&server.connect_string()).await;
    let path = format!("{}/tx", unique_root("2pc-input"));
    let tx = TwoPhaseCommit::new(c.clone(), &path).unwrap();
    assert!(matches!(
        tx.begin(&[] as &[&str]).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        tx.begin(&["a", "a"]).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        tx.begin(&["_outcome"]).await,
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(tx.join("a").await.unwrap_err(), Error::NoNode, "not begun");
    tx.begin(&["a"]).await.unwrap();
    assert!(matches!(tx.join("b").await, Err(Error::InvalidArgument(_))));
    tx.join("a").await.unwrap();
    assert_eq!(tx.join("a").await.unwrap_err(), Error::NodeExists);
    assert!(matches!(
        TwoPhaseCommit::new(c, "relative"),
        Err(Error::InvalidPath { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_participants_learn_the_outcome_across_a_server_restart() {
    let mut server = TestingServer::start_dedicated().await.unwrap();
    let (coordinator, mut sites) = setup(&server, "2pc-restart", &["early", "late"]).await;
    let late = sites.pop().unwrap();
    let early = sites.pop().unwrap();
    early.vote(Vote::Commit).await.unwrap();
    let waiting = tokio::spawn({
        let early = early.clone();
        async move { early.outcome(Timing::new().forever()).await }
    });
    // The server goes away and comes back inside the sessions' timeout: presences survive,
    // the waiters' watches are restored.
    server.restart().await.unwrap();
    late.vote(Vote::Commit).await.unwrap();
    assert_eq!(waiting.await.unwrap().unwrap(), Outcome::Commit);
    assert_eq!(
        coordinator.outcome(Timing::new().forever()).await.unwrap(),
        Outcome::Commit
    );
}
