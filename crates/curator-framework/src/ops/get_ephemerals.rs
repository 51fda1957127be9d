//! `get_ephemerals()`: the ephemeral nodes this session owns under a path prefix (ZooKeeper
//! 3.6+ `getEphemerals`).

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, op_span};
use crate::paths;
use crate::wire::WireSession;

/// Options of `get_ephemerals()`.
///
/// The prefix is matched as ZooKeeper matches it, as a string: `/locks/a` also finds
/// `/locks/ab`. Under a namespace only nodes inside it are returned, with the namespace removed.
/// A prefix that names no node is not an error: the list is empty. Servers older than 3.6
/// answer with [`Error::Unimplemented`](crate::Error::Unimplemented) (or drop the connection).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let mine = client.get_ephemerals().for_path("/locks").await?;
/// println!("this session holds {} ephemeral nodes under /locks: {mine:?}", mine.len());
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetEphemeralsBuilder {
    client: CuratorFramework,
}

impl GetEphemeralsBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self { client }
    }

    /// Lists this session's ephemeral nodes whose paths start with `prefix` (`/` for all).
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let held = client.get_ephemerals().for_path("/locks/orders").await?;
    /// # Ok(()) }
    /// ```
    pub fn for_path(self, prefix: &str) -> GetEphemerals {
        GetEphemerals {
            path: self.client.target(prefix),
            client: self.client,
        }
    }
}

/// An awaitable `get_ephemerals()`: the paths (sorted), in the caller's namespace.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let op = client.get_ephemerals().for_path("/"); // nothing sent yet
/// let all_mine: Vec<String> = op.await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetEphemerals {
    client: CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetEphemerals {
    type Output = Result<Vec<String>>;
    type IntoFuture = OpFuture<Vec<String>>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.get_ephemerals", client, path),
            read,
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    prefix: Arc<str>,
    namespace: Option<Arc<str>>,
) -> Result<Vec<String>> {
    let found = session.get_ephemerals(&prefix).await?;
    let mut paths = in_namespace(found, namespace.as_deref());
    paths.sort();
    Ok(paths)
}

/// The server paths inside `namespace`, with it removed: a string prefix `/app` also matches
/// `/app2/..`, which is another namespace.
fn in_namespace(found: Vec<String>, namespace: Option<&str>) -> Vec<String> {
    let Some(ns) = namespace else {
        return found;
    };
    found
        .into_iter()
        .filter(|path| {
            path.strip_prefix('/')
                .and_then(|p| p.strip_prefix(ns))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
        .map(|path| paths::strip_namespace(Some(ns), &path))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::in_namespace;

    #[test]
    fn only_paths_inside_the_namespace_come_back_without_it() {
        let found = vec![
            "/app/locks/a".to_owned(),
            "/app2/locks/b".to_owned(),
            "/app".to_owned(),
            "/other".to_owned(),
        ];
        assert_eq!(
            in_namespace(found.clone(), Some("app")),
            vec!["/locks/a".to_owned(), "/".to_owned()]
        );
        assert_eq!(in_namespace(found.clone(), None), found);
    }
}
