//! The recipe runtime: the plumbing every recipe shares, ours and users' own, and the recipe
//! contract as types.
//!
//! - [`Recipe`]: a long-lived recipe (`core()`, `start()`, `close()`), and [`RecipeEvents`] for
//!   one with events (`listenable()`, `stream()`). `curator_testkit::contract` runs the same
//!   checks on every recipe of the workspace through them.
//! - [`RecipeCore`]: what every recipe embeds: its kind and its one name (used by its logs, its
//!   metrics and its unhandled errors), its [`Lifecycle`] and its [`RecipeTasks`];
//!   [`RecipeOptions`]: what every recipe builder has (`metrics_name`).
//! - [`RecipeTasks`]: background work spawned inside the client's task tree. A recipe's tasks
//!   end when the recipe closes them, and when the client closes: `client.close().await`
//!   cancels every recipe task started on the client and waits for them (up to the builder's
//!   `max_close_wait`).
//! - [`Lifecycle`]: the one `Latent → Started → Closed` machine, with
//!   [`Error::AlreadyStarted`](crate::Error::AlreadyStarted) for a second `start()`.
//! - [`Backoff`]: the one doubling pause (with a reset) for loops that retry until they succeed.
//! - [`Hold`]: what a holder of anything (a lock, a lease, leadership) has: its node, a fencing
//!   token, and a [`lost`](Hold::lost) signal that every hold learns by one route (the client's
//!   count of error states, which no circuit breaker holds back).
//!
//! The contract every recipe of this workspace keeps, and that these types make easy to keep:
//! `new(client, path, required…)` when it has no options, `builder(client, path, required…)…
//! build()` otherwise (every builder has `metrics_name`, and `.codec()` where values are
//! stored); `async fn start(&self) -> Result<()>` and `async fn close(&self) -> Result<()>`;
//! `listenable()` and `stream()` as the only listener names; `initialized()` to wait for a
//! recipe's first load or create.
//!
//! ```no_run
//! use std::time::Duration;
//! use curator_framework::recipe::{Backoff, Recipe, RecipeCore, RecipeOptions};
//! use curator_framework::{CuratorFramework, Result};
//!
//! /// A recipe that keeps a node's data fresh, as users write their own.
//! struct Heartbeat {
//!     client: CuratorFramework,
//!     path: String,
//!     core: RecipeCore,
//! }
//!
//! impl Heartbeat {
//!     fn new(client: CuratorFramework, path: &str) -> Self {
//!         let core = RecipeCore::new(&client, "Heartbeat", path, &RecipeOptions::new());
//!         Self { client, path: path.to_owned(), core }
//!     }
//! }
//!
//! impl Recipe for Heartbeat {
//!     fn core(&self) -> &RecipeCore {
//!         &self.core
//!     }
//!
//!     async fn start(&self) -> Result<()> {
//!         self.core.lifecycle().start()?;
//!         let (client, path) = (self.client.clone(), self.path.clone());
//!         self.core.tasks().spawn(async move {
//!             let mut backoff = Backoff::standard();
//!             loop {
//!                 match client.set_data().for_path(&path, b"alive").await {
//!                     Ok(_) => { backoff.reset(); tokio::time::sleep(Duration::from_secs(1)).await }
//!                     Err(_) => backoff.wait().await,
//!                 }
//!             }
//!         }).detach();
//!         Ok(())
//!     }
//!
//!     async fn close(&self) -> Result<()> {
//!         self.core.close_tasks().await;
//!         Ok(())
//!     }
//! }
//! ```

mod backoff;
mod contract;
mod core;
mod hold;
mod lifecycle;
mod sequencer;
mod tasks;

pub use self::core::{RecipeCore, RecipeOptions};
pub use backoff::Backoff;
pub use contract::{Recipe, RecipeEvents};
pub use hold::{Hold, HoldKind};
pub use lifecycle::{Lifecycle, RecipeState};
pub use sequencer::Sequencer;
pub use tasks::{Cancelled, HandleGuard, RecipeTasks, TaskHandle};
