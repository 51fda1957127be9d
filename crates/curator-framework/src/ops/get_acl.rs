//! `get_acl()`: a node's ACL and stat.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::acl::Acl;
use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture};
use crate::types::Stat;

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
pub struct GetAclBuilder<'c> {
    client: &'c CuratorFramework,
}

impl<'c> GetAclBuilder<'c> {
    pub(crate) fn new(client: &'c CuratorFramework) -> Self {
        Self { client }
    }

    /// Reads the ACL of `path`.
    pub fn for_path(self, path: &str) -> GetAcl<'c> {
        GetAcl {
            client: self.client,
            path: self.client.target(path),
        }
    }
}

/// An awaitable `get_acl()`.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetAcl<'c> {
    client: &'c CuratorFramework,
    path: Result<Arc<str>>,
}

impl IntoFuture for GetAcl<'_> {
    type Output = Result<(Vec<Acl>, Stat)>;
    type IntoFuture = OpFuture<(Vec<Acl>, Stat)>;

    fn into_future(self) -> Self::IntoFuture {
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        ops::start(self.client, "get_acl", &fixed.clone(), move |session, _| {
            let fixed = Arc::clone(&fixed);
            async move { session.get_acl(&fixed).await }
        })
    }
}
