//! `get_data()`: a node's data and stat, optionally with a watch.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::Result;
use crate::ops::{self, OpFuture, Unwatched, Watched, op_span};
use crate::types::Stat;
use crate::watcher::Watcher;
use crate::wire::WireSession;

/// Options of `get_data()`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let (data, stat) = client.get_data().for_path("/config").await?;
/// let (data, stat, watcher) = client.get_data().watched().for_path("/config").await?;
/// let event = watcher.await; // NodeDataChanged or NodeDeleted
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until for_path(..) is awaited"]
pub struct GetDataBuilder<W = Unwatched> {
    client: CuratorFramework,
    decompress: Option<bool>,
    watch: PhantomData<W>,
}

impl GetDataBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            decompress: None,
            watch: PhantomData,
        }
    }

    /// Also sets a one-shot watch on the node's data.
    pub fn watched(self) -> GetDataBuilder<Watched> {
        GetDataBuilder {
            client: self.client,
            decompress: self.decompress,
            watch: PhantomData,
        }
    }
}

impl<W> GetDataBuilder<W> {
    #[cfg(feature = "compression")]
    /// Decompresses the data with the client's
    /// [`CompressionProvider`](crate::compression::CompressionProvider), as Curator's
    /// `decompressed()`: for nodes written with `compressed()`, here or by Java Curator. The
    /// stat describes the stored (compressed) data.
    ///
    /// Data that is not compressed fails the read with [`Error::Decompression`](crate::Error::Decompression) (the watch, if
    /// any, is removed with it).
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_framework::Error;
    /// client.create().compressed().for_path("/a", b"hello").await?;
    /// let (data, _) = client.get_data().decompressed().for_path("/a").await?;
    /// assert_eq!(data, b"hello");
    /// client.create().for_path("/b", b"plain").await?;
    /// let error = client.get_data().decompressed().for_path("/b").await.unwrap_err();
    /// assert!(matches!(error, Error::Decompression { .. }));
    /// # Ok(()) }
    /// ```
    pub fn decompressed(mut self) -> Self {
        self.decompress = Some(true);
        self
    }

    /// Returns the stored bytes, also when the client decompresses by default
    /// ([`enable_compression`](crate::CuratorFrameworkBuilder::enable_compression)); Curator's
    /// `undecompressed()`.
    pub fn undecompressed(mut self) -> Self {
        self.decompress = Some(false);
        self
    }

    /// Reads `path`.
    pub fn for_path(self, path: &str) -> GetData<W> {
        let decompress = self
            .client
            .inner
            .settings
            .compression
            .inflate(path, self.decompress);
        GetData {
            path: self.client.target(path),
            client: self.client,
            decompress,
            watch: PhantomData,
        }
    }
}

/// An awaitable `get_data()`: `(data, stat)`, with a [`Watcher`] when watched.
#[derive(Debug)]
#[must_use = "operations do nothing until awaited"]
pub struct GetData<W = Unwatched> {
    client: CuratorFramework,
    path: Result<Arc<str>>,
    /// How the data is decompressed, when it is.
    decompress: Option<crate::compression::Inflate>,
    watch: PhantomData<W>,
}

impl<W> GetData<W> {
    /// `data` decompressed when asked for, with the client's provider.
    fn inflater(&mut self) -> impl FnOnce(Vec<u8>) -> Result<Vec<u8>> + Send + 'static {
        let inflate = self.decompress.take();
        move |data| match inflate {
            Some(inflate) => inflate.apply(&data),
            None => Ok(data),
        }
    }
}

impl IntoFuture for GetData<Unwatched> {
    type Output = Result<(Vec<u8>, Stat)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat)>;

    fn into_future(mut self) -> Self::IntoFuture {
        let inflate = self.inflater();
        let client = &self.client;
        ops::on_path_then(
            client,
            ops::schema_watch(client, self.path, false),
            |path| op_span!("zk.get_data", client, path),
            read,
            move |result| {
                let (data, stat) = result?;
                Ok((inflate(data)?, stat))
            },
        )
    }
}

impl IntoFuture for GetData<Watched> {
    type Output = Result<(Vec<u8>, Stat, Watcher)>;
    type IntoFuture = OpFuture<(Vec<u8>, Stat, Watcher)>;

    fn into_future(mut self) -> Self::IntoFuture {
        let inflate = self.inflater();
        let client = &self.client;
        ops::on_path_then(
            client,
            ops::schema_watch(client, self.path, true),
            |path| op_span!("zk.get_data", client, path),
            read_watched,
            move |result| {
                let (data, stat, watcher) = result?;
                Ok((inflate(data)?, stat, watcher))
            },
        )
    }
}

async fn read(
    session: Arc<WireSession>,
    path: Arc<str>,
    _: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat)> {
    session.get_data(&path).await
}

async fn read_watched(
    session: Arc<WireSession>,
    path: Arc<str>,
    namespace: Option<Arc<str>>,
) -> Result<(Vec<u8>, Stat, Watcher)> {
    let (data, stat, watcher) = session.get_data_watched(&path).await?;
    Ok((data, stat, Watcher::new(watcher, namespace)))
}
