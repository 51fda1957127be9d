//! Typed views: node data decoded through a framework [`Codec`] (JSON by default, with serde).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use curator_framework::codec::{self, Codec};
use curator_framework::listen::{Listenable, ListenerStream};
use curator_framework::{Error, Result};

use crate::core::Core;
use crate::event::{CacheError, CacheEvent, ChildData};

/// A cache event with decoded values. A node whose data does not decode is reported as
/// `Undecodable` instead of `Created`/`Changed`; the cache goes on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TypedEvent<T> {
    /// A node entered the cache.
    Created {
        /// The node (path, stat, raw data).
        node: ChildData,
        /// Its decoded value.
        value: T,
    },
    /// A node's data changed.
    Changed {
        /// The node now.
        node: ChildData,
        /// Its decoded value.
        value: T,
    },
    /// A node left the cache.
    Deleted {
        /// The node as it was cached.
        old: ChildData,
    },
    /// A node entered the cache or changed, but its data does not decode.
    Undecodable {
        /// The node (path, stat, raw data).
        node: ChildData,
        /// The codec's [`Error::Decode`], with the node's path.
        error: Error,
    },
    /// The initial load finished.
    Initialized,
    /// An error of the cache itself.
    Error(CacheError),
}

/// A view of a cache that decodes node data as `T` (see `typed()` on the caches), with JSON
/// unless given another [`codec`](Self::codec). Its events
/// ([`listenable`](Self::listenable), [`stream`](Self::stream)) are the cache's, decoded as each
/// listener receives them; they need `T: Clone`.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
/// struct Endpoint { host: String, port: u16 }
/// let cache = curator_caches::CuratorCache::builder(client, "/endpoints").build()?;
/// let endpoints = cache.typed::<Endpoint>();
/// // Any framework codec: here the data as text.
/// let texts = cache.typed::<String>().codec(curator_framework::codec::Utf8);
/// let _listening = endpoints.listenable().add_listener(|event| println!("{event:?}"));
/// cache.start().await?;
/// cache.initialized().await?;
/// match endpoints.get("/endpoints/a") {
///     Some(Ok(endpoint)) => println!("{endpoint:?}"),
///     Some(Err(error)) => println!("undecodable: {error}"),
///     None => println!("absent"),
/// }
/// println!("{:?}", texts.get("/endpoints/a"));
/// cache.close().await?;
/// # Ok(()) }
/// ```
pub struct TypedCache<T, C> {
    core: Arc<Core>,
    codec: Arc<C>,
    _value: PhantomData<fn() -> T>,
}

impl<T, C> Clone for TypedCache<T, C> {
    fn clone(&self) -> Self {
        Self {
            core: Arc::clone(&self.core),
            codec: Arc::clone(&self.codec),
            _value: PhantomData,
        }
    }
}

impl<T, C> fmt::Debug for TypedCache<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedCache")
            .field("root", &self.core.root)
            .field("value", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T, C> TypedCache<T, C> {
    pub(crate) fn new(core: Arc<Core>, codec: C) -> Self {
        Self {
            core,
            codec: Arc::new(codec),
            _value: PhantomData,
        }
    }

    /// The same view decoding with `codec` (any of [`curator_framework::codec`], or your own)
    /// instead.
    ///
    /// ```no_run
    /// # fn demo(cache: curator_caches::CuratorCache) {
    /// use curator_framework::codec::Utf8;
    /// let texts = cache.typed::<String>().codec(Utf8);
    /// # }
    /// ```
    pub fn codec<D: Codec<T>>(self, codec: D) -> TypedCache<T, D> {
        TypedCache::new(self.core, codec)
    }
}

impl<T, C> TypedCache<T, C> {
    /// The cache's [`wait_for`](crate::CuratorCache::wait_for): waits until the cache this
    /// view reads reflects every change up to `zxid`.
    ///
    /// ```no_run
    /// # async fn demo(writer: curator_framework::CuratorFramework, cache: curator_caches::CuratorCache) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// let ports = cache.typed::<u16>();
    /// let stat = writer.set_data().for_path("/endpoints/a", ports.encode(&8080)?).await?;
    /// ports.wait_for(stat.mzxid, Duration::from_secs(5)).await?;
    /// assert_eq!(ports.get("/endpoints/a").transpose()?, Some(8080));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As the cache's `wait_for`: [`Error::Timeout`], [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Safe: dropping the future drops the wait and nothing else.
    pub async fn wait_for(&self, zxid: i64, timeout: Duration) -> Result<()> {
        self.core.wait_for(zxid, timeout).await
    }
}

impl<T, C: Codec<T>> TypedCache<T, C> {
    /// The decoded value of the cached node at `path` ([`Error::Decode`] when it does not
    /// decode); `None` when it is not cached.
    pub fn get(&self, path: &str) -> Option<Result<T>> {
        let node = self.core.get(path)?;
        Some(decode(&*self.codec, &node))
    }

    /// Every cached node with its decoded value (or why it did not decode), sorted by path.
    pub fn snapshot(&self) -> Vec<(ChildData, Result<T>)> {
        self.core
            .shared
            .snapshot()
            .into_iter()
            .map(|node| {
                let value = decode(&*self.codec, &node);
                (node, value)
            })
            .collect()
    }

    /// Encodes `value` with this view's codec (to write it with `set_data`).
    ///
    /// # Errors
    /// The codec's [`Error::Decode`] when it cannot represent `value`.
    pub fn encode(&self, value: &T) -> Result<Vec<u8>> {
        self.codec.encode(value)
    }
}

impl<T: Clone + Send + 'static, C: Codec<T>> TypedCache<T, C> {
    /// Where to add listeners of decoded events: the cache's events, each decoded as its
    /// listener receives it (a [`Listenable::map`] view; no dispatch of its own).
    pub fn listenable(&self) -> Listenable<TypedEvent<T>> {
        let codec = Arc::clone(&self.codec);
        self.core
            .listenable()
            .map(move |event| typed_event(&*codec, event))
    }

    /// Decoded events from now on, as a stream (`listenable().stream()`).
    pub fn stream(&self) -> ListenerStream<TypedEvent<T>> {
        self.listenable().stream()
    }
}

fn decode<T, C: Codec<T> + ?Sized>(codec: &C, node: &ChildData) -> Result<T> {
    let Some(data) = node.data() else {
        return Err(Error::decode(node.path(), "the cache keeps no data"));
    };
    codec
        .decode(data)
        .map_err(|error| codec::with_path(error, node.path()))
}

fn typed_event<T, C: Codec<T> + ?Sized>(codec: &C, event: CacheEvent) -> TypedEvent<T> {
    match event {
        CacheEvent::Created { node } => match decode(codec, &node) {
            Ok(value) => TypedEvent::Created { node, value },
            Err(error) => TypedEvent::Undecodable { node, error },
        },
        CacheEvent::Changed { node, .. } => match decode(codec, &node) {
            Ok(value) => TypedEvent::Changed { node, value },
            Err(error) => TypedEvent::Undecodable { node, error },
        },
        CacheEvent::Deleted { old } => TypedEvent::Deleted { old },
        CacheEvent::Initialized => TypedEvent::Initialized,
        CacheEvent::Error(error) => TypedEvent::Error(error),
    }
}
