//! A started, connected client from the common flags.

use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_framework::retry::ExponentialBackoffRetry;

use crate::args::Common;
use crate::duration::human;
use crate::exit::{CliError, CliResult, codes};

/// Builds and starts a client for `connect`, and waits for its first session.
///
/// # Errors
/// Exit code 2 for bad settings, 3 when no session comes within the connection timeout.
pub(crate) async fn connect(common: &Common, connect: &str) -> CliResult<CuratorFramework> {
    let mut builder = CuratorFramework::builder()
        .connect_string(connect)
        .session_timeout(common.session_timeout)
        .connection_timeout(common.connection_timeout)
        .retry_policy(ExponentialBackoffRetry::new(Duration::from_millis(100), 3));
    if let Some(namespace) = &common.namespace {
        builder = builder.namespace(namespace.as_str());
    }
    let client = builder
        .build()
        .map_err(|error| CliError::usage(error.to_string()))?;
    client
        .start()
        .await
        .map_err(|error| CliError::zk("starting the client", error))?;
    if client
        .block_until_connected(common.connection_timeout)
        .await
        .is_err()
    {
        client.close().await;
        return Err(CliError::new(
            codes::CONNECTION,
            format!(
                "cannot connect to ZooKeeper at {connect} within {}",
                human(common.connection_timeout)
            ),
        ));
    }
    Ok(client)
}
