//! The recipe runtime: the plumbing every recipe shares, ours and users' own.
//!
//! - [`RecipeTasks`]: background work spawned inside the client's task tree. A recipe's tasks
//!   end when the recipe closes them, and when the client closes: `client.close().await` cancels
//!   every recipe task started on the client and waits for them (up to the builder's
//!   `max_close_wait`).
//! - [`Lifecycle`]: the one `Latent → Started → Closed` machine, with
//!   [`Error::AlreadyStarted`](crate::Error::AlreadyStarted) for a second `start()`.
//! - [`Backoff`]: the one doubling pause (with a reset) for loops that retry until they succeed.
//! - [`Hold`]: what a holder of anything (a lock, a lease, leadership) has: its node, a fencing
//!   token, and a [`lost`](Hold::lost) signal.
//!
//! The contract every recipe of this workspace keeps, and that these types make easy to keep:
//! `new(client, path, required…)` when it has no options, `builder(client, path)…build()`
//! otherwise; `async fn start(&self) -> Result<()>` and `async fn close(&self) -> Result<()>`;
//! `listenable()` and `stream()` as the only listener names.
//!
//! ```no_run
//! use std::time::Duration;
//! use curator_framework::recipe::{Backoff, Lifecycle, RecipeTasks};
//! use curator_framework::{CuratorFramework, Result};
//!
//! /// A recipe that keeps a node's data fresh, as users write their own.
//! struct Heartbeat {
//!     client: CuratorFramework,
//!     path: String,
//!     lifecycle: Lifecycle,
//!     tasks: RecipeTasks,
//! }
//!
//! impl Heartbeat {
//!     fn new(client: CuratorFramework, path: &str) -> Self {
//!         let tasks = client.recipe_tasks("heartbeat");
//!         Self { client, path: path.to_owned(), lifecycle: Lifecycle::new(), tasks }
//!     }
//!
//!     async fn start(&self) -> Result<()> {
//!         self.lifecycle.start()?;
//!         let (client, path) = (self.client.clone(), self.path.clone());
//!         self.tasks.spawn(async move {
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
//!         if self.lifecycle.close() {
//!             self.tasks.close().await;
//!         }
//!         Ok(())
//!     }
//! }
//! ```

mod backoff;
mod hold;
mod lifecycle;
mod tasks;

pub use backoff::Backoff;
pub use hold::{Hold, HoldKind};
pub use lifecycle::{Lifecycle, RecipeState};
pub use tasks::{Cancelled, HandleGuard, RecipeTasks, TaskHandle};
