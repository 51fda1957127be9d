//! The part every cache handle shares: starting, closing and reading the engine's map, and the
//! methods the handles have in common.

use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerHandle};
use curator_framework::{CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::engine::{self, Config, Shared, WatchMode};
use crate::event::{CacheEvent, ChildData};
use crate::listener::CuratorCacheListener;

/// Default bound on reads in flight at once during a load.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: usize = 256;
/// Default bound on the children listed per node.
pub(crate) const DEFAULT_MAX_CHILDREN: usize = 100_000;

#[derive(Debug)]
enum Lifecycle {
    Latent(Config),
    Started {
        stop: oneshot::Sender<()>,
        task: tokio::task::JoinHandle<()>,
    },
    Closed,
}

/// A cache's engine, with its lifecycle.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) client: CuratorFramework,
    pub(crate) shared: Arc<Shared>,
    pub(crate) root: Arc<str>,
    lifecycle: Mutex<Lifecycle>,
}

impl Core {
    /// A latent engine for `config`, once its root is checked.
    pub(crate) fn build(client: CuratorFramework, config: Config) -> Result<Arc<Self>> {
        paths::validate(&config.root)?;
        let events = client.listener_container::<CacheEvent>(config.name);
        Ok(Arc::new(Self {
            root: Arc::clone(&config.root),
            shared: Shared::new(events, Arc::clone(&config.root)),
            client,
            lifecycle: Mutex::new(Lifecycle::Latent(config)),
        }))
    }

    pub(crate) fn start(&self) -> Result<()> {
        let mut lifecycle = self.lifecycle.lock();
        match std::mem::replace(&mut *lifecycle, Lifecycle::Closed) {
            Lifecycle::Latent(config) => {
                let (stop, stopped) = oneshot::channel();
                let task = engine::spawn(
                    self.client.clone(),
                    config,
                    Arc::clone(&self.shared),
                    stopped,
                );
                *lifecycle = Lifecycle::Started { stop, task };
                Ok(())
            }
            other => {
                let closed = matches!(other, Lifecycle::Closed);
                *lifecycle = other;
                Err(Error::InvalidArgument(if closed {
                    "the cache is closed".to_owned()
                } else {
                    "the cache is already started".to_owned()
                }))
            }
        }
    }

    pub(crate) async fn close(&self) {
        let previous = std::mem::replace(&mut *self.lifecycle.lock(), Lifecycle::Closed);
        self.shared.stopped();
        if let Lifecycle::Started { stop, task } = previous {
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    pub(crate) fn listenable(&self) -> Listenable<CacheEvent> {
        self.shared.events.listenable()
    }

    pub(crate) fn add_listener(&self, listener: CuratorCacheListener) -> ListenerHandle {
        self.listenable().add_listener_object(Arc::new(listener))
    }

    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        self.shared.get(path)
    }

    pub(crate) fn active_mode(&self) -> Option<WatchMode> {
        *self.shared.active.lock()
    }
}

/// The methods of every cache handle that reports [`CacheEvent`]s (a struct with a
/// `core: Arc<Core>` field): waiting for the initial load, closing, listeners, typed views.
macro_rules! event_methods {
    () => {
        /// Waits until the initial load is done (when `Initialized` is published): `true` then,
        /// `false` when the cache stopped first (closed, or its client closed).
        ///
        /// # Cancellation safety
        /// Safe: it only waits.
        pub async fn initialized(&self) -> bool {
            self.core.shared.wait_initialized().await
        }

        /// Stops following the server and removes the cache's watches. The content stays
        /// readable. Idempotent.
        ///
        /// # Cancellation safety
        /// Dropping the future leaves the cache stopping in the background.
        pub async fn close(&self) {
            self.core.close().await;
        }

        /// Where to add listeners of [`CacheEvent`](crate::CacheEvent)s (closures, objects,
        /// senders or a stream).
        pub fn listenable(&self) -> curator_framework::listen::Listenable<$crate::CacheEvent> {
            self.core.listenable()
        }

        /// Adds a [`CuratorCacheListener`](crate::CuratorCacheListener); dropping the handle
        /// removes it.
        pub fn add_listener(
            &self,
            listener: $crate::CuratorCacheListener,
        ) -> curator_framework::listen::ListenerHandle {
            self.core.add_listener(listener)
        }

        /// A view that decodes node data as `T` with JSON.
        pub fn typed<T: serde::Serialize + serde::de::DeserializeOwned>(
            &self,
        ) -> $crate::TypedCache<T, curator_framework::codec::Json> {
            $crate::TypedCache::new(
                std::sync::Arc::clone(&self.core),
                curator_framework::codec::Json,
            )
        }

        /// A view that decodes node data as `T` with `codec` (any of
        /// [`curator_framework::codec`], or your own).
        pub fn typed_with<T, C: curator_framework::codec::Codec<T>>(
            &self,
            codec: C,
        ) -> $crate::TypedCache<T, C> {
            $crate::TypedCache::new(std::sync::Arc::clone(&self.core), codec)
        }
    };
}

/// The methods of the subtree caches ([`CuratorCache`](crate::CuratorCache) and
/// [`TreeCache`](crate::TreeCache)), on top of [`event_methods`].
macro_rules! subtree_methods {
    () => {
        $crate::core::event_methods!();

        /// Starts loading and following the tree, in the background. Add listeners first to
        /// hear the initial load's `Created` events.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`](curator_framework::Error::InvalidArgument) when already
        /// started or closed.
        pub fn start(&self) -> curator_framework::Result<()> {
            self.core.start()
        }

        /// Whether the initial load is done.
        pub fn is_initialized(&self) -> bool {
            self.core.shared.is_initialized()
        }

        /// The cached node at `path` (Curator's `getCurrentData`).
        pub fn get(&self, path: &str) -> Option<$crate::ChildData> {
            self.core.get(path)
        }

        /// The cached children of `path`, sorted by path (Curator's `getCurrentChildren`).
        pub fn children(&self, path: &str) -> Vec<$crate::ChildData> {
            self.core.shared.children(path)
        }

        /// Every cached node, sorted by path.
        pub fn snapshot(&self) -> Vec<$crate::ChildData> {
            self.core.shared.snapshot()
        }

        /// How many nodes are cached.
        pub fn len(&self) -> usize {
            self.core.shared.len()
        }

        /// Whether nothing is cached.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    };
}

/// The options of the subtree caches' builders (a struct with a `config: Config` field).
macro_rules! builder_options {
    () => {
        /// Keeps stats only, not data (Curator's `DO_NOT_CACHE_DATA`): events and reads carry
        /// `data() == None`.
        pub fn without_data(mut self) -> Self {
            self.config.cache_data = false;
            self
        }

        /// Nodes with more children than this are not listed; the cache reports
        /// [`CacheError::TooManyChildren`](crate::CacheError::TooManyChildren) instead
        /// (default 100,000).
        pub fn max_children(mut self, limit: usize) -> Self {
            self.config.max_children = limit;
            self
        }

        /// How many reads a load keeps in flight at once (default 256, at least 1).
        pub fn max_in_flight(mut self, reads: usize) -> Self {
            self.config.max_in_flight = reads.max(1);
            self
        }
    };
}

pub(crate) use {builder_options, event_methods, subtree_methods};
