//! The part every cache handle shares, and delegates to: the engine's state, the cache's
//! lifecycle and its background task.

use std::sync::Arc;

use curator_framework::listen::Listenable;
use curator_framework::recipe::{Lifecycle, RecipeState, RecipeTasks, TaskHandle};
use curator_framework::{CuratorFramework, Error, Result, paths};
use parking_lot::Mutex;

use crate::engine::{self, Config, Shared, WatchMode};
use crate::event::{CacheEvent, ChildData};

/// A cache's engine, with its lifecycle.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) client: CuratorFramework,
    pub(crate) shared: Arc<Shared>,
    pub(crate) root: Arc<str>,
    lifecycle: Lifecycle,
    tasks: RecipeTasks,
    /// The settings, until `start` hands them to the engine.
    config: Mutex<Option<Config>>,
    /// The engine's task; dropping the last handle of a cache (and so this) stops it.
    engine: Mutex<Option<TaskHandle>>,
}

impl Core {
    /// A latent engine for `config`, once its root is checked.
    pub(crate) fn build(client: CuratorFramework, config: Config) -> Result<Arc<Self>> {
        paths::validate(&config.root)?;
        let events = client.listener_container::<CacheEvent>(config.name);
        Ok(Arc::new(Self {
            root: Arc::clone(&config.root),
            shared: Shared::new(
                events,
                Arc::clone(&config.root),
                curator_framework::metrics::RecipeName::new(
                    config.metrics_name.as_deref(),
                    &config.root,
                ),
            ),
            tasks: client.recipe_tasks(config.name),
            client,
            lifecycle: Lifecycle::new(),
            config: Mutex::new(Some(config)),
            engine: Mutex::new(None),
        }))
    }

    /// `Ok` while the cache may still start: for caches that do some work before starting, so
    /// a second `start` fails before doing it again.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`], [`Error::Closed`].
    pub(crate) fn check_latent(&self) -> Result<()> {
        match self.lifecycle.state() {
            RecipeState::Started => Err(Error::AlreadyStarted),
            RecipeState::Closed => Err(Error::Closed),
            _ => Ok(()),
        }
    }

    /// Starts the engine in the background.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`] when started, [`Error::Closed`] when closed.
    pub(crate) fn start(&self) -> Result<()> {
        self.lifecycle.start()?;
        let config = self
            .config
            .lock()
            .take()
            .expect("the settings stay until the one start");
        let engine = engine::spawn(
            &self.tasks,
            self.client.clone(),
            config,
            Arc::clone(&self.shared),
        );
        *self.engine.lock() = Some(engine);
        Ok(())
    }

    /// Stops the engine (removing its watches) and waits for it. Idempotent.
    pub(crate) async fn close(&self) {
        if self.lifecycle.close() {
            self.tasks.close().await;
            self.engine.lock().take();
        }
        self.shared.stopped();
    }

    /// Waits for the initial load: `true` once done, `false` when the cache stopped first
    /// (closed, or its client closed, started or not).
    pub(crate) async fn initialized(&self) -> bool {
        tokio::select! {
            biased;
            loaded = self.shared.wait_initialized() => loaded,
            () = self.tasks.cancelled() => self.shared.is_initialized(),
        }
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
