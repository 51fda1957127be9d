//! The part every cache handle shares, and delegates to: the engine's state, and the cache's
//! recipe core (its name, lifecycle and background task).

use std::sync::Arc;
use std::time::Duration;

use curator_framework::listen::Listenable;
use curator_framework::recipe::{RecipeCore, TaskHandle};
use curator_framework::{CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::engine::{self, Barrier, Config, Shared, WatchMode};
use crate::event::{CacheEvent, ChildData};

/// A cache's engine, with its recipe core.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) client: CuratorFramework,
    pub(crate) shared: Arc<Shared>,
    pub(crate) root: Arc<str>,
    pub(crate) recipe: RecipeCore,
    /// The settings, until `start` hands them to the engine.
    config: Mutex<Option<Config>>,
    /// The engine's task; dropping the last handle of a cache (and so this) stops it.
    engine: Mutex<Option<TaskHandle>>,
    /// Waits for zxids, to the engine (kept until it starts).
    barriers: mpsc::UnboundedSender<Barrier>,
    /// The engine's end of `barriers`, until `start` hands it over.
    requests: Mutex<Option<mpsc::UnboundedReceiver<Barrier>>>,
}

impl Core {
    /// A latent engine for `config`, once its root is checked.
    pub(crate) fn build(client: CuratorFramework, config: Config) -> Result<Arc<Self>> {
        paths::validate(&config.root)?;
        let recipe = RecipeCore::new(&client, config.kind, &config.root, &config.options);
        let events = recipe.listener_container::<CacheEvent>(&client);
        let (barriers, requests) = mpsc::unbounded_channel();
        Ok(Arc::new(Self {
            barriers,
            requests: Mutex::new(Some(requests)),
            root: Arc::clone(&config.root),
            shared: Shared::new(events, Arc::clone(&config.root), recipe.name().clone()),
            recipe,
            client,
            config: Mutex::new(Some(config)),
            engine: Mutex::new(None),
        }))
    }

    /// Starts the engine in the background.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub(crate) fn start(&self) -> Result<()> {
        self.recipe.lifecycle().start()?;
        let config = self
            .config
            .lock()
            .take()
            .expect("the settings stay until the one start");
        let requests = self
            .requests
            .lock()
            .take()
            .expect("the receiver stays until the one start");
        let engine = engine::spawn(
            self.recipe.tasks(),
            self.client.clone(),
            config,
            Arc::clone(&self.shared),
            requests,
        );
        *self.engine.lock() = Some(engine);
        Ok(())
    }

    /// Stops the engine (removing its watches) and waits for it. Idempotent.
    pub(crate) async fn close(&self) -> Result<()> {
        if self.recipe.close_tasks().await {
            self.engine.lock().take();
        }
        self.shared.stopped();
        Ok(())
    }

    /// Waits for the initial load: `Ok` once done, [`Error::Closed`] when the cache stopped
    /// first (closed, or its client closed, started or not).
    pub(crate) async fn initialized(&self) -> Result<()> {
        let loaded = tokio::select! {
            biased;
            loaded = self.shared.wait_initialized() => loaded,
            () = self.recipe.tasks().cancelled() => self.shared.is_initialized(),
        };
        if loaded { Ok(()) } else { Err(Error::Closed) }
    }

    /// Waits until the cache reflects every change up to `zxid` (see the caches' `wait_for`);
    /// a wait made before `start` is taken up when the cache starts.
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passes first; [`Error::Closed`] when the cache (or its
    /// client) closes first; a catch-up's error that retrying cannot fix.
    pub(crate) async fn wait_for(&self, zxid: i64, timeout: Duration) -> Result<()> {
        let closed = self.recipe.tasks().cancelled();
        engine::wait_for(&self.barriers, zxid, timeout, closed).await
    }

    pub(crate) fn listenable(&self) -> Listenable<CacheEvent> {
        self.shared.events.listenable()
    }

    pub(crate) fn get(&self, path: &str) -> Option<ChildData> {
        self.shared.get(path)
    }

    pub(crate) fn active_mode(&self) -> Option<WatchMode> {
        *self.shared.active.lock()
    }
}
