//! `get_acl()`: a node's ACL and stat.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::acl::Acl;
use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, op_span};
use crate::types::Stat;
use crate::wire::WireSession;

/// Options of `get_acl()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (acl, stat) = client.get_acl().for_path("/secure").await?;
/// println!("{acl:?} at ACL version {}", stat.aversion);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetAclBuilder {
    client: CuratorFramework,
}

impl GetAclBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self { client }
    }

    /// Reads the ACL of `path`.
    pub fn for_path(self, path: &str) -> GetAcl {
        GetAcl {
            path: self.client.target(path),
            client: self.client,
        }
    }
}

/// An awaitable `get_acl()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetAcl {
    client: CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetAcl {
    type Output = Result<(Vec<Acl>, Stat)>;
    type IntoFuture = OpFuture<(Vec<Acl>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.client;
        ops::on_path(
            client,
            self.path,
            |path| op_span!("zk.get_acl", client, path),
            read,
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    path: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<Acl>, Stat)> {
    session.get_acl(&path).await
}
