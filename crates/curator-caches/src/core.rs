//! The part every cache handle shares: starting, closing and reading the engine's map.

use std::sync::Arc;

use curator_framework::listen::{Listenable, ListenerHandle};
use curator_framework::{CuratorFramework, Error, Result};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::engine::{self, Command, Config, EventSink, Shared, WatchMode};
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
        commands: mpsc::UnboundedSender<Command>,
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
    pub(crate) fn new(client: CuratorFramework, config: Config) -> Self {
        let events = client.listener_container::<CacheEvent>(config.name);
        Self {
            root: Arc::clone(&config.root),
            shared: Shared::new(EventSink(events)),
            client,
            lifecycle: Mutex::new(Lifecycle::Latent(config)),
        }
    }

    pub(crate) fn start(&self) -> Result<()> {
        let mut lifecycle = self.lifecycle.lock();
        match std::mem::replace(&mut *lifecycle, Lifecycle::Closed) {
            Lifecycle::Latent(config) => {
                let (commands, receiver) = mpsc::unbounded_channel();
                let task = engine::spawn(
                    self.client.clone(),
                    config,
                    Arc::clone(&self.shared),
                    receiver,
                );
                *lifecycle = Lifecycle::Started { commands, task };
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
        if let Lifecycle::Started { commands, task } = previous {
            let (done, stopped) = oneshot::channel();
            if commands.send(Command::Close(done)).is_ok() {
                let _ = stopped.await;
            }
            let _ = task.await;
        }
    }

    pub(crate) fn listenable(&self) -> Listenable<CacheEvent> {
        self.shared.events.0.listenable()
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

    pub(crate) fn is_initialized(&self) -> bool {
        self.shared.is_initialized()
    }
}
