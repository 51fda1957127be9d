//! The wait every barrier does: for a watch to fire, until an optional deadline.

use curator_framework::watcher::Watcher;
use tokio::time::Instant;

/// Waits for `watcher`'s event; `false` when `deadline` came first.
pub(crate) async fn changed_before(watcher: Watcher, deadline: Option<Instant>) -> bool {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, watcher.changed())
            .await
            .is_ok(),
        None => {
            watcher.changed().await;
            true
        }
    }
}
