//! [`Recipe`] and [`RecipeEvents`]: the recipe contract as types.

use std::future::Future;

use crate::error::Result;
use crate::listen::{Listenable, ListenerStream};
use crate::recipe::RecipeCore;

/// A long-lived recipe: built (by `new(client, path, required…)` when it has no options, by
/// `builder(client, path, required…)…build()` otherwise), then [`start`](Self::start)ed and
/// [`close`](Self::close)d, with a [`RecipeCore`] inside. Every long-lived recipe of the
/// workspace implements it, and `curator_testkit::contract` checks each one through it.
///
/// Recipes also have `start` and `close` as inherent methods (no import needed); the trait is
/// for code that handles any recipe, as the contract test does.
///
/// ```no_run
/// use curator_framework::Result;
/// use curator_framework::recipe::{Recipe, RecipeState};
///
/// /// Starts every recipe; closes them all again if one fails to start.
/// async fn start_all<R: Recipe>(recipes: &[R]) -> Result<()> {
///     for recipe in recipes {
///         if let Err(error) = recipe.start().await {
///             for started in recipes.iter().filter(|r| r.core().state() == RecipeState::Started) {
///                 let _ = started.close().await;
///             }
///             return Err(error);
///         }
///     }
///     Ok(())
/// }
/// ```
pub trait Recipe: Send + Sync {
    /// What every recipe has: its kind and name, its lifecycle and its tasks.
    fn core(&self) -> &RecipeCore;

    /// Starts the recipe: its background work runs from now on.
    ///
    /// # Errors
    /// [`Error::AlreadyStarted`](crate::Error::AlreadyStarted) when started,
    /// [`Error::Closed`](crate::Error::Closed) when closed; the recipe's own errors (a recipe
    /// that does I/O before it is started stays unstarted then, and may be started again).
    fn start(&self) -> impl Future<Output = Result<()>> + Send;

    /// Closes the recipe for good: its tasks are cancelled and awaited, what it made is undone
    /// (deleted nodes, removed watches) and its listeners hear nothing more. Idempotent; a
    /// recipe that never started closes too, and a close after its client's close is `Ok` when
    /// what the recipe made went with the session.
    ///
    /// Every `close()` of the workspace returns `Result<()>`, the client's
    /// ([`CuratorFramework::close`](crate::CuratorFramework::close)) included: most have an
    /// error to report (the delete of a recipe's node that failed), and one shape lets
    /// `x.close().await?` read the same everywhere.
    ///
    /// # Errors
    /// The recipe's cleanup that failed (it goes on in the background where it can).
    fn close(&self) -> impl Future<Output = Result<()>> + Send;
}

/// A [`Recipe`] with events: heard through [`listenable`](Self::listenable) and
/// [`stream`](Self::stream), the only two listener names of the workspace.
///
/// ```no_run
/// use futures::StreamExt;
/// use curator_framework::recipe::RecipeEvents;
///
/// /// The first event `recipe` publishes after its start.
/// async fn first_event<R: RecipeEvents>(recipe: &R) -> Option<R::Event> {
///     let mut events = recipe.stream();
///     recipe.start().await.ok()?;
///     events.next().await
/// }
/// ```
pub trait RecipeEvents: Recipe {
    /// What the recipe's listeners hear.
    type Event: Clone + Send + 'static;

    /// Where to add listeners (closures, objects, senders).
    fn listenable(&self) -> Listenable<Self::Event>;

    /// Every event from now on, as a stream (`listenable().stream()`); it ends when the
    /// client closes.
    fn stream(&self) -> ListenerStream<Self::Event> {
        self.listenable().stream()
    }
}
