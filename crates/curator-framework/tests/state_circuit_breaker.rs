//! `connection_state_circuit_breaker`: what connection-state listeners hear while the
//! connection flaps, against a real server behind a fault proxy.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use curator_framework::listen::ListenerHandle;
use curator_framework::retry::RetryNTimes;
use curator_framework::{ConnectionState, CuratorFramework};
use curator_test::{FaultProxy, TestingServer, Timing};

use ConnectionState::{Connected, Lost, Reconnected, Suspended};

const FLAPS: u64 = 20;

/// Every state a listener of `client` hears, in order.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<ConnectionState>>>);

impl Recorder {
    fn attach(&self, client: &CuratorFramework) -> ListenerHandle {
        let seen = Arc::clone(&self.0);
        client
            .connection_state_listenable()
            .add_listener(move |state| seen.lock().unwrap().push(state))
    }

    fn seen(&self) -> Vec<ConnectionState> {
        self.0.lock().unwrap().clone()
    }
}

/// Cuts the client's connection `FLAPS` times, each time waiting (on the client's own count of
/// published transitions) until it is back, with `pace` between flaps.
async fn flap(client: &CuratorFramework, proxy: &FaultProxy, pace: Duration) {
    for _ in 0..FLAPS {
        let before = client.metrics().state_transitions;
        proxy.drop_connections();
        curator_test::eventually("Suspended then Reconnected", || async {
            client.metrics().state_transitions >= before + 2 && client.is_connected()
        })
        .await;
        // Pacing only (not an assertion): spreads the flaps over ~10 s.
        tokio::time::sleep(pace).await;
    }
    assert_eq!(client.metrics().state_transitions, 1 + 2 * FLAPS);
}

/// A client through `proxy`, `breaker` on, with a recorder attached before the start.
async fn client(
    proxy: &FaultProxy,
    breaker: Option<RetryNTimes>,
) -> (CuratorFramework, Recorder, ListenerHandle) {
    let mut builder = support::builder(&proxy.connect_string());
    if let Some(policy) = breaker {
        builder = builder.connection_state_circuit_breaker(policy);
    }
    let client = builder.build().unwrap();
    let recorder = Recorder::default();
    let handle = recorder.attach(&client);
    client.start().await.unwrap();
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    curator_test::eventually("Connected heard", || async {
        recorder.seen() == [Connected]
    })
    .await;
    (client, recorder, handle)
}

#[tokio::test]
async fn without_the_breaker_every_flap_is_heard() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let (client, recorder, _handle) = client(&proxy, None).await;

    flap(&client, &proxy, Duration::from_millis(500)).await;
    curator_test::eventually("every transition heard", || async {
        recorder.seen().len() as u64 == 1 + 2 * FLAPS
    })
    .await;
    let mut expected = vec![Connected];
    for _ in 0..FLAPS {
        expected.extend([Suspended, Reconnected]);
    }
    assert_eq!(recorder.seen(), expected);
}

#[tokio::test]
async fn with_the_breaker_flapping_is_absorbed_and_the_last_state_is_the_real_one() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let period = Timing::new().scale(Duration::from_secs(2));
    let (client, recorder, _handle) = client(&proxy, Some(RetryNTimes::new(3, period))).await;
    let mut stream = client.connection_state_stream();

    let started = tokio::time::Instant::now();
    flap(&client, &proxy, Duration::from_millis(500)).await;
    // Once every circuit has closed, the listener agrees with the client.
    support::eventually_within("the listener catches up", 5 * period, || async {
        recorder.seen().last() == client.connection_state().as_ref()
    })
    .await;
    let elapsed = started.elapsed();
    let seen = recorder.seen();
    eprintln!(
        "{} transitions heard of {}: {seen:?}",
        seen.len(),
        1 + 2 * FLAPS
    );

    // Circuits do not overlap and each lasts at least `period`; each passes at most its opening
    // state and its closing state.
    let circuits = (elapsed.as_secs_f64() / period.as_secs_f64()).floor() as usize + 1;
    assert!(
        seen.len() <= 1 + 2 * circuits,
        "{} transitions heard in {elapsed:?} with a {period:?} circuit: {seen:?}",
        seen.len()
    );
    assert!(
        seen.len() < 1 + 2 * FLAPS as usize,
        "nothing absorbed: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&Reconnected));
    assert!(
        seen.windows(2).all(|pair| pair[0] != pair[1]),
        "a state heard twice in a row: {seen:?}"
    );
    assert!(client.is_connected());

    // A stream has a breaker of its own and hears the same.
    let mut from_stream = Vec::new();
    while let Ok(Some(state)) =
        tokio::time::timeout(Duration::ZERO, futures::StreamExt::next(&mut stream)).await
    {
        from_stream.push(state);
    }
    assert_eq!(from_stream, seen[1..]);
}

#[tokio::test]
async fn a_session_lost_while_the_circuit_is_open_is_heard_at_once_and_then_its_successor() {
    let server = TestingServer::start().await.unwrap();
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    // Long enough for the faults below to happen while the first circuit is open.
    let period = Timing::new().scale(Duration::from_secs(6));
    let (client, recorder, _handle) = client(&proxy, Some(RetryNTimes::new(3, period))).await;
    let opened = tokio::time::Instant::now();

    // Open the circuit with a flap.
    let before = client.metrics().state_transitions;
    proxy.drop_connections();
    curator_test::eventually("back", || async {
        client.metrics().state_transitions >= before + 2 && client.is_connected()
    })
    .await;
    // Expire the session: Suspended (absorbed), Lost (heard at once), Reconnected (absorbed).
    let first = client.session_id();
    client.inject_session_expiration().await.unwrap();
    curator_test::eventually("Lost heard", || async {
        recorder.seen() == [Connected, Suspended, Lost]
    })
    .await;
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    // Expire the new session too: its loss is heard as Reconnected then Lost.
    let second = client.session_id();
    assert_ne!(second, first);
    client.inject_session_expiration().await.unwrap();
    curator_test::eventually("the second Lost heard", || async {
        recorder.seen().len() >= 5
    })
    .await;
    assert!(
        opened.elapsed() < period,
        "the faults took longer than the circuit ({period:?}); the test proves nothing"
    );
    assert_eq!(
        recorder.seen(),
        [Connected, Suspended, Lost, Reconnected, Lost]
    );
    client
        .block_until_connected(Timing::new().wait())
        .await
        .unwrap();
    assert_ne!(client.session_id(), second);

    // The circuit closes with the real state.
    support::eventually_within("the circuit closes", 3 * period, || async {
        recorder.seen().len() == 6
    })
    .await;
    assert_eq!(
        recorder.seen(),
        [Connected, Suspended, Lost, Reconnected, Lost, Reconnected]
    );
    assert_eq!(client.connection_state(), Some(Reconnected));
}
