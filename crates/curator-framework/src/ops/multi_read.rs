//! `multi_read()`: several reads in one request (ZooKeeper 3.6+), each with its own result.

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture};

pub(crate) use crate::types::multi::Read;
pub use crate::types::multi::ReadResult;

/// Several reads sent as one request and answered as one (ZooKeeper's `multiRead`, 3.6+): one
/// round trip and one request for the server to queue, however many reads. Unlike a
/// [`transaction`](CuratorFramework::transaction), a read that fails does not fail the others.
/// No read sets a watch. Servers older than 3.6 answer [`Error::Unimplemented`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_framework::ops::multi_read::ReadResult;
/// let results = client
///     .multi_read()
///     .get_data("/config/a")
///     .get_children("/config")
///     .commit()
///     .await?;
/// for result in results {
///     match result {
///         ReadResult::Data { data, stat } => println!("{} bytes, version {}", data.len(), stat.version),
///         ReadResult::Children { children } => println!("children: {children:?}"),
///         ReadResult::Error(error) => println!("failed: {error}"),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a multi-read does nothing until commit() is awaited"]
pub struct MultiReadBuilder {
    client: CuratorFramework,
    reads: Vec<Read>,
    invalid: Option<Error>,
}

impl MultiReadBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            reads: Vec::new(),
            invalid: None,
        }
    }

    fn add(mut self, path: &str, read: fn(Arc<str>) -> Read) -> Self {
        match self.client.target(path) {
            Ok(path) => self.reads.push(read(path)),
            Err(error) => {
                self.invalid.get_or_insert(error);
            }
        }
        self
    }

    /// Adds a read of a node's data and stat.
    pub fn get_data(self, path: &str) -> Self {
        self.add(path, Read::Data)
    }

    /// Adds a read of a node's children.
    pub fn get_children(self, path: &str) -> Self {
        self.add(path, Read::Children)
    }

    /// How many reads were added.
    pub fn len(&self) -> usize {
        self.reads.len()
    }

    /// Whether no read was added.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// Sends the reads; the results come in the order the reads were added.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path and [`Error::InvalidArgument`] for no reads
    /// (nothing is sent); [`Error::Unimplemented`] from a server older than 3.6; connection
    /// errors (the whole request is retried under the retry policy).
    pub fn commit(self) -> OpFuture<Vec<ReadResult>> {
        if let Some(error) = self.invalid {
            return OpFuture::ready(Err(error));
        }
        if self.reads.is_empty() {
            return OpFuture::ready(Err(Error::InvalidArgument(
                "a multi-read needs at least one read".into(),
            )));
        }
        let reads = Arc::new(self.reads);
        let client = self.client;
        let span = crate::ops::OpSpan {
            op: "zk.multi_read",
            span: tracing::debug_span!(
                "zk.multi_read",
                reads = reads.len(),
                session_id = ?client.session_id()
            ),
        };
        ops::run_read(
            &client,
            span,
            move |session, _| {
                let reads = Arc::clone(&reads);
                async move { session.multi_read(&reads).await }
            },
            |result| result,
        )
    }
}

impl IntoFuture for MultiReadBuilder {
    type Output = Result<Vec<ReadResult>>;
    type IntoFuture = OpFuture<Vec<ReadResult>>;

    fn into_future(self) -> Self::IntoFuture {
        self.commit()
    }
}
