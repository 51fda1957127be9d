//! `FencingGate` against a real ZooKeeper server: order of admissions, races, partitions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use curator_framework::{CuratorFramework, Error};
use curator_locks::{Admission, FencingGate, InterProcessMutex};
use curator_test::{FaultProxy, TestingServer, Timing, unique_root};
use curator_testkit as testkit;

/// The token the gate's node holds, as text.
async fn stored(client: &CuratorFramework, path: &str) -> String {
    String::from_utf8(testkit::raw(client, path).await).unwrap()
}

#[tokio::test]
async fn admits_tokens_in_non_decreasing_order_only() {
    let server = TestingServer::start().await.unwrap();
    let client = testkit::client(&server.connect_string()).await;
    let path = format!("{}/gate", unique_root("gate-order"));
    let gate = FencingGate::new(client.clone(), &path).unwrap();
    assert_eq!(gate.highest().await.unwrap(), None);

    assert_eq!(gate.admit(5).await.unwrap(), Admission::Admitted);
    assert_eq!(stored(&client, &path).await, "5");
    // The same holder again, then a newer one.
    assert_eq!(gate.admit(5).await.unwrap(), Admission::Admitted);
    assert_eq!(gate.admit(9).await.unwrap(), Admission::Admitted);
    // An older token after a newer one: refused, and the node keeps the newer one.
    let version = client.get_data().for_path(&path).await.unwrap().1.version;
    assert_eq!(
        gate.admit(7).await.unwrap(),
        Admission::Refused { highest: 9 }
    );
    let (data, stat) = client.get_data().for_path(&path).await.unwrap();
    assert_eq!(data, b"9");
    assert_eq!(stat.version, version, "a refusal must not write");
    assert_eq!(gate.highest().await.unwrap(), Some(9));

    // Real tokens: a lock's fencing tokens pass in acquisition order; a stale one is refused.
    let mutex = InterProcessMutex::builder(client.clone(), &unique_root("gate-lock"))
        .build()
        .unwrap();
    let first = mutex.acquire().await.unwrap();
    let stale = first.fencing_token();
    first.release().await.unwrap();
    let second = mutex.acquire().await.unwrap();
    assert!(
        gate.admit(second.fencing_token())
            .await
            .unwrap()
            .is_admitted()
    );
    assert_eq!(
        gate.admit(stale).await.unwrap(),
        Admission::Refused {
            highest: second.fencing_token()
        }
    );
    second.release().await.unwrap();

    // Data that is not a token is a typed error, never a guess.
    client.set_data().for_path(&path, b"junk").await.unwrap();
    assert!(matches!(gate.admit(10).await, Err(Error::Decode { .. })));
    // Empty data (a node made beforehand) means nothing was admitted yet.
    client.set_data().for_path(&path, b"").await.unwrap();
    assert_eq!(gate.admit(1).await.unwrap(), Admission::Admitted);
    client.close().await.unwrap();
}

/// Two sessions admit interleaved tokens at once, many rounds; a third watches the node. Every
/// version of the node holds a token at least as high as the version before, every refusal names
/// a higher token, and the node ends with the highest admitted token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_sessions_never_store_an_older_token() {
    let server = TestingServer::start().await.unwrap();
    let path = format!("{}/gate", unique_root("gate-race"));
    let observer = testkit::client(&server.connect_string()).await;
    let done = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for parity in 0..2i64 {
        let client = testkit::client(&server.connect_string()).await;
        let path = path.clone();
        workers.push(tokio::spawn(async move {
            let gate = FencingGate::new(client.clone(), &path).unwrap();
            let mut admitted = Vec::new();
            // The two sessions race on neighbouring tokens: 2k and 2k+1, and, every third round,
            // an older one (2k-3) that must lose to what passed before.
            for round in 0..60i64 {
                let mut tokens = vec![2 * round + parity];
                if round % 3 == 2 {
                    tokens.push(2 * round - 3);
                }
                for token in tokens {
                    match gate.admit(token).await.unwrap() {
                        Admission::Admitted => admitted.push(token),
                        Admission::Refused { highest } => {
                            assert!(highest > token, "refused {token} for {highest}")
                        }
                    }
                }
            }
            client.close().await.unwrap();
            admitted
        }));
    }
    let watch = {
        let (observer, path, done) = (observer.clone(), path.clone(), Arc::clone(&done));
        tokio::spawn(async move {
            let mut seen: Vec<(i32, i64)> = Vec::new();
            while !done.load(Ordering::SeqCst) {
                if let Ok((data, stat)) = observer.get_data().for_path(&path).await {
                    let token = String::from_utf8(data).unwrap().parse::<i64>().unwrap();
                    if seen
                        .last()
                        .is_none_or(|&(version, _)| version != stat.version)
                    {
                        seen.push((stat.version, token));
                    }
                }
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let seen = watch.await.unwrap();
    assert!(
        seen.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "the gate stored an older token after a newer one: {seen:?}"
    );
    let highest = *all.iter().max().unwrap();
    assert_eq!(stored(&observer, &path).await, highest.to_string());
    // The newest token of all (2*59+1) cannot have been refused.
    assert_eq!(highest, 119);
    observer.close().await.unwrap();
}

/// One session is cut off (its link paused) while it asks to admit a token; meanwhile another
/// admits a newer one. When the link comes back the first is refused, and stays refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_is_refused_after_a_newer_token() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let path = format!("{}/gate", unique_root("gate-partition"));
    let cut = testkit::client_with(&proxy.connect_string(), Timing::new().session_timeout()).await;
    let other = testkit::client(&server.connect_string()).await;
    let gate_cut = FencingGate::new(cut.clone(), &path).unwrap();
    let gate_other = FencingGate::new(other.clone(), &path).unwrap();

    assert!(gate_cut.admit(10).await.unwrap().is_admitted());
    proxy.pause();
    let stale = tokio::spawn(async move { gate_cut.admit(15).await });
    assert!(gate_other.admit(20).await.unwrap().is_admitted());
    proxy.resume();
    match stale.await.unwrap() {
        Ok(outcome) => assert_eq!(outcome, Admission::Refused { highest: 20 }),
        // The client may give up on the paused link; it must not have admitted anything then.
        Err(error) => assert!(
            error.is_retryable() || error.is_session_terminal(),
            "{error}"
        ),
    }
    let gate_cut = FencingGate::new(cut.clone(), &path).unwrap();
    let after = tokio::time::timeout(Timing::new().wait(), async {
        loop {
            match gate_cut.admit(12).await {
                Ok(outcome) => return outcome,
                Err(error) if error.is_retryable() => continue,
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect("the cut-off client answers once its link is back");
    assert_eq!(after, Admission::Refused { highest: 20 });
    assert_eq!(stored(&other, &path).await, "20");
    cut.close().await.unwrap();
    other.close().await.unwrap();
}
