//! `delete()`: delete a node, optionally at a version, with its children, guaranteed.

use std::future::IntoFuture;
use std::sync::Arc;

use futures::future::{BoxFuture, join_all};

use crate::client::{CuratorFramework, Inner};
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture, op_span};
use crate::paths;
use crate::schema::SchemaSet;
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

    /// Deletes the node's children (recursively) first. With a schema set, the whole subtree is
    /// listed and every node in it checked as a delete before the first child is deleted; one
    /// that cannot be deleted fails the call with [`Error::SchemaViolation`] and nothing is
    /// deleted. Children added after the listing are listed and checked in turn.
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
            if let Some(set) = self.client.schemas() {
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
    pub(crate) check: Option<ChildCheck>,
}

/// The schema set the children a delete removes are checked against, with the namespace to
/// take off their paths (schemas see the caller's paths).
#[derive(Debug, Clone)]
pub(crate) struct ChildCheck {
    set: Arc<SchemaSet>,
    namespace: Option<Arc<str>>,
}

impl ChildCheck {
    /// The check of `client`'s deletes, if it has a schema set.
    pub(crate) fn of(client: &CuratorFramework) -> Option<ChildCheck> {
        let set = client.inner.settings.schema_set.clone()?;
        Some(ChildCheck {
            set,
            namespace: client.namespace.clone(),
        })
    }

    fn check(&self, path: &str) -> Result<()> {
        self.set
            .check_delete(&paths::strip_namespace(self.namespace.as_deref(), path))
    }
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
        let check = if children {
            ChildCheck::of(&client)
        } else {
            None
        };
        let mut guard = GuaranteeGuard {
            inner: Arc::clone(&client.inner),
            pending: guaranteed.then(|| PendingDelete {
                path: fixed.to_string(),
                version,
                children,
                check: check.clone(),
            }),
        };
        let span = op_span!("zk.delete", client, fixed);
        ops::run(
            &client,
            span,
            move |session, attempt| {
                let (fixed, check) = (Arc::clone(&fixed), check.clone());
                async move {
                    let result = match session.delete(&fixed, version).await {
                        Err(Error::NotEmpty) if children => {
                            delete_children(&session, fixed.to_string(), check.as_ref()).await?;
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

/// Deletes everything under `path` (not `path` itself), each node checked by `check` first when
/// there is one (see [`delete_checked_children`]).
pub(crate) async fn delete_children(
    session: &WireSession,
    path: String,
    check: Option<&ChildCheck>,
) -> Result<()> {
    match check {
        Some(check) => delete_checked_children(session, &path, check).await,
        None => delete_unchecked_children(session, path).await,
    }
}

/// Lists the whole subtree under `path`, checks every node in it, and only then deletes it,
/// deepest level first, each level's deletes sent together. A node that gained a child after
/// the listing makes the whole round start again, so no node is deleted unchecked.
async fn delete_checked_children(
    session: &WireSession,
    path: &str,
    check: &ChildCheck,
) -> Result<()> {
    loop {
        let levels = list_subtree(session, path).await?;
        for node in levels.iter().flatten() {
            check.check(node)?;
        }
        let mut grew = false;
        for level in levels.iter().rev() {
            let results = join_all(level.iter().map(|node| session.delete(node, None))).await;
            for result in results {
                match result {
                    Ok(()) | Err(Error::NoNode) => {}
                    Err(Error::NotEmpty) => grew = true,
                    Err(error) => return Err(error),
                }
            }
            if grew {
                break;
            }
        }
        if !grew {
            return Ok(());
        }
    }
}

/// The nodes under `path` (not `path` itself), level by level, top down; each level's reads
/// are sent together. Nodes that vanish while listed are left out.
async fn list_subtree(session: &WireSession, path: &str) -> Result<Vec<Vec<String>>> {
    let mut levels: Vec<Vec<String>> = Vec::new();
    let mut parents = vec![path.to_owned()];
    while !parents.is_empty() {
        let listed = join_all(parents.iter().map(|parent| session.get_children(parent))).await;
        let mut level = Vec::new();
        for (parent, result) in parents.iter().zip(listed) {
            match result {
                Ok((children, _)) => {
                    level.extend(children.iter().map(|child| paths::join(parent, child)));
                }
                Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        if !level.is_empty() {
            levels.push(level.clone());
        }
        parents = level;
    }
    Ok(levels)
}

/// Deletes everything under `path` (not `path` itself): each level's deletes are sent together;
/// children that turn out to have children of their own are emptied first.
fn delete_unchecked_children(session: &WireSession, path: String) -> BoxFuture<'_, Result<()>> {
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
                    delete_unchecked_children(session, child.clone()).await?;
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
