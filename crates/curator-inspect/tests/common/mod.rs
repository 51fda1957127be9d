//! What the inspector's tests share: clients with an identity, and waiting for a report.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_inspect::{Report, inspect};
use curator_test::{TestingServer, eventually};
use curator_testkit as testkit;

/// A started client whose identity's name is `name`.
pub(crate) async fn client(server: &TestingServer, name: &str) -> CuratorFramework {
    testkit::started(
        testkit::builder(&server.connect_string(), Duration::from_secs(10)).identity(name),
    )
    .await
}

/// The report of `path` once `done` accepts it (re-inspected until then, within the test
/// deadline).
pub(crate) async fn report_when(
    client: &CuratorFramework,
    path: &str,
    what: &str,
    done: impl Fn(&Report) -> bool,
) -> Report {
    eventually(what, || async {
        done(&inspect(client, path).await.unwrap())
    })
    .await;
    inspect(client, path).await.unwrap()
}
