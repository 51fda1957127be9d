//! A tour of the test harness against real ZooKeeper processes: a server restart that a session
//! survives, a network partition and its healing, a session expired on demand, and an ensemble
//! that elects a new leader when its leader dies. `just fault-tour` runs it.
//!
//! ```text
//! cargo run -p curator-test --example fault_tour
//! ```

use std::time::{Duration, Instant};

use curator_session::proto::{CreateMode, ErrorCode};
use curator_session::{Session, SessionConfig, SessionState, StateChanges, open_acl};
use curator_test::{
    FaultProxy, TestingCluster, TestingServer, Timing, expire_session, four_letter_word,
    unique_root,
};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

#[tokio::main]
async fn main() -> Result {
    let started = Instant::now();
    let timing = Timing::new();

    step("start a real ZooKeeper server");
    let mut server = TestingServer::start_dedicated().await?;
    let srvr = four_letter_word(&server.connect_string(), "srvr", timing.wait()).await?;
    let version = srvr.lines().next().unwrap_or_default().to_owned();
    proved(&format!("{} answers: {version}", server.connect_string()));

    step("connect a session through a fault proxy and create an ephemeral node");
    let proxy = FaultProxy::start(&server.connect_string()).await?;
    let client = Session::connect(
        SessionConfig::new(&proxy.connect_string())?
            .session_timeout(timing.scale(Duration::from_secs(8))),
    )
    .await?;
    let root = unique_root("demo");
    mkdirs(&client, &root).await?;
    let node = format!("{root}/worker");
    client
        .create(&node, b"alive", open_acl(), CreateMode::Ephemeral, None)
        .await?;
    let session = client.session_id();
    proved(&format!("session {session:#x} owns {node}"));

    step("restart the server (same port, same data)");
    server.restart().await?;
    let (data, _) = retry(|| client.get_data(&node)).await?;
    proved(&format!(
        "after the restart the session is still {:#x} and {node} still holds {:?}",
        client.session_id(),
        String::from_utf8_lossy(&data)
    ));

    step("partition the client: the proxy black-holes its link");
    let mut states = client.state_changes();
    proxy.pause();
    let state = wait_for_state(&mut states, SessionState::Disconnected, timing.wait()).await?;
    proved(&format!(
        "the client noticed the silence by itself: {state:?}"
    ));
    proxy.resume();
    let state = wait_for_state(&mut states, SessionState::Connected, timing.wait()).await?;
    proved(&format!(
        "healed: {state:?}, session still {:#x}",
        client.session_id()
    ));

    step("expire the session on demand");
    let observer = Session::connect(SessionConfig::new(&server.connect_string())?).await?;
    let credentials = proxy.sessions().pop().ok_or("the proxy saw no session")?;
    let outcome = expire_session(&server.connect_string(), &credentials, timing.wait()).await?;
    let state = wait_for_state(&mut states, SessionState::Expired, timing.wait()).await?;
    let gone = observer.exists(&node).await?.is_none();
    proved(&format!(
        "{outcome:?}: the client sees {state:?}, and the ephemeral node is gone: {gone}"
    ));

    step("start a 3-member ensemble and kill its leader");
    let mut cluster = TestingCluster::start(3).await?;
    let leader = cluster.await_leader().await?;
    cluster.kill(leader)?;
    let next = cluster.await_leader().await?;
    let member =
        Session::connect(SessionConfig::new(&cluster.member_connect_string(next))?).await?;
    let path = retry(|| {
        member.create(
            "/after-failover",
            b"",
            open_acl(),
            CreateMode::Persistent,
            None,
        )
    })
    .await
    .map(|_| "/after-failover")?;
    proved(&format!(
        "member {leader} led and died; member {next} leads now and accepted {path}"
    ));

    println!(
        "\nall steps done in {:.1} s; every server process is stopped on exit",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn step(what: &str) {
    println!("\n== {what}");
}

fn proved(what: &str) {
    println!("   ok: {what}");
}

/// Waits for the next transitions of `states` (subscribed before the fault) to reach `wanted`.
async fn wait_for_state(
    states: &mut StateChanges,
    wanted: SessionState,
    deadline: Duration,
) -> Result<SessionState> {
    let wait = async {
        while let Some(state) = states.next().await {
            if state == wanted {
                return Ok(state);
            }
        }
        Err(format!("the session ended before {wanted:?}"))
    };
    Ok(tokio::time::timeout(deadline, wait)
        .await
        .map_err(|_| format!("no {wanted:?} within {deadline:?}"))??)
}

/// Creates `path` and its missing parents.
async fn mkdirs(session: &Session, path: &str) -> Result {
    let mut at = String::new();
    for part in path.split('/').filter(|part| !part.is_empty()) {
        at = format!("{at}/{part}");
        match session
            .create(&at, b"", open_acl(), CreateMode::Persistent, None)
            .await
        {
            Ok(_) | Err(curator_session::Error::Server(ErrorCode::NodeExists)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Runs `op` until it succeeds, retrying (every 100 ms) while the session has no connection.
async fn retry<T, F, Fut>(mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = curator_session::Result<T>>,
{
    let deadline = Instant::now() + Timing::new().forever();
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(error) if error.is_connection_error() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}
