//! `set_data()`: replace a node's data, optionally only at an expected version.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture, op_span};
use crate::types::Stat;

/// Options of `set_data()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let stat = client.set_data().for_path("/config", b"v2").await?;
/// // Compare-and-set: fails with Error::BadVersion if someone wrote in between.
/// client.set_data().with_version(stat.version).for_path("/config", b"v3").await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct SetDataBuilder {
    client: CuratorFramework,
    version: Option<i32>,
    idempotent: bool,
    compress: Option<bool>,
}

impl SetDataBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            version: None,
            idempotent: false,
            compress: None,
        }
    }

    /// Writes only if the node's data version is `version`; otherwise
    /// [`Error::BadVersion`].
    pub fn with_version(mut self, version: i32) -> Self {
        self.version = Some(version);
        self
    }

    /// When a retry (after a lost reply) meets `BadVersion`, succeeds if the node is at
    /// `version + 1` with exactly this data: the first attempt did apply.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    #[cfg(feature = "compression")]
    /// Compresses the data with the client's
    /// [`CompressionProvider`](crate::compression::CompressionProvider) before it is sent, as
    /// Curator's `compressed()`. The 1 MiB limit applies to the compressed data; with
    /// `idempotent()`, a retry compares the stored data with the compressed data.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// client.set_data().compressed().for_path("/config", br#"{"replicas": 3}"#).await?;
    /// # Ok(()) }
    /// ```
    pub fn compressed(mut self) -> Self {
        self.compress = Some(true);
        self
    }

    /// Sends the data as it is, also when the client compresses by default
    /// ([`enable_compression`](crate::CuratorFrameworkBuilder::enable_compression)); Curator's
    /// `uncompressed()`.
    pub fn uncompressed(mut self) -> Self {
        self.compress = Some(false);
        self
    }

    /// Writes `data` to `path`.
    pub fn for_path(self, path: &str, data: impl AsRef<[u8]>) -> SetData {
        let prepared = self
            .client
            .schemas()
            .map_or(Ok(()), |set| set.check_set_data(path, data.as_ref()))
            .and_then(|()| {
                ops::outgoing_data(&self.client, path, data.as_ref().to_vec(), self.compress)
            })
            .and_then(|data| Ok((self.client.target(path)?, data)));
        let (path, data) = match prepared {
            Ok((path, data)) => (Ok(path), Arc::from(data)),
            Err(error) => (Err(error), Arc::from(Vec::new())),
        };
        SetData {
            path,
            data,
            builder: self,
        }
    }
}

/// An awaitable `set_data()`; yields the node's new stat.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct SetData {
    builder: SetDataBuilder,
    path: Result<Arc<str>>,
    data: Arc<[u8]>,
}

impl IntoFuture for SetData {
    type Output = Result<Stat>;
    type IntoFuture = OpFuture<Stat>;

    fn into_future(self) -> Self::IntoFuture {
        let SetData {
            builder,
            path,
            data,
        } = self;
        let fixed: Arc<str> = match path {
            Ok(path) => path,
            Err(error) => return OpFuture::ready(Err(error)),
        };
        let (version, idempotent) = (builder.version, builder.idempotent);
        let client = &builder.client;
        ops::run(
            client,
            op_span!("zk.set_data", client, fixed),
            move |session, attempt| {
                let (fixed, data) = (Arc::clone(&fixed), Arc::clone(&data));
                async move {
                    match session.set_data(&fixed, &data, version).await {
                        Err(Error::BadVersion) if idempotent && attempt > 0 => {
                            let (current, stat) = session.get_data(&fixed).await?;
                            if Some(stat.version) == version.map(|v| v.wrapping_add(1))
                                && *current == *data
                            {
                                Ok(stat)
                            } else {
                                Err(Error::BadVersion)
                            }
                        }
                        other => other,
                    }
                }
            },
            |result| result,
        )
    }
}
