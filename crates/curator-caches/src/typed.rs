//! Typed views: node data decoded through a [`Codec`] (JSON by default, with serde).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use curator_framework::listen::ListenerHandle;
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::core::Core;
use crate::event::{CacheError, CacheEvent, ChildData};

/// Why a value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CodecError(pub String);

/// Turns values into node data and back.
///
/// ```
/// use curator_caches::{Codec, CodecError};
/// struct Utf8;
/// impl Codec<String> for Utf8 {
///     fn encode(&self, value: &String) -> Result<Vec<u8>, CodecError> { Ok(value.clone().into_bytes()) }
///     fn decode(&self, bytes: &[u8]) -> Result<String, CodecError> {
///         String::from_utf8(bytes.to_vec()).map_err(|e| CodecError(e.to_string()))
///     }
/// }
/// assert_eq!(Utf8.decode(b"hi").unwrap(), "hi");
/// ```
pub trait Codec<T>: Send + Sync + 'static {
    /// Encodes `value`.
    ///
    /// # Errors
    /// A [`CodecError`] when the value cannot be represented.
    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError>;

    /// Decodes node data.
    ///
    /// # Errors
    /// A [`CodecError`] for data that is not a valid `T`.
    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError>;
}

/// JSON through `serde_json` (UTF-8, no whitespace): the default codec.
///
/// ```
/// use curator_caches::{Codec, JsonCodec};
/// let bytes = JsonCodec.encode(&vec![1, 2]).unwrap();
/// assert_eq!(bytes, b"[1,2]");
/// let back: Vec<i32> = JsonCodec.decode(&bytes).unwrap();
/// assert!(Codec::<Vec<i32>>::decode(&JsonCodec, b"{oops").is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonCodec;

impl<T: Serialize + DeserializeOwned> Codec<T> for JsonCodec {
    fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        serde_json::to_vec(value).map_err(|e| CodecError(e.to_string()))
    }

    fn decode(&self, bytes: &[u8]) -> Result<T, CodecError> {
        serde_json::from_slice(bytes).map_err(|e| CodecError(e.to_string()))
    }
}

/// A cache event with decoded values. A node whose data does not decode is reported as
/// `Error(CacheError::Decode { .. })` instead of `Created`/`Changed`; the cache goes on.
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
    /// The initial load finished.
    Initialized,
    /// A decode failure, or an error of the cache itself.
    Error(CacheError),
}

/// A view of a cache that decodes node data as `T` (see `typed()` on the caches).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// #[derive(serde::Serialize, serde::Deserialize, Debug)]
/// struct Endpoint { host: String, port: u16 }
/// let cache = curator_caches::CuratorCache::builder(client, "/endpoints").build()?;
/// let endpoints = cache.typed::<Endpoint>();
/// let _listening = endpoints.add_listener(|event| println!("{event:?}"));
/// cache.start()?;
/// cache.initialized().await;
/// match endpoints.get("/endpoints/a") {
///     Some(Ok(endpoint)) => println!("{endpoint:?}"),
///     Some(Err(error)) => println!("undecodable: {error}"),
///     None => println!("absent"),
/// }
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

impl<T, C: Codec<T>> TypedCache<T, C> {
    pub(crate) fn new(core: Arc<Core>, codec: C) -> Self {
        Self {
            core,
            codec: Arc::new(codec),
            _value: PhantomData,
        }
    }

    /// The decoded value of the cached node at `path`; `None` when it is not cached.
    pub fn get(&self, path: &str) -> Option<Result<T, CacheError>> {
        let node = self.core.get(path)?;
        Some(decode(&*self.codec, &node))
    }

    /// Every cached node with its decoded value (or why it did not decode), sorted by path.
    pub fn snapshot(&self) -> Vec<(ChildData, Result<T, CacheError>)> {
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
    /// The codec's error.
    pub fn encode(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        self.codec.encode(value)
    }
}

impl<T: Send + 'static, C: Codec<T>> TypedCache<T, C> {
    /// Adds a listener of decoded events; dropping the handle removes it.
    pub fn add_listener(
        &self,
        listener: impl Fn(TypedEvent<T>) + Send + Sync + 'static,
    ) -> ListenerHandle {
        let codec = Arc::clone(&self.codec);
        self.core
            .listenable()
            .add_listener(move |event| listener(typed_event(&*codec, event)))
    }

    /// Decoded events from now on, as a stream.
    pub fn stream(&self) -> impl Stream<Item = TypedEvent<T>> + Send + Unpin + 'static {
        let codec = Arc::clone(&self.codec);
        self.core
            .listenable()
            .stream()
            .map(move |event| typed_event(&*codec, event))
    }
}

fn decode<T, C: Codec<T> + ?Sized>(codec: &C, node: &ChildData) -> Result<T, CacheError> {
    let Some(data) = node.data() else {
        return Err(CacheError::Decode {
            path: node.path().to_owned(),
            message: "the cache keeps no data".to_owned(),
        });
    };
    codec.decode(data).map_err(|e| CacheError::Decode {
        path: node.path().to_owned(),
        message: e.0,
    })
}

fn typed_event<T, C: Codec<T> + ?Sized>(codec: &C, event: CacheEvent) -> TypedEvent<T> {
    match event {
        CacheEvent::Created { node } => match decode(codec, &node) {
            Ok(value) => TypedEvent::Created { node, value },
            Err(error) => TypedEvent::Error(error),
        },
        CacheEvent::Changed { node, .. } => match decode(codec, &node) {
            Ok(value) => TypedEvent::Changed { node, value },
            Err(error) => TypedEvent::Error(error),
        },
        CacheEvent::Deleted { old } => TypedEvent::Deleted { old },
        CacheEvent::Initialized => TypedEvent::Initialized,
        CacheEvent::Error(error) => TypedEvent::Error(error),
    }
}
