//! The recipe contract, checked the same way for every recipe of the workspace through the
//! framework's [`Recipe`] and [`RecipeEvents`] types.
//!
//! A long-lived recipe runs [`check`] (or [`check_events`], for one with events) and
//! [`ends_with_its_client`] (or [`ends_with_its_client_quietly`]); holders check their holds
//! with [`holds`]; every crate asserts its handles, builders and guards `Send + Sync` with
//! [`send_sync`]. What is checked:
//!
//! - `start()` once: a second start is `Error::AlreadyStarted`; the recipe's work runs as the
//!   client's recipe tasks;
//! - events heard through `listenable()` and through `stream()` alike;
//! - `close()` twice (idempotent), and a start after it is `Error::Closed`; no recipe task left;
//! - the client's close with the recipe still started: its tasks end, nobody hears anything
//!   more, its streams end, and its own `close()` still returns `Ok`;
//! - a hold is the framework's `Hold`: its node exists on the holder's session, its fencing
//!   token is the node's creation zxid, and it is not lost.
//!
//! ```no_run
//! use curator_framework::CuratorFramework;
//! use curator_framework::recipe::RecipeEvents;
//!
//! /// The contract of a recipe that reports a node created under `root`.
//! async fn contract<R: RecipeEvents>(client: &CuratorFramework, recipe: &R, root: &str)
//! where
//!     R::Event: std::fmt::Debug,
//! {
//!     let child = format!("{root}/a");
//!     curator_testkit::contract::check_events(
//!         client,
//!         recipe,
//!         async || curator_testkit::create(client, &child).await,
//!         |_event| true,
//!     )
//!     .await;
//! }
//! ```

use std::fmt::Debug;
use std::time::Duration;

use curator_framework::listen::{Listenable, ListenerHandle, ListenerStream};
use curator_framework::recipe::{Hold, Recipe, RecipeEvents, RecipeState};
use curator_framework::{CuratorFramework, Error};
use curator_test::Timing;
use futures::StreamExt;
use tokio::sync::mpsc;

/// Compiles only for `Send + Sync` types: `send_sync::<LockGuard>()`.
pub fn send_sync<T: Send + Sync>() {}

/// A closure listener on `listenable` that forwards what it hears; keep the handle while
/// listening.
pub fn listen<E: Clone + Send + 'static>(
    listenable: &Listenable<E>,
) -> (ListenerHandle, mpsc::UnboundedReceiver<E>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let handle = listenable.add_listener(move |event| {
        let _ = sender.send(event);
    });
    (handle, receiver)
}

/// Where a test hears a recipe's events: a listener and a stream, both added before it starts.
#[derive(Debug)]
pub struct Heard<E> {
    _listening: ListenerHandle,
    listener: mpsc::UnboundedReceiver<E>,
    stream: ListenerStream<E>,
}

impl<E: Clone + Debug + Send + 'static> Heard<E> {
    /// A listener and a stream on `listenable`.
    pub fn on(listenable: &Listenable<E>) -> Self {
        let (listening, listener) = listen(listenable);
        Self {
            _listening: listening,
            listener,
            stream: listenable.stream(),
        }
    }

    /// Waits (up to [`Timing::wait`]) until both the listener and the stream heard an event
    /// `matches` accepts, skipping others.
    ///
    /// # Panics
    /// When either did not hear one in time.
    pub async fn both(&mut self, what: &str, matches: impl Fn(&E) -> bool) {
        let listener = &mut self.listener;
        hear(
            &format!("{what} (listener)"),
            async || listener.recv().await,
            &matches,
        )
        .await;
        let stream = &mut self.stream;
        hear(
            &format!("{what} (stream)"),
            async || stream.next().await,
            &matches,
        )
        .await;
    }

    /// After the client's close: the listener hears nothing `unheard` accepts (what it was
    /// handed before is skipped), and the stream hands out what it had, none of it `unheard`,
    /// then ends.
    ///
    /// # Panics
    /// When an `unheard` event comes, or the stream does not end within [`Timing::wait`].
    pub async fn nothing_more(&mut self, unheard: impl Fn(&E) -> bool) {
        while let Ok(event) = self.listener.try_recv() {
            assert!(
                !unheard(&event),
                "a listener heard {event:?} after the close"
            );
        }
        let stream = &mut self.stream;
        let ended = tokio::time::timeout(Timing::new().wait(), async {
            while let Some(event) = stream.next().await {
                assert!(!unheard(&event), "a stream heard {event:?} after the close");
            }
        })
        .await;
        assert!(ended.is_ok(), "the stream did not end with the client");
    }
}

/// Waits (up to [`Timing::wait`]) for an event `matches` accepts from `next`, skipping others.
async fn hear<E: Debug>(
    what: &str,
    mut next: impl AsyncFnMut() -> Option<E>,
    matches: impl Fn(&E) -> bool,
) {
    let found = tokio::time::timeout(Timing::new().wait(), async {
        while let Some(event) = next().await {
            if matches(&event) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{what} was not heard");
}

/// Waits until `client` runs no recipe task. A recipe's `close()` returns once its tasks
/// ended; the client's count of them drops a moment later (on the task's own thread), so it
/// is polled.
///
/// # Panics
/// When tasks are still running after [`Timing::wait`].
pub async fn no_recipe_tasks(client: &CuratorFramework) {
    crate::eventually("the recipe tasks to end", || {
        std::future::ready(client.metrics().recipe_tasks == 0)
    })
    .await;
}

/// The recipe contract for `recipe`, built on `client` and not started (and nothing else of
/// the client's running recipe tasks): `start()` once (`AlreadyStarted` the second time), its
/// work running as the client's recipe tasks, `while_started`, then `close()` twice, a start
/// after it `Closed`, and no recipe task left.
///
/// # Panics
/// Where the recipe breaks the contract.
pub async fn check<R: Recipe>(
    client: &CuratorFramework,
    recipe: &R,
    while_started: impl AsyncFnOnce(),
) {
    let core = recipe.core();
    let what = core.label().to_owned();
    assert_eq!(
        core.state(),
        RecipeState::Latent,
        "{what}: built, not started"
    );
    recipe.start().await.expect("the recipe starts");
    assert_eq!(core.state(), RecipeState::Started, "{what}");
    assert_eq!(
        recipe.start().await,
        Err(Error::AlreadyStarted),
        "{what}: a second start"
    );
    while_started().await;
    assert_eq!(recipe.close().await, Ok(()), "{what}: close");
    assert_eq!(recipe.close().await, Ok(()), "{what}: a second close");
    assert_eq!(core.state(), RecipeState::Closed, "{what}");
    assert_eq!(
        recipe.start().await,
        Err(Error::Closed),
        "{what}: a start after close"
    );
    no_recipe_tasks(client).await;
}

/// [`check`] for a recipe with events: a listener and a stream added before the start both
/// hear an event `heard` accepts once `cause` ran.
///
/// # Panics
/// Where the recipe breaks the contract.
pub async fn check_events<R: RecipeEvents>(
    client: &CuratorFramework,
    recipe: &R,
    cause: impl AsyncFnOnce(),
    heard: impl Fn(&R::Event) -> bool,
) where
    R::Event: Debug,
{
    let mut events = Heard::on(&recipe.listenable());
    check(client, recipe, async || {
        cause().await;
        events.both("the event", &heard).await;
    })
    .await;
}

/// The client's close ends `recipe` (on `client`, not started, and the client's only recipe):
/// started, then `work` run (to make something happen, if the start alone does not), and once
/// `working` accepted an event through its listener and its stream (its work running as the
/// client's recipe tasks), the client closes: the recipe's tasks end; a change `cause` makes
/// (through another client) that the recipe would report as an event `unheard` accepts is heard
/// by nobody; the stream ends; and the recipe's own `close()` still returns `Ok` (what it made
/// went with the session), after which it is closed for good.
///
/// # Panics
/// Where the recipe breaks the contract.
pub async fn ends_with_its_client<R: RecipeEvents>(
    client: &CuratorFramework,
    recipe: &R,
    work: impl AsyncFnOnce(),
    working: impl Fn(&R::Event) -> bool,
    cause: impl AsyncFnOnce(),
    unheard: impl Fn(&R::Event) -> bool,
) where
    R::Event: Debug,
{
    let mut events = Heard::on(&recipe.listenable());
    recipe.start().await.expect("the recipe starts");
    work().await;
    events.both("the recipe at work", working).await;
    assert!(
        client.metrics().recipe_tasks >= 1,
        "the recipe works as the client's recipe tasks"
    );
    client.close().await.expect("the client closes");
    assert_eq!(client.metrics().recipe_tasks, 0, "every recipe task ended");
    cause().await;
    // Nothing to wait for: a listener that would hear the change hears it within this.
    tokio::time::sleep(Timing::new().scale(Duration::from_millis(500))).await;
    events.nothing_more(unheard).await;
    closed_after_its_client(recipe).await;
}

/// [`ends_with_its_client`] for a recipe without events: started, its work running as the
/// client's recipe tasks, it ends with the client's close and still closes after it.
///
/// # Panics
/// Where the recipe breaks the contract.
pub async fn ends_with_its_client_quietly<R: Recipe>(client: &CuratorFramework, recipe: &R) {
    recipe.start().await.expect("the recipe starts");
    assert!(
        client.metrics().recipe_tasks >= 1,
        "the recipe works as the client's recipe tasks"
    );
    client.close().await.expect("the client closes");
    assert_eq!(client.metrics().recipe_tasks, 0, "every recipe task ended");
    closed_after_its_client(recipe).await;
}

async fn closed_after_its_client<R: Recipe>(recipe: &R) {
    assert_eq!(recipe.close().await, Ok(()), "a close after the client's");
    assert_eq!(recipe.start().await, Err(Error::Closed));
}

/// `hold` is a hold on a node of `client`'s current session: the node exists, its fencing token
/// is the node's creation zxid, and it is not lost.
///
/// # Panics
/// When it is not.
pub async fn holds(client: &CuratorFramework, hold: &Hold) {
    let stat = client
        .check_exists()
        .for_path(hold.node_path())
        .await
        .expect("the hold's node can be read")
        .expect("the hold's node exists");
    assert_eq!(hold.fencing_token(), stat.czxid, "the token is the czxid");
    assert_eq!(
        hold.session_id(),
        Some(stat.ephemeral_owner),
        "on the session"
    );
    assert_eq!(
        client.session_id(),
        hold.session_id(),
        "the client's session"
    );
    assert!(!hold.is_lost(), "a fresh hold is not lost");
}
