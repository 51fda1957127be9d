//! `delete()`: delete a node, optionally at a version, with its children, guaranteed.

use std::future::IntoFuture;
use std::sync::Arc;

use futures::future::{BoxFuture, join_all};

use crate::client::{CuratorFramework, Inner};
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture, op_span};
use crate::paths;
use crate::wire::WireSession;

/// Options of `delete()`.
///
/// **Guaranteed** deletes keep going after the caller has given up: when the delete fails with
/// a connection error (after the retry policy), or its future is dropped before it finished, the
/// client retries it in the background, with the same options (version, children), across
/// reconnects, until the node is gone (or the client closes). The caller still gets the error.
/// [`Metrics`](crate::metrics::Metrics) counts background deletes that are pending, that
/// completed, and that were abandoned (a non-retryable error such as a changed version, or the
/// client closed first: the node may still be there); an abandoned one is also reported to the
/// [unhandled-error listeners](crate::CuratorFramework::unhandled_error_listenable).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// client.delete().guaranteed().deleting_children_if_needed().for_path("/jobs").await?;
/// client.delete().quietly().for_path("/maybe-there").await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct DeleteBuilder {
    client: CuratorFramework,
    version: Option<i32>,
    guaranteed: bool,
    children: bool,
    quietly: bool,
    idempotent: bool,
}

impl DeleteBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            version: None,
            guaranteed: false,
            children: false,
            quietly: false,
            idempotent: false,
        }
    }

    /// Deletes only if the node's data version is `version`; otherwise [`Error::BadVersion`].
    pub fn with_version(mut self, version: i32) -> Self {
        self.version = Some(version);
        self
    }

    /// Keeps deleting in the background after a connection failure (see the type's docs).
    pub fn guaranteed(mut self) -> Self {
        self.guaranteed = true;
        self
    }

    /// Deletes the node's children (recursively) first.
    pub fn deleting_children_if_needed(mut self) -> Self {
        self.children = true;
        self
    }

    /// A missing node is not an error.
    pub fn quietly(mut self) -> Self {
        self.quietly = true;
        self
    }

    /// A missing node on a retry is not an error (the first attempt did apply).
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Deletes `path`.
    pub fn for_path(self, path: &str) -> Delete {
        let path = self.client.target(path).and_then(|fixed| {
            if &*fixed == "/" {
                return Err(Error::invalid_path("/", "the root node cannot be deleted"));
            }
            if let Some(set) = self.client.schema_set() {
                set.check_delete(path)?;
            }
            Ok(fixed)
        });
        Delete {
            path,
            builder: self,
        }
    }
}

/// An awaitable `delete()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct Delete {
    builder: DeleteBuilder,
    path: Result<Arc<str>>,
}

/// What a guaranteed delete hands to the background: the whole request, options included.
#[derive(Debug, Clone)]
pub(crate) struct PendingDelete {
    pub(crate) path: String,
    pub(crate) version: Option<i32>,
    pub(crate) children: bool,
}

/// Hands a guaranteed delete to the background unless disarmed.
struct GuaranteeGuard {
    inner: Arc<Inner>,
    pending: Option<PendingDelete>,
}

impl Drop for GuaranteeGuard {
    fn drop(&mut self) {
        if let Some(pending) = self.pending.take() {
            tracing::debug!(
                path = pending.path,
                "guaranteed delete continues in the background"
            );
            self.inner.guaranteed_delete(pending);
        }
    }
}

impl IntoFuture for Delete {
    type Output = Result<()>;
    type IntoFuture = OpFuture<()>;

    fn into_future(self) -> Self::IntoFuture {
        let Delete { builder, path } = self;
        let fixed = match path {
            Ok(fixed) => fixed,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let DeleteBuilder {
            client,
            version,
            guaranteed,
            children,
            quietly,
            idempotent,
        } = builder;
        // Owned by `finish`: dropped with the operation's future, it hands the delete to the
        // background unless the result says it is done.
        let mut guard = GuaranteeGuard {
            inner: Arc::clone(&client.inner),
            pending: guaranteed.then(|| PendingDelete {
                path: fixed.to_string(),
                version,
                children,
            }),
        };
        let span = op_span!("zk.delete", client, fixed);
        ops::run(
            &client,
            span,
            move |session, attempt| {
                let fixed = Arc::clone(&fixed);
                async move {
                    let result = match session.delete(&fixed, version).await {
                        Err(Error::NotEmpty) if children => {
                            delete_children(&session, fixed.to_string()).await?;
                            session.delete(&fixed, version).await
                        }
                        other => other,
                    };
                    match result {
                        Err(Error::NoNode) if quietly || (idempotent && attempt > 0) => Ok(()),
                        other => other,
                    }
                }
            },
            move |result| {
                if !matches!(&result, Err(error) if error.is_retried()) {
                    guard.pending = None;
                }
                drop(guard);
                result
            },
        )
    }
}

/// Deletes everything under `path` (not `path` itself): each level's deletes are sent together;
/// children that turn out to have children of their own are emptied first.
pub(crate) fn delete_children(session: &WireSession, path: String) -> BoxFuture<'_, Result<()>> {
    Box::pin(async move {
        let children = match session.get_children(&path).await {
            Ok((children, _)) => children,
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(error),
        };
        let child_paths: Vec<String> = children.iter().map(|c| paths::join(&path, c)).collect();
        let results = join_all(child_paths.iter().map(|child| session.delete(child, None))).await;
        for (child, result) in child_paths.into_iter().zip(results) {
            match result {
                Ok(()) | Err(Error::NoNode) => {}
                Err(Error::NotEmpty) => {
                    delete_children(session, child.clone()).await?;
                    match session.delete(&child, None).await {
                        Ok(()) | Err(Error::NoNode) => {}
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    })
}
