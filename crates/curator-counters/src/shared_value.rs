//! `SharedValue<T>`: a value every participant sees, with versioned compare-and-set.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use curator_framework::codec::{self, Codec, Json};
use curator_framework::listen::{Listenable, ListenerContainer, ListenerStream};
use curator_framework::recipe::{HandleGuard, Recipe, RecipeCore, RecipeEvents, RecipeOptions};
use curator_framework::{CreateMode, CuratorFramework, Error, Result, Stat, paths};
use curator_values::chunked::{ChunkSettings, ChunkedValue};
use parking_lot::Mutex;

/// A value together with the node version it was read at: the token for
/// [`SharedValue::try_set_value`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue<T> {
    /// The node's data version when the value was read or written.
    pub version: i32,
    /// The value.
    pub value: T,
}

impl<T> VersionedValue<T> {
    /// A versioned value.
    pub fn new(version: i32, value: T) -> Self {
        Self { version, value }
    }
}

/// What the instance last saw: only ever moves forward (by the node's modification zxid).
#[derive(Debug, Clone)]
struct Snapshot {
    mzxid: i64,
    version: i32,
    bytes: Vec<u8>,
}

struct Inner<T, C> {
    client: CuratorFramework,
    path: String,
    seed: Vec<u8>,
    codec: C,
    /// Set when the value is stored chunked (see [`SharedValueBuilder::chunked`]).
    chunked: Option<ChunkedValue>,
    current: Mutex<Option<Snapshot>>,
    listeners: ListenerContainer<VersionedValue<T>>,
    /// The value's name, lifecycle and follower task.
    core: RecipeCore,
    _value: PhantomData<fn() -> T>,
}

/// A value stored in one node that every participant sees (Curator's `SharedValue`, typed).
///
/// The node holds the value encoded by a [`Codec`] ([`Json`] by default; [`codec::Raw`] for bytes,
/// [`codec::BigEndianI32`] is what [`SharedCount`](crate::SharedCount) uses). [`start`](Self::start)
/// creates the node with the seed value when it is missing (the first starter's seed wins),
/// reads it, and then follows it with a watch.
///
/// Guarantees: the local view only moves forward (by the node's modification zxid, so a stale
/// read never replaces a newer value); listeners get each value the instance sees exactly once,
/// in the order the server committed them; after a reconnect or a new session the node is read
/// again and a value changed meanwhile is delivered. ZooKeeper watches fire once per change
/// *seen*: when several writes land between a notification and the re-read, listeners get the
/// newest of them only (the intermediate values are never observable through a watch).
///
/// **Values over 1 MiB:** with [`chunked`](SharedValueBuilder::chunked) the node holds a small
/// manifest and the encoded value lives in immutable chunks beside it
/// ([`curator_values::chunked`] says how, what it costs and the size limit, 64 MiB by
/// default). Every read, `start`, listener event and `value()` is then a whole value exactly as
/// one writer wrote it, never a mix of two; versions are the manifest's, so
/// [`try_set_value`](Self::try_set_value) works the same. Such a node is not readable by
/// Curator or by a `SharedValue` that is not chunked.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_counters::SharedValue;
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
/// struct Limits { max_jobs: u32 }
///
/// let limits = SharedValue::builder(client, "/config/limits", Limits { max_jobs: 4 }).build()?;
/// limits.start().await?;
/// let _listener = limits.listenable().add_listener(|v| println!("now {:?}", v.value));
/// let seen = limits.versioned_value()?;
/// if !limits.try_set_value(&seen, Limits { max_jobs: seen.value.max_jobs + 1 }).await? {
///     // someone else changed it first; read again and retry
/// }
/// limits.close().await?;
/// # Ok(()) }
/// ```
pub struct SharedValue<T, C = Json> {
    inner: Arc<Inner<T, C>>,
    /// Cancels the recipe's tasks when the last handle is dropped.
    _guard: HandleGuard,
}

impl<T, C> Clone for SharedValue<T, C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            _guard: self._guard.clone(),
        }
    }
}

impl<T, C: fmt::Debug> fmt::Debug for SharedValue<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let current = self.inner.current.lock();
        f.debug_struct("SharedValue")
            .field("path", &self.inner.path)
            .field("codec", &self.inner.codec)
            .field(
                "chunked",
                &self.inner.chunked.as_ref().map(ChunkedValue::settings),
            )
            .field("version", &current.as_ref().map(|s| s.version))
            .finish_non_exhaustive()
    }
}

impl<T, C> SharedValue<T, C>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    /// The node's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Creates the node with the seed if it is missing, reads it, and starts following it.
    /// Returns once the first value is known.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when already started, [`Error::Closed`] after `close`;
    /// connection errors (the instance is then not started and `start` may be called again).
    ///
    /// # Cancellation safety
    /// Dropping the future before it returns leaves the instance not started.
    pub async fn start(&self) -> Result<()> {
        self.inner.core.lifecycle().ensure_startable()?;
        let created = match &self.inner.chunked {
            Some(chunked) => chunked.create(&self.inner.seed).await.map(drop),
            None => self
                .inner
                .client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(CreateMode::Persistent)
                .for_path(&self.inner.path, &self.inner.seed)
                .await
                .map(drop),
        };
        match created {
            Ok(()) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error),
        }
        let (bytes, stat, watcher) = self.inner.read_watched().await?;
        self.inner.observe(bytes, &stat);
        self.inner.core.lifecycle().start()?;
        let inner = Arc::clone(&self.inner);
        self.inner
            .core
            .tasks()
            .spawn(follow(inner, Some(watcher)))
            .detach();
        Ok(())
    }

    /// Stops following the node (the node stays). Idempotent.
    ///
    /// # Errors
    /// None: nothing is deleted, so nothing can fail.
    ///
    /// # Cancellation safety
    /// Safe: following stops at the first poll; dropping the future only stops the wait.
    pub async fn close(&self) -> Result<()> {
        self.inner.core.close_tasks().await;
        Ok(())
    }

    /// The recipe's core (a `SharedCount` shares its value's).
    pub(crate) fn recipe_core(&self) -> &RecipeCore {
        &self.inner.core
    }

    /// The value this instance last saw.
    ///
    /// # Errors
    /// [`Error::NotStarted`] before [`start`](Self::start); [`Error::Decode`] when the node holds
    /// data the codec cannot read.
    pub fn value(&self) -> Result<T> {
        self.versioned_value().map(|v| v.value)
    }

    /// The value this instance last saw, with its version (the token for
    /// [`try_set_value`](Self::try_set_value)).
    ///
    /// # Errors
    /// As [`value`](Self::value).
    pub fn versioned_value(&self) -> Result<VersionedValue<T>> {
        let snapshot = self.inner.current.lock().clone().ok_or(Error::NotStarted)?;
        self.inner.decode(&snapshot)
    }

    /// Reads the node now (not the local view) and updates the local view.
    ///
    /// # Errors
    /// Connection errors; [`Error::NoNode`] when the node was deleted; [`Error::Decode`];
    /// chunked: [`Error::ChunkedRead`] when newer writes kept replacing the value under the
    /// read.
    pub async fn read(&self) -> Result<VersionedValue<T>> {
        let (bytes, stat) = match &self.inner.chunked {
            Some(chunked) => chunked.read().await?,
            None => {
                self.inner
                    .client
                    .get_data()
                    .for_path(&self.inner.path)
                    .await?
            }
        };
        self.inner.observe(bytes.clone(), &stat);
        self.inner.decode(&Snapshot {
            mzxid: stat.mzxid,
            version: stat.version,
            bytes,
        })
    }

    /// Sets the value, whatever it is now (re-creating the node if it was deleted).
    ///
    /// # Errors
    /// [`Error::Decode`] when the codec cannot encode `value`; connection errors; chunked:
    /// [`Error::ValueTooLarge`] (nothing written).
    ///
    /// # Cancellation safety
    /// The write may or may not be applied when the future is dropped.
    pub async fn set_value(&self, value: T) -> Result<()> {
        let bytes = self.inner.encode(&value)?;
        if let Some(chunked) = &self.inner.chunked {
            let stat = chunked.create_or_set(&bytes).await?;
            self.inner.observe(bytes, &stat);
            return Ok(());
        }
        let written = self
            .inner
            .client
            .set_data()
            .for_path(&self.inner.path, &bytes)
            .await;
        let stat = match written {
            Err(Error::NoNode) => {
                self.inner
                    .client
                    .create()
                    .creating_parent_containers_if_needed()
                    .or_set_data()
                    .for_path(&self.inner.path, &bytes)
                    .with_stat()
                    .await?
                    .1
            }
            other => other?,
        };
        self.inner.observe(bytes, &stat);
        Ok(())
    }

    /// Sets the value only if the node is still at `expected.version`; `false` when someone
    /// changed it first (the local view is then refreshed: read it and try again).
    ///
    /// A write whose reply was lost with the connection is recognised on the retry (the node is
    /// at the next version with exactly these bytes) and reported as `true`, as Curator does.
    ///
    /// # Errors
    /// [`Error::Decode`] when the codec cannot encode `value`; connection errors;
    /// [`Error::NoNode`] when the node was deleted; chunked: [`Error::ValueTooLarge`] (nothing
    /// written).
    ///
    /// # Cancellation safety
    /// The write may or may not be applied when the future is dropped.
    pub async fn try_set_value(&self, expected: &VersionedValue<T>, value: T) -> Result<bool> {
        let bytes = self.inner.encode(&value)?;
        let written = if let Some(chunked) = &self.inner.chunked {
            chunked.set_with_version(&bytes, expected.version).await
        } else {
            self.inner
                .client
                .set_data()
                .with_version(expected.version)
                .idempotent()
                .for_path(&self.inner.path, &bytes)
                .await
        };
        match written {
            Ok(stat) => {
                self.inner.observe(bytes, &stat);
                Ok(true)
            }
            Err(Error::BadVersion) => {
                let _ = self.read().await;
                Ok(false)
            }
            Err(error) => Err(error),
        }
    }

    /// Listeners called with each new value this instance sees after `start` (see the type's
    /// guarantees); the value `start` found is not announced.
    pub fn listenable(&self) -> Listenable<VersionedValue<T>> {
        self.inner.listeners.listenable()
    }

    /// The new values as a stream.
    pub fn stream(&self) -> ListenerStream<VersionedValue<T>> {
        self.inner.listeners.listenable().stream()
    }
}

impl<T> SharedValue<T, Json>
where
    T: Clone + Send + Sync + 'static,
    Json: Codec<T>,
{
    /// Settings for a shared value at `path` whose node is created with `seed` if missing
    /// (JSON unless [`codec`](SharedValueBuilder::codec) says otherwise).
    pub fn builder(client: CuratorFramework, path: &str, seed: T) -> SharedValueBuilder<T, Json> {
        SharedValueBuilder {
            client,
            path: path.to_owned(),
            seed,
            codec: Json,
            chunked: None,
            kind: "SharedValue",
            options: RecipeOptions::new(),
        }
    }
}

/// Settings of a [`SharedValue`].
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_counters::SharedValue;
/// use curator_framework::codec::Utf8;
/// let motd = SharedValue::builder(client, "/config/motd", String::from("hello"))
///     .codec(Utf8)
///     .build()?;
/// # let _ = motd;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct SharedValueBuilder<T, C> {
    client: CuratorFramework,
    path: String,
    seed: T,
    codec: C,
    chunked: Option<ChunkSettings>,
    /// `SharedValue`, or the recipe built on it (`SharedCount`).
    pub(crate) kind: &'static str,
    options: RecipeOptions,
}

impl<T, C> SharedValueBuilder<T, C>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    /// Stores the value with `codec` instead.
    pub fn codec<D: Codec<T>>(self, codec: D) -> SharedValueBuilder<T, D> {
        SharedValueBuilder {
            client: self.client,
            path: self.path,
            seed: self.seed,
            codec,
            chunked: self.chunked,
            kind: self.kind,
            options: self.options,
        }
    }

    /// The value's name (default: its path): what its logs and unhandled errors say.
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let limit = curator_counters::SharedValue::builder(client, "/tenants/17/limit", 10u32)
    ///     .metrics_name("tenant-limits")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.options = self.options.metrics_name(name);
        self
    }

    /// Stores the value chunked, so it may be larger than ZooKeeper's 1 MiB (up to 64 MiB
    /// encoded): see [`SharedValue`]'s docs and [`curator_values::chunked`].
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// use curator_counters::SharedValue;
    /// use curator_framework::codec::Raw;
    /// let model = SharedValue::builder(client, "/ml/model", Vec::<u8>::new())
    ///     .codec(Raw)
    ///     .chunked()
    ///     .build()?;
    /// model.start().await?;
    /// model.set_value(vec![0u8; 8 << 20]).await?;
    /// # Ok(()) }
    /// ```
    pub fn chunked(self) -> Self {
        self.chunked_with(ChunkSettings::new())
    }

    /// [`chunked`](Self::chunked) with other settings (chunk size, size limit, read attempts).
    pub fn chunked_with(mut self, settings: ChunkSettings) -> Self {
        self.chunked = Some(settings);
        self
    }

    /// The shared value (not started).
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::Decode`] when the codec cannot encode the
    /// seed; chunked: [`Error::InvalidArgument`] for bad chunk settings,
    /// [`Error::ValueTooLarge`] for a seed over the size limit.
    pub fn build(self) -> Result<SharedValue<T, C>> {
        let SharedValueBuilder {
            client,
            path,
            seed,
            codec,
            chunked,
            kind,
            options,
        } = self;
        paths::validate(&path)?;
        let seed = codec
            .encode(&seed)
            .map_err(|e| codec::with_path(e, &path))?;
        let chunked = match chunked {
            Some(settings) => {
                settings.check_size(&path, seed.len())?;
                Some(
                    ChunkedValue::new(client.clone(), &path, settings)?
                        .creating_parent_containers_if_needed(),
                )
            }
            None => None,
        };
        let core = RecipeCore::new(&client, kind, &path, &options);
        let listeners = core.listener_container(&client);
        let inner = Arc::new(Inner {
            client,
            path,
            seed,
            codec,
            chunked,
            current: Mutex::new(None),
            listeners,
            core,
            _value: PhantomData,
        });
        Ok(SharedValue {
            _guard: inner.core.handle_guard(),
            inner,
        })
    }
}

impl<T, C> Recipe for SharedValue<T, C>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    fn core(&self) -> &RecipeCore {
        &self.inner.core
    }

    async fn start(&self) -> Result<()> {
        SharedValue::start(self).await
    }

    async fn close(&self) -> Result<()> {
        SharedValue::close(self).await
    }
}

impl<T, C> RecipeEvents for SharedValue<T, C>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    type Event = VersionedValue<T>;

    fn listenable(&self) -> Listenable<VersionedValue<T>> {
        SharedValue::listenable(self)
    }
}

impl<T, C> Inner<T, C>
where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    /// Reads the value with a watch on its node.
    async fn read_watched(&self) -> Result<(Vec<u8>, Stat, curator_framework::watcher::Watcher)> {
        match &self.chunked {
            Some(chunked) => chunked.read_watched().await,
            None => self.client.get_data().watched().for_path(&self.path).await,
        }
    }

    fn encode(&self, value: &T) -> Result<Vec<u8>> {
        self.codec
            .encode(value)
            .map_err(|e| codec::with_path(e, &self.path))
    }

    fn decode(&self, snapshot: &Snapshot) -> Result<VersionedValue<T>> {
        let value = self
            .codec
            .decode(&snapshot.bytes)
            .map_err(|e| codec::with_path(e, &self.path))?;
        Ok(VersionedValue::new(snapshot.version, value))
    }

    /// Takes a value read or written at `stat` if it is newer than the local view, and tells
    /// the listeners.
    fn observe(&self, bytes: Vec<u8>, stat: &Stat) {
        let snapshot = Snapshot {
            mzxid: stat.mzxid,
            version: stat.version,
            bytes,
        };
        {
            let mut current = self.current.lock();
            if current.as_ref().is_some_and(|c| c.mzxid >= snapshot.mzxid) {
                return;
            }
            let first = current.replace(snapshot.clone()).is_none();
            if first {
                // The value found by `start` is not a change.
                return;
            }
            // Publish under the lock so that listeners see values in mzxid order.
            match self.decode(&snapshot) {
                Ok(value) => self.listeners.publish(value),
                Err(error) => tracing::warn!(%error, "shared value holds undecodable data"),
            }
        }
    }
}

/// Follows the node: re-read on every change and after every reconnect, until the recipe's
/// tasks are cancelled (by `close` or the client's close).
async fn follow<T, C>(
    inner: Arc<Inner<T, C>>,
    mut watcher: Option<curator_framework::watcher::Watcher>,
) where
    T: Clone + Send + Sync + 'static,
    C: Codec<T>,
{
    let mut states = inner.client.connection_state_stream();
    loop {
        if let Some(current) = watcher.take() {
            tokio::select! {
                _ = current.changed() => {}
                connected = states.next_connected() => {
                    if connected.is_err() {
                        return;
                    }
                }
            }
        }
        // `Ok(None)`: read again at once.
        let read = async {
            match inner.read_watched().await {
                Ok((bytes, stat, next)) => {
                    inner.observe(bytes, &stat);
                    Ok(Some(next))
                }
                Err(Error::NoNode) => {
                    // Deleted: keep the last value and wait for the node to come back.
                    let (stat, next) = inner
                        .client
                        .check_exists()
                        .watched()
                        .for_path(&inner.path)
                        .await?;
                    Ok(stat.is_none().then_some(next))
                }
                Err(error @ (Error::ChunkedRead { .. } | Error::Decode { .. })) => {
                    // No whole value now (writes keep replacing it, or it is not a manifest):
                    // try again at the next change of the node.
                    tracing::debug!(%error, path = %inner.path, "shared value unreadable; waiting for a change");
                    let (_, next) = inner
                        .client
                        .check_exists()
                        .watched()
                        .for_path(&inner.path)
                        .await?;
                    Ok(Some(next))
                }
                Err(error) => Err(error),
            }
        };
        match read.await {
            Ok(next) => watcher = next,
            Err(Error::Closed) => return,
            Err(error) => {
                tracing::debug!(%error, path = %inner.path, "shared value read failed; waiting for the connection");
                if states.next_connected().await.is_err() {
                    return;
                }
            }
        }
    }
}
