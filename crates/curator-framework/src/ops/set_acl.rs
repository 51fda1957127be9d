//! `set_acl()`: replace a node's ACL.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::acl::Acl;
use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture, op_span};
use crate::types::Stat;

/// Options of `set_acl()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_framework::acl::{Acl, Perms};
/// client.set_acl().with_acl(vec![Acl::world_anyone(Perms::READ)]).for_path("/public").await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct SetAclBuilder {
    client: CuratorFramework,
    acl: Option<Vec<Acl>>,
    version: Option<i32>,
}

impl SetAclBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            acl: None,
            version: None,
        }
    }

    /// The new ACL (default: the client's ACL provider's choice for the path).
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }

    /// Only if the node's ACL version is `version`.
    pub fn with_version(mut self, version: i32) -> Self {
        self.version = Some(version);
        self
    }

    /// Sets the ACL of `path`. With a schema set, the path's schema is looked up and its data
    /// validator's [`is_valid_acl`](crate::schema::DataValidator::is_valid_acl) asked about the
    /// ACL before anything is sent, as Curator's `setACL` does; a refusal is
    /// [`Error::SchemaViolation`].
    pub fn for_path(self, path: &str) -> SetAcl {
        SetAcl {
            path: self.client.target(path),
            builder: self,
        }
    }
}

/// An awaitable `set_acl()`; yields the node's new stat.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct SetAcl {
    builder: SetAclBuilder,
    path: Result<Arc<str>>,
}

impl IntoFuture for SetAcl {
    type Output = Result<Stat>;
    type IntoFuture = OpFuture<Stat>;

    fn into_future(self) -> Self::IntoFuture {
        let client = &self.builder.client;
        let fixed: Arc<str> = match self.path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let acl = self
            .builder
            .acl
            .unwrap_or_else(|| client.inner.settings.acl_provider.acl_for_path(&fixed));
        if acl.is_empty() {
            return OpFuture::ready(Err(Error::InvalidArgument(
                "an ACL needs at least one entry".into(),
            )));
        }
        if let Some(set) = client.schemas() {
            if let Err(error) = set.check_acl(&client.unfix_path(&fixed), &acl) {
                return OpFuture::ready(Err(error));
            }
        }
        let acl: Arc<[Acl]> = acl.into();
        let version = self.builder.version;
        ops::run(
            client,
            op_span!("zk.set_acl", client, fixed),
            move |session, _| {
                let (fixed, acl) = (Arc::clone(&fixed), Arc::clone(&acl));
                async move { session.set_acl(&fixed, &acl, version).await }
            },
            |result| result,
        )
    }
}
