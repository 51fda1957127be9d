//! [`RecipeCore`] and [`RecipeOptions`]: what every recipe embeds, and the options every
//! recipe builder has.

use std::fmt;

use crate::client::CuratorFramework;
use crate::listen::ListenerContainer;
use crate::metrics::RecipeName;
use crate::recipe::{HandleGuard, Lifecycle, RecipeState, RecipeTasks};

/// The options every recipe builder has, whatever the recipe: today its name
/// ([`metrics_name`](Self::metrics_name)). A builder keeps one and hands it to
/// [`RecipeCore::new`].
///
/// ```
/// use curator_framework::recipe::RecipeOptions;
/// let options = RecipeOptions::new().metrics_name("orders");
/// assert_eq!(options.name_for("/locks/orders-17").as_str(), "orders");
/// assert_eq!(RecipeOptions::new().name_for("/locks/orders-17").as_str(), "/locks/orders-17");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecipeOptions {
    metrics_name: Option<String>,
}

impl RecipeOptions {
    /// No options: the recipe is named by its path.
    pub fn new() -> Self {
        Self::default()
    }

    /// The recipe's name, instead of its path: the `name` label of its metrics, and what its
    /// logs and its unhandled errors say (after its kind). Recipes sharing a name share their
    /// metric series, so give each of a bounded set its own.
    pub fn metrics_name(mut self, name: impl Into<String>) -> Self {
        self.metrics_name = Some(name.into());
        self
    }

    /// The name of a recipe at `path` with these options.
    pub fn name_for(&self, path: &str) -> RecipeName {
        RecipeName::new(self.metrics_name.as_deref(), path)
    }
}

/// What every recipe embeds: its kind (its type's name), its one name, its
/// [`Lifecycle`] and its [`RecipeTasks`]. The tasks and the listener containers made with
/// [`listener_container`](Self::listener_container) report under one label,
/// `"<kind> <name>"` (`LeaderLatch /election/reports`), in logs and in the client's unhandled
/// errors; metrics take the name as their `name` label.
///
/// ```no_run
/// # fn demo(client: curator_framework::CuratorFramework) {
/// use curator_framework::recipe::{RecipeCore, RecipeOptions, RecipeState};
/// let core = RecipeCore::new(&client, "Heartbeat", "/heartbeats/a", &RecipeOptions::new());
/// assert_eq!(core.label(), "Heartbeat /heartbeats/a");
/// assert_eq!(core.state(), RecipeState::Latent);
/// let events = core.listener_container::<u64>(&client); // named like the tasks
/// # drop(events);
/// # }
/// ```
pub struct RecipeCore {
    kind: &'static str,
    name: RecipeName,
    lifecycle: Lifecycle,
    tasks: RecipeTasks,
}

impl fmt::Debug for RecipeCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecipeCore")
            .field("kind", &self.kind)
            .field("name", &self.name.as_str())
            .field("state", &self.lifecycle.state())
            .field("tasks", &self.tasks.len())
            .finish()
    }
}

impl RecipeCore {
    /// The core of a recipe of `kind` (its type's name) at `path`, named by `options` (its
    /// path unless renamed), with its tasks on `client`.
    pub fn new(
        client: &CuratorFramework,
        kind: &'static str,
        path: &str,
        options: &RecipeOptions,
    ) -> Self {
        let name = options.name_for(path);
        Self {
            tasks: client.recipe_tasks(&format!("{kind} {}", name.as_str())),
            kind,
            name,
            lifecycle: Lifecycle::new(),
        }
    }

    /// The recipe's kind: its type's name.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The recipe's name: the builder's `metrics_name`, or its path.
    pub fn name(&self) -> &RecipeName {
        &self.name
    }

    /// What the recipe reports under: `"<kind> <name>"`.
    pub fn label(&self) -> &str {
        self.tasks.name()
    }

    /// The recipe's lifecycle.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }

    /// Where the recipe is in its life.
    pub fn state(&self) -> RecipeState {
        self.lifecycle.state()
    }

    /// The recipe's background tasks.
    pub fn tasks(&self) -> &RecipeTasks {
        &self.tasks
    }

    /// A guard for the recipe's user-facing handles (see [`RecipeTasks::handle_guard`]).
    pub fn handle_guard(&self) -> HandleGuard {
        self.tasks.handle_guard()
    }

    /// A container for the recipe's events, reporting under the recipe's label.
    pub fn listener_container<E: Clone + Send + 'static>(
        &self,
        client: &CuratorFramework,
    ) -> ListenerContainer<E> {
        client.listener_container(self.label())
    }

    /// The part of `close()` every recipe shares: the first call moves the lifecycle to
    /// `Closed`, cancels the recipe's tasks and waits for them; it returns whether this call
    /// did (so the caller does the rest of its cleanup once).
    ///
    /// # Cancellation safety
    /// The recipe is closed and its tasks cancelled at the first poll; dropping the future
    /// only stops the wait.
    pub async fn close_tasks(&self) -> bool {
        if !self.lifecycle.close() {
            return false;
        }
        let _ = self.tasks.close().await;
        true
    }
}
