#![doc = include_str!("../README.md")]

pub mod contract;
pub mod writers;

use std::time::Duration;

use curator_framework::retry::{RetryNTimes, RetryUntilElapsed};
use curator_framework::{CuratorFramework, Error};
use curator_test::Timing;

pub use curator_test::eventually;

/// A started, connected client with a 15 s (scaled) session and a retry policy that covers a
/// server restart on a loaded machine (retries for [`Timing::wait`]).
///
/// # Panics
/// When the client cannot connect within [`Timing::wait`].
pub async fn client(connect: &str) -> CuratorFramework {
    client_with(connect, Timing::new().scale(Duration::from_secs(15))).await
}

/// [`client`] with another session timeout.
///
/// # Panics
/// When the client cannot connect within [`Timing::wait`].
pub async fn client_with(connect: &str, session_timeout: Duration) -> CuratorFramework {
    started(builder(connect, session_timeout)).await
}

/// [`client_with`] for a connect string of fault proxies in front of ensemble members: ensemble
/// tracking is off, so every connection (new sessions too) goes through the proxies instead of
/// the members' own addresses.
///
/// # Panics
/// When the client cannot connect within [`Timing::wait`].
pub async fn client_through_proxies(connect: &str, session_timeout: Duration) -> CuratorFramework {
    started(builder(connect, session_timeout).ensemble_tracking(false)).await
}

/// The builder behind [`client_with`], for a test that needs one more option; start it with
/// [`started`].
///
/// ```no_run
/// # async fn demo() {
/// use std::time::Duration;
/// let builder = curator_testkit::builder("127.0.0.1:2181", Duration::from_secs(4));
/// let client = curator_testkit::started(builder.ensemble_tracking(false)).await;
/// # }
/// ```
pub fn builder(
    connect: &str,
    session_timeout: Duration,
) -> curator_framework::CuratorFrameworkBuilder {
    CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(session_timeout)
        .connection_timeout(Timing::new().connection_timeout())
        .retry_policy(RetryUntilElapsed::new(
            Timing::new().wait(),
            Duration::from_millis(100),
        ))
}

/// Builds, starts and connects a client from `builder`.
///
/// # Panics
/// When the settings are invalid or the client cannot connect within [`Timing::wait`].
pub async fn started(builder: curator_framework::CuratorFrameworkBuilder) -> CuratorFramework {
    let client = builder.build().expect("valid test client settings");
    client.start().await.expect("the client starts");
    client
        .block_until_connected(Timing::new().wait())
        .await
        .expect("the client connects");
    client
}

/// A retry policy that practically never gives up: for contention tests that count
/// successes, not give-ups.
pub fn patient() -> RetryNTimes {
    RetryNTimes::new(10_000, Duration::from_millis(1))
}

/// The node's bytes, read through `client`.
///
/// # Panics
/// When the read fails.
pub async fn raw(client: &CuratorFramework, path: &str) -> Vec<u8> {
    client
        .get_data()
        .for_path(path)
        .await
        .expect("the node can be read")
        .0
}

/// The names of `path`'s children, sorted; none when `path` does not exist.
///
/// # Panics
/// When the listing fails otherwise.
pub async fn children(client: &CuratorFramework, path: &str) -> Vec<String> {
    match client.get_children().for_path(path).await {
        Ok((mut children, _)) => {
            children.sort();
            children
        }
        Err(Error::NoNode) => Vec::new(),
        Err(error) => panic!("listing {path}: {error}"),
    }
}

/// Expires `client`'s session at the server while the client is cut off: pauses `proxy` (the
/// client's only way to the server), then closes the session through `connect_string` (the
/// server, directly). The proxy stays paused, so the test can change things the client must
/// not see; `proxy.resume()` lets the client learn of the expiry.
///
/// ```no_run
/// # async fn demo(server: curator_test::TestingServer) {
/// let proxy = curator_test::FaultProxy::start(&server.connect_string()).await.unwrap();
/// let client = curator_testkit::client(&proxy.connect_string()).await;
/// curator_testkit::expire_behind(&client, &proxy, &server.connect_string()).await;
/// // ... writes the client cannot see ...
/// proxy.resume();
/// # }
/// ```
///
/// # Panics
/// When the client has no session, the proxy never saw it, or the server did not expire it.
pub async fn expire_behind(
    client: &CuratorFramework,
    proxy: &curator_test::FaultProxy,
    connect_string: &str,
) {
    let session = client.session_id().expect("the client has a session");
    let credentials = proxy
        .sessions()
        .into_iter()
        .find(|seen| seen.id == session)
        .expect("the proxy saw the client's session");
    proxy.pause();
    let expiry = curator_test::expire_session(connect_string, &credentials, Timing::new().wait())
        .await
        .expect("the session can be expired");
    assert_eq!(
        expiry,
        curator_test::Expiry::Expired,
        "the session was alive"
    );
}

/// Creates a fresh [`curator_test::unique_root`]`(name)` (and its parents) and returns its path.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// let root = curator_testkit::create_root(&client, "my-test").await;
/// # }
/// ```
///
/// # Panics
/// When the node cannot be created.
pub async fn create_root(client: &CuratorFramework, name: &str) -> String {
    let root = curator_test::unique_root(name);
    client
        .create()
        .creating_parents_if_needed()
        .for_path(&root, b"")
        .await
        .expect("create the test's root");
    root
}

/// Creates `path` (and its parents) with empty data.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// curator_testkit::create(&client, "/test/a/b").await;
/// # }
/// ```
///
/// # Panics
/// When the node cannot be created.
pub async fn create(client: &CuratorFramework, path: &str) {
    client
        .create()
        .creating_parents_if_needed()
        .for_path(path, b"")
        .await
        .unwrap_or_else(|error| panic!("create {path}: {error}"));
}
