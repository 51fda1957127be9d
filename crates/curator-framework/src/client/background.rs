//! Background deletes: guaranteed deletes and the cleanup of abandoned protected creates, each
//! retried across connection loss until done, counted in the client's metrics.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::client::Inner;
use crate::error::{Error, Result};
use crate::metrics::Counters;
use crate::ops::delete::PendingDelete;
use crate::paths;
use crate::recipe::Backoff;
use crate::wire::WireSession;

impl Inner {
    /// Deletes `pending.path` (with its options) in the background until it is gone.
    pub(crate) fn guaranteed_delete(self: &Arc<Self>, pending: PendingDelete) {
        let what = format!("guaranteed delete of {}", pending.path);
        self.until_done("guaranteed delete", what, move |session| {
            let pending = pending.clone();
            async move { delete(&session, &pending).await }
        });
    }

    /// Finds and deletes, in the background, any node under `parent` whose name starts with
    /// `prefix`: the leftovers of a protected create that may have succeeded unseen.
    pub(crate) fn delete_protected_in_background(self: &Arc<Self>, parent: String, prefix: String) {
        let what = format!("{parent}/{prefix}*");
        self.until_done("protected create cleanup", what, move |session| {
            let (parent, prefix) = (parent.clone(), prefix.clone());
            async move { delete_protected(&session, &parent, &prefix).await }
        });
    }

    /// Runs `work` on a connected session until it succeeds, retrying retryable errors with the
    /// standard backoff; gives up on other errors (reported as unhandled) or at close. Counted as
    /// pending, then completed or abandoned.
    fn until_done<W, Fut>(self: &Arc<Self>, context: &'static str, what: String, work: W)
    where
        W: Fn(Arc<WireSession>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<()>> + Send,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(what, "no Tokio runtime for background work; abandoned");
            Counters::bump(&self.counters.abandoned_guaranteed_deletes);
            return;
        };
        let inner = Arc::clone(self);
        Counters::bump(&inner.counters.pending_guaranteed_deletes);
        self.tasks.spawn_on(
            async move {
                let cancel = inner.cancel.clone();
                let done = tokio::select! {
                    () = cancel.cancelled() => false,
                    done = inner.retry_until_done(context, &what, work) => done,
                };
                let counters = &inner.counters;
                Counters::bump(if done {
                    &counters.completed_guaranteed_deletes
                } else {
                    &counters.abandoned_guaranteed_deletes
                });
                counters
                    .pending_guaranteed_deletes
                    .fetch_sub(1, Ordering::Relaxed);
            },
            &runtime,
        );
    }

    async fn retry_until_done<W, Fut>(&self, context: &str, what: &str, work: W) -> bool
    where
        W: Fn(Arc<WireSession>) -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        let mut backoff = Backoff::standard();
        loop {
            let Ok(session) = self.slot.wait_connected(None).await else {
                return false;
            };
            match work(session).await {
                Ok(()) => {
                    tracing::debug!(what, "{context} done");
                    return true;
                }
                Err(error) if error.is_retried() => {
                    tracing::debug!(what, %error, "{context} will retry");
                }
                Err(error) => {
                    self.report_error(context, format!("{what}: {error}"));
                    return false;
                }
            }
            backoff.wait().await;
        }
    }
}

/// One try of a guaranteed delete; a missing node counts as deleted.
async fn delete(session: &WireSession, pending: &PendingDelete) -> Result<()> {
    let PendingDelete {
        path,
        version,
        children,
        check,
    } = pending;
    let result = match session.delete(path, *version).await {
        Err(Error::NotEmpty) if *children => {
            crate::ops::delete::delete_children(session, path.clone(), check.as_ref()).await?;
            session.delete(path, *version).await
        }
        other => other,
    };
    match result {
        Ok(()) | Err(Error::NoNode) => Ok(()),
        Err(error) => Err(error),
    }
}

/// One try of the cleanup of a protected create's leftovers.
async fn delete_protected(session: &WireSession, parent: &str, prefix: &str) -> Result<()> {
    let children = match session.get_children(parent).await {
        Ok((children, _)) => children,
        Err(Error::NoNode) => return Ok(()),
        Err(error) => return Err(error),
    };
    for child in children.iter().filter(|c| c.starts_with(prefix)) {
        match session.delete(&paths::join(parent, child), None).await {
            Ok(()) | Err(Error::NoNode) => {
                tracing::debug!(parent, child, "deleted a protected leftover");
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
