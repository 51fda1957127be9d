//! A tour of the test harness against real ZooKeeper processes: a server restart that a session
//! survives, a network partition and its healing, a session expired on demand, and an ensemble
//! that elects a new leader when its leader dies. `just fault-tour` runs it.
//!
//! ```text
//! cargo run -p curator-test --example fault_tour
//! ```

use std::time::{Duration, Instant};

use curator_test::{
    FaultProxy, TestingCluster, TestingServer, Timing, expire_session, four_letter_word,
    unique_root,
};
use zookeeper_client as zk;

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
    let client = zk::Client::connector()
        .with_session_timeout(timing.scale(Duration::from_secs(8)))
        .connect(&proxy.connect_string())
        .await?;
    let root = unique_root("demo");
    client
        .mkdir(
            &root,
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
        )
        .await?;
    let node = format!("{root}/worker");
    client
        .create(
            &node,
            b"alive",
            &zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all()),
        )
        .await?;
    let session = client.session_id();
    proved(&format!("session {session} owns {node}"));

    step("restart the server (same port, same data)");
    server.restart().await?;
    let (data, _) = retry(|| client.get_data(&node)).await?;
    proved(&format!(
        "after the restart the session is still {} and {node} still holds {:?}",
        client.session_id(),
        String::from_utf8_lossy(&data)
    ));

    step("partition the client: the proxy black-holes its link");
    let mut states = client.state_watcher();
    proxy.pause();
    let state = wait_for_state(&mut states, zk::SessionState::Disconnected, timing.wait()).await?;
    proved(&format!(
        "the client noticed the silence by itself: {state}"
    ));
    proxy.resume();
    let state = wait_for_state(&mut states, zk::SessionState::SyncConnected, timing.wait()).await?;
    proved(&format!(
        "healed: {state}, session still {}",
        client.session_id()
    ));

    step("expire the session on demand");
    let observer = zk::Client::connector()
        .connect(&server.connect_string())
        .await?;
    let credentials = proxy.sessions().pop().ok_or("the proxy saw no session")?;
    let outcome = expire_session(&server.connect_string(), &credentials, timing.wait()).await?;
    let state = wait_for_state(&mut states, zk::SessionState::Expired, timing.wait()).await?;
    let gone = observer.check_stat(&node).await?.is_none();
    proved(&format!(
        "{outcome:?}: the client sees {state}, and the ephemeral node is gone: {gone}"
    ));

    step("start a 3-member ensemble and kill its leader");
    let mut cluster = TestingCluster::start(3).await?;
    let leader = cluster.await_leader().await?;
    cluster.kill(leader)?;
    let next = cluster.await_leader().await?;
    let member = zk::Client::connector()
        .connect(&cluster.member_connect_string(next))
        .await?;
    let path = retry(|| {
        member.create(
            "/after-failover",
            b"",
            &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()),
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

async fn wait_for_state(
    states: &mut zk::StateWatcher,
    wanted: zk::SessionState,
    deadline: Duration,
) -> Result<zk::SessionState> {
    let wait = async {
        let mut state = states.state();
        while state != wanted {
            state = states.changed().await;
        }
        state
    };
    Ok(tokio::time::timeout(deadline, wait)
        .await
        .map_err(|_| format!("no {wanted} within {deadline:?}"))?)
}

async fn retry<T, F, Fut>(mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, zk::Error>>,
{
    let deadline = Instant::now() + Timing::new().forever();
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(zk::Error::ConnectionLoss | zk::Error::Timeout) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => return Err(error.into()),
        }
    }
}
