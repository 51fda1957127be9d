//! Listener containers: how the framework and every recipe deliver events to user code.
//!
//! A [`ListenerContainer`] belongs to whoever publishes events (the client, a recipe); users add
//! listeners through its [`Listenable`] view: closures, async closures, trait objects, channels, or
//! a [`Stream`](futures::Stream). Events are delivered in publication order on a task of their
//! own, so a slow listener never stalls the session, and calling the client from a listener is
//! fine. For each event, the listeners of a container are called one after the other in the
//! order they were added (a recipe may rely on a listener it added first having seen the event). A listener that panics is caught, reported to the client's unhandled-error listeners,
//! and keeps receiving later events.
//!
//! ```no_run
//! # async fn demo(client: curator_framework::CuratorFramework) {
//! use curator_framework::ConnectionState;
//! let handle = client.connection_state_listenable().add_listener(|state: ConnectionState| {
//!     println!("connection: {state}");
//! });
//! // ... the listener runs until `handle` is dropped (or `handle.detach()` keeps it forever).
//! drop(handle);
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

/// A listener implemented as a type rather than a closure.
pub trait Listener<E>: Send + Sync {
    /// Called once per event, in publication order.
    fn on_event(&self, event: E);
}

/// A failure that happened where no caller could receive it: a panicking listener, a background
/// task that gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnhandledError {
    /// Where it happened.
    pub context: String,
    /// What happened.
    pub message: String,
}

impl fmt::Display for UnhandledError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.message)
    }
}

/// A registered listener. `Sync` returns `false` when it is gone for good (a channel whose
/// receiver was dropped), and is then removed.
enum Entry<E> {
    Sync(Arc<dyn Fn(E) -> bool + Send + Sync>),
    Async(Arc<dyn Fn(E) -> BoxFuture<'static, ()> + Send + Sync>),
}

impl<E> Clone for Entry<E> {
    fn clone(&self) -> Self {
        match self {
            Entry::Sync(f) => Entry::Sync(Arc::clone(f)),
            Entry::Async(f) => Entry::Async(Arc::clone(f)),
        }
    }
}

impl<E: Send + 'static> Entry<E> {
    /// This listener as a listener of `S` events, through `map` (events it maps to `None` are
    /// not delivered).
    fn map_from<S: 'static>(self, map: Arc<dyn Fn(S) -> Option<E> + Send + Sync>) -> Entry<S> {
        match self {
            Entry::Sync(f) => Entry::Sync(Arc::new(move |source| match map(source) {
                Some(event) => f(event),
                None => true,
            })),
            Entry::Async(f) => Entry::Async(Arc::new(move |source| match map(source) {
                Some(event) => f(event),
                None => Box::pin(std::future::ready(())),
            })),
        }
    }
}

/// One listener's own step from source events to the events it hears (a per-listener state
/// machine, such as a connection-state circuit breaker).
pub(crate) type Step<S, E> = Box<dyn FnMut(S) -> Vec<E> + Send>;

impl<E: Send + 'static> Entry<E> {
    /// This listener as a listener of `S` events, each turned by `step` into the events (none,
    /// one or more, in order) it hears.
    fn flat_map_from<S: 'static>(self, step: Step<S, E>) -> Entry<S> {
        let step = Arc::new(Mutex::new(step));
        match self {
            Entry::Sync(f) => Entry::Sync(Arc::new(move |source| {
                // The lock is released before the listener runs.
                let events = (step.lock())(source);
                events.into_iter().all(|event| f(event))
            })),
            Entry::Async(f) => Entry::Async(Arc::new(move |source| {
                let events = (step.lock())(source);
                let f = Arc::clone(&f);
                Box::pin(async move {
                    for event in events {
                        f(event).await;
                    }
                })
            })),
        }
    }
}

struct Listeners<E> {
    name: String,
    entries: Mutex<Vec<(u64, Entry<E>)>>,
    next_id: AtomicU64,
    errors: Option<ListenerContainer<UnhandledError>>,
    /// Cancelled when the owning client closes: streams end then.
    closed: Option<CancellationToken>,
}

/// Where the dispatcher runs: on the client's task tracker, ending at its cancellation.
struct Runtime {
    cancel: CancellationToken,
    tracker: TaskTracker,
}

struct Shared<E> {
    listeners: Arc<Listeners<E>>,
    queue: mpsc::UnboundedSender<E>,
    /// Taken by the first publication, which starts the dispatcher on the current runtime.
    pending: Mutex<Option<mpsc::UnboundedReceiver<E>>>,
    runtime: Option<Runtime>,
}

/// The publishing side of a set of listeners. Cheap to clone; clones share the listeners.
///
/// A recipe gets its container from
/// [`CuratorFramework::listener_container`](crate::CuratorFramework::listener_container), which
/// ties delivery to the client: after `client.close()`, nothing is delivered.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use curator_framework::listen::ListenerContainer;
/// let container: ListenerContainer<u32> = ListenerContainer::new("numbers");
/// let mut events = container.listenable().stream();
/// container.publish(7);
/// use futures::StreamExt;
/// assert_eq!(events.next().await, Some(7));
/// # }
/// ```
pub struct ListenerContainer<E> {
    shared: Arc<Shared<E>>,
}

impl<E> Clone for ListenerContainer<E> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<E> fmt::Debug for ListenerContainer<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerContainer")
            .field("name", &self.shared.listeners.name)
            .field("listeners", &self.shared.listeners.entries.lock().len())
            .finish()
    }
}

impl<E: Clone + Send + 'static> ListenerContainer<E> {
    /// A stand-alone container whose listeners' panics are only logged. `name` appears in
    /// reports.
    pub fn new(name: impl Into<String>) -> Self {
        Self::build(name, None, None)
    }

    /// A stand-alone container whose listeners' panics are published to `errors`.
    pub fn reporting_to(
        name: impl Into<String>,
        errors: ListenerContainer<UnhandledError>,
    ) -> Self {
        Self::build(name, Some(errors), None)
    }

    /// A container whose dispatcher is one of the client's tasks and stops at `cancel`.
    pub(crate) fn tracked(
        name: impl Into<String>,
        errors: Option<ListenerContainer<UnhandledError>>,
        cancel: &CancellationToken,
        tracker: &TaskTracker,
    ) -> Self {
        let runtime = Runtime {
            cancel: cancel.clone(),
            tracker: tracker.clone(),
        };
        Self::build(name, errors, Some(runtime))
    }

    fn build(
        name: impl Into<String>,
        errors: Option<ListenerContainer<UnhandledError>>,
        runtime: Option<Runtime>,
    ) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        let listeners = Arc::new(Listeners {
            name: name.into(),
            entries: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            errors,
            closed: runtime.as_ref().map(|runtime| runtime.cancel.clone()),
        });
        Self {
            shared: Arc::new(Shared {
                listeners,
                queue,
                pending: Mutex::new(Some(pending)),
                runtime,
            }),
        }
    }

    /// Queues `event` for every listener. Never blocks; delivery happens on the dispatcher task,
    /// in the order of `publish` calls. Once the client that owns the container is closed,
    /// events are dropped (listeners hear nothing after the close). With no listener
    /// registered, the event is dropped at once: nobody hears it, and the dispatcher is not
    /// woken (a listener added later hears the events published from then on).
    pub fn publish(&self, event: E) {
        if let Some(Runtime { cancel, .. }) = &self.shared.runtime {
            if cancel.is_cancelled() {
                // The owning client is closed: nobody hears of anything after it.
                return;
            }
        }
        if self.shared.listeners.entries.lock().is_empty() {
            return;
        }
        if let Some(pending) = self.shared.pending.lock().take() {
            let listeners = Arc::clone(&self.shared.listeners);
            let Ok(handle) = tokio::runtime::Handle::try_current() else {
                tracing::error!(container = %listeners.name, "events published outside a Tokio runtime are dropped");
                return;
            };
            match &self.shared.runtime {
                Some(Runtime { cancel, tracker }) => {
                    let cancel = cancel.clone();
                    tracker.spawn_on(
                        async move {
                            tokio::select! {
                                biased;
                                () = cancel.cancelled() => {}
                                () = dispatch(listeners, pending) => {}
                            }
                        },
                        &handle,
                    );
                }
                None => {
                    // A stand-alone container belongs to no client: its dispatcher ends when
                    // the container's last clone is dropped (the queue closes).
                    #[allow(clippy::disallowed_methods)]
                    handle.spawn(dispatch(listeners, pending));
                }
            }
        }
        let _ = self.shared.queue.send(event);
    }

    /// The view users add listeners through.
    pub fn listenable(&self) -> Listenable<E> {
        Listenable {
            source: Arc::clone(&self.shared.listeners) as Arc<dyn Source<E>>,
        }
    }

    /// The number of registered listeners.
    pub fn len(&self) -> usize {
        self.shared.listeners.entries.lock().len()
    }

    /// Whether no listener is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

async fn dispatch<E: Clone + Send + 'static>(
    listeners: Arc<Listeners<E>>,
    mut queue: mpsc::UnboundedReceiver<E>,
) {
    while let Some(event) = queue.recv().await {
        let snapshot: Vec<(u64, Entry<E>)> = listeners.entries.lock().clone();
        for (id, entry) in snapshot {
            let outcome = match entry {
                Entry::Sync(f) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| f(event.clone()))) {
                        Ok(true) => Ok(()),
                        Ok(false) => {
                            // Gone for good (its receiver was dropped): nobody listens any more.
                            listeners.entries.lock().retain(|(other, _)| *other != id);
                            Ok(())
                        }
                        Err(panic) => Err(panic),
                    }
                }
                Entry::Async(f) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| f(event.clone()))) {
                        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                        Err(panic) => Err(panic),
                    }
                }
            };
            if let Err(panic) = outcome {
                report_panic(&listeners, panic.as_ref());
            }
        }
    }
}

fn report_panic<E>(listeners: &Listeners<E>, panic: &(dyn std::any::Any + Send)) {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a listener panicked".to_owned());
    tracing::error!(container = %listeners.name, %message, "listener panicked");
    if let Some(errors) = &listeners.errors {
        errors.publish(UnhandledError {
            context: format!("{} listener", listeners.name),
            message,
        });
    }
}

/// Where listeners of `E` are registered: a container's listeners, or a mapped view of another
/// source.
trait Source<E>: Send + Sync {
    fn name(&self) -> &str;
    fn closed(&self) -> Option<CancellationToken>;
    fn add(self: Arc<Self>, entry: Entry<E>) -> ListenerHandle;
}

impl<E: Send + 'static> Source<E> for Listeners<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn closed(&self) -> Option<CancellationToken> {
        self.closed.clone()
    }

    fn add(self: Arc<Self>, entry: Entry<E>) -> ListenerHandle {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.entries.lock().push((id, entry));
        // A weak reference: a handle does not keep a container's listeners alive.
        let weak = Arc::downgrade(&self);
        ListenerHandle {
            remove: Some(Box::new(move || {
                if let Some(listeners) = weak.upgrade() {
                    listeners.entries.lock().retain(|(other, _)| *other != id);
                }
            })),
        }
    }
}

/// A source of `E` made from a source of `S`.
struct Mapped<S, E> {
    source: Arc<dyn Source<S>>,
    map: Arc<dyn Fn(S) -> Option<E> + Send + Sync>,
}

impl<S: Send + 'static, E: Send + 'static> Source<E> for Mapped<S, E> {
    fn name(&self) -> &str {
        self.source.name()
    }

    fn closed(&self) -> Option<CancellationToken> {
        self.source.closed()
    }

    fn add(self: Arc<Self>, entry: Entry<E>) -> ListenerHandle {
        Arc::clone(&self.source).add(entry.map_from(Arc::clone(&self.map)))
    }
}

/// A source of `E` made from a source of `S` in which every listener gets its own [`Step`],
/// made by `make` when the listener is added.
struct PerListener<S, E> {
    source: Arc<dyn Source<S>>,
    make: Arc<dyn Fn() -> Step<S, E> + Send + Sync>,
}

impl<S: Send + 'static, E: Send + 'static> Source<E> for PerListener<S, E> {
    fn name(&self) -> &str {
        self.source.name()
    }

    fn closed(&self) -> Option<CancellationToken> {
        self.source.closed()
    }

    fn add(self: Arc<Self>, entry: Entry<E>) -> ListenerHandle {
        Arc::clone(&self.source).add(entry.flat_map_from((self.make)()))
    }
}

/// Where users add listeners. Obtained from a [`ListenerContainer`] (for the client:
/// [`CuratorFramework::connection_state_listenable`](crate::CuratorFramework::connection_state_listenable)),
/// or derived from another listenable with [`map`](Self::map) and
/// [`filter_map`](Self::filter_map): a derived listener is registered on the source and runs on
/// its dispatcher, so an event is delivered once, however many views it passes through.
pub struct Listenable<E> {
    source: Arc<dyn Source<E>>,
}

impl<E> Clone for Listenable<E> {
    fn clone(&self) -> Self {
        Self {
            source: Arc::clone(&self.source),
        }
    }
}

impl<E> fmt::Debug for Listenable<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listenable")
            .field("name", &self.source.name())
            .finish_non_exhaustive()
    }
}

impl<E: Clone + Send + 'static> Listenable<E> {
    fn add(&self, entry: Entry<E>) -> ListenerHandle {
        Arc::clone(&self.source).add(entry)
    }

    /// Adds a closure called with each event.
    pub fn add_listener(&self, listener: impl Fn(E) + Send + Sync + 'static) -> ListenerHandle {
        self.add(Entry::Sync(Arc::new(move |event| {
            listener(event);
            true
        })))
    }

    /// Adds an async closure; each returned future is awaited before the next event is delivered.
    pub fn add_async_listener<F, Fut>(&self, listener: F) -> ListenerHandle
    where
        F: Fn(E) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.add(Entry::Async(Arc::new(move |event| listener(event).boxed())))
    }

    /// Adds a [`Listener`] trait object.
    pub fn add_listener_object(&self, listener: Arc<dyn Listener<E>>) -> ListenerHandle {
        self.add(Entry::Sync(Arc::new(move |event| {
            listener.on_event(event);
            true
        })))
    }

    /// Forwards each event into a channel. The listener removes itself when the receiver closes.
    pub fn add_sender(&self, sender: mpsc::UnboundedSender<E>) -> ListenerHandle {
        self.add(Entry::Sync(Arc::new(move |event| {
            sender.send(event).is_ok()
        })))
    }

    /// Every event from now on, as a stream; dropping the stream removes the listener. The
    /// stream of a client's container ends (yields `None`) once the client is closed.
    pub fn stream(&self) -> ListenerStream<E> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let handle = self.add_sender(sender);
        ListenerStream {
            receiver,
            closed: self
                .source
                .closed()
                .map(|token| Box::pin(token.cancelled_owned())),
            _handle: handle,
        }
    }

    /// A view in which each listener, when added, gets its own step from `make`, and hears the
    /// events that step turns each event into. Steps run on the source's dispatcher, so order
    /// across listeners is kept.
    pub(crate) fn per_listener<F: Send + 'static>(
        &self,
        make: impl Fn() -> Step<E, F> + Send + Sync + 'static,
    ) -> Listenable<F> {
        Listenable {
            source: Arc::new(PerListener {
                source: Arc::clone(&self.source),
                make: Arc::new(make),
            }),
        }
    }

    /// A view whose listeners hear `map(event)` for each event.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use curator_framework::listen::ListenerContainer;
    /// use futures::StreamExt;
    /// let numbers: ListenerContainer<u32> = ListenerContainer::new("numbers");
    /// let mut doubled = numbers.listenable().map(|n| n * 2).stream();
    /// numbers.publish(21);
    /// assert_eq!(doubled.next().await, Some(42));
    /// # }
    /// ```
    pub fn map<F: Clone + Send + 'static>(
        &self,
        map: impl Fn(E) -> F + Send + Sync + 'static,
    ) -> Listenable<F> {
        self.filter_map(move |event| Some(map(event)))
    }

    /// A view whose listeners hear `map(event)` for each event it maps to `Some`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use curator_framework::listen::ListenerContainer;
    /// use futures::StreamExt;
    /// let numbers: ListenerContainer<u32> = ListenerContainer::new("numbers");
    /// let mut even = numbers.listenable().filter_map(|n| (n % 2 == 0).then_some(n)).stream();
    /// for n in 1..=4 { numbers.publish(n); }
    /// assert_eq!(even.next().await, Some(2));
    /// assert_eq!(even.next().await, Some(4));
    /// # }
    /// ```
    pub fn filter_map<F: Clone + Send + 'static>(
        &self,
        map: impl Fn(E) -> Option<F> + Send + Sync + 'static,
    ) -> Listenable<F> {
        Listenable {
            source: Arc::new(Mapped {
                source: Arc::clone(&self.source),
                map: Arc::new(map),
            }),
        }
    }
}

/// Keeps a listener registered; dropping it removes the listener.
#[must_use = "dropping the handle removes the listener at once; call .detach() to keep it"]
pub struct ListenerHandle {
    remove: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerHandle")
            .field("active", &self.remove.is_some())
            .finish()
    }
}

impl ListenerHandle {
    /// Removes the listener now (the same as dropping the handle).
    pub fn remove(self) {}

    /// Keeps the listener for as long as its container lives.
    pub fn detach(mut self) {
        self.remove = None;
    }
}

impl Drop for ListenerHandle {
    fn drop(&mut self) {
        if let Some(remove) = self.remove.take() {
            remove();
        }
    }
}

/// A stream of events from a [`Listenable`]; dropping it removes its listener. Once the client
/// that owns its container is closed, it hands out what was delivered before and then ends.
pub struct ListenerStream<E> {
    receiver: mpsc::UnboundedReceiver<E>,
    closed: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    _handle: ListenerHandle,
}

impl<E> fmt::Debug for ListenerStream<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerStream")
            .field("queued", &self.receiver.len())
            .field("tied_to_a_client", &self.closed.is_some())
            .finish()
    }
}

impl<E> futures::Stream for ListenerStream<E> {
    type Item = E;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        // Events delivered before the close are still handed out; then the stream ends.
        if let Poll::Ready(event) = self.receiver.poll_recv(cx) {
            return Poll::Ready(event);
        }
        match &mut self.closed {
            Some(closed) => closed.as_mut().poll(cx).map(|()| None),
            None => Poll::Pending,
        }
    }
}

impl ListenerStream<crate::state::ConnectionState> {
    /// Waits for the next `Connected` or `Reconnected` transition. Recipes use it to act again
    /// after a reconnect or a new session.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let mut states = client.connection_state_stream();
    /// states.next_connected().await?;
    /// println!("connected again; re-check what the session held");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Closed`](crate::Error::Closed) once the client is closed (the stream ended).
    ///
    /// # Cancellation safety
    /// Safe: transitions not yet looked at stay in the stream.
    pub async fn next_connected(&mut self) -> crate::error::Result<()> {
        use futures::StreamExt;
        while let Some(state) = self.next().await {
            if matches!(
                state,
                crate::state::ConnectionState::Connected
                    | crate::state::ConnectionState::Reconnected
            ) {
                return Ok(());
            }
        }
        Err(crate::error::Error::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn events_arrive_in_order_to_every_kind_of_listener() {
        let container = ListenerContainer::<u32>::new("test");
        let listenable = container.listenable();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sync_tx = tx.clone();
        let _a = listenable.add_listener(move |n| sync_tx.send(("sync", n)).unwrap());
        let async_tx = tx.clone();
        let _b = listenable.add_async_listener(move |n| {
            let tx = async_tx.clone();
            async move {
                tokio::task::yield_now().await;
                tx.send(("async", n)).unwrap();
            }
        });
        struct Obj(mpsc::UnboundedSender<(&'static str, u32)>);
        impl Listener<u32> for Obj {
            fn on_event(&self, n: u32) {
                self.0.send(("object", n)).unwrap();
            }
        }
        let _c = listenable.add_listener_object(Arc::new(Obj(tx)));
        for n in 0..3 {
            container.publish(n);
        }
        let mut seen = Vec::new();
        for _ in 0..9 {
            seen.push(rx.recv().await.unwrap());
        }
        let expected: Vec<_> = (0..3)
            .flat_map(|n| [("sync", n), ("async", n), ("object", n)])
            .collect();
        assert_eq!(seen, expected);
    }

    #[tokio::test]
    async fn a_panicking_listener_is_reported_and_the_others_still_hear() {
        let errors = ListenerContainer::<UnhandledError>::new("errors");
        let mut reports = errors.listenable().stream();
        let container = ListenerContainer::<u32>::reporting_to("numbers", errors.clone());
        let _bad = container.listenable().add_listener(|n| {
            if n == 1 {
                panic!("listener failed on {n}");
            }
        });
        let mut good = container.listenable().stream();
        for n in 0..3 {
            container.publish(n);
        }
        let got: Vec<u32> = good.by_ref().take(3).collect().await;
        assert_eq!(got, vec![0, 1, 2]);
        let report = reports.next().await.unwrap();
        assert_eq!(report.context, "numbers listener");
        assert!(
            report.message.contains("listener failed on 1"),
            "{report:?}"
        );
    }

    #[tokio::test]
    async fn an_event_published_while_nobody_listens_is_heard_by_nobody() {
        let container = ListenerContainer::<u32>::new("test");
        container.publish(0);
        // Nothing was queued: the dispatcher was not even started.
        assert!(container.shared.pending.lock().is_some());
        let mut stream = container.listenable().stream();
        container.publish(1);
        assert_eq!(stream.next().await, Some(1));
    }

    #[tokio::test]
    async fn dropping_a_handle_or_stream_removes_the_listener() {
        let container = ListenerContainer::<u32>::new("test");
        let handle = container.listenable().add_listener(|_| {});
        let stream = container.listenable().stream();
        assert_eq!(container.len(), 2);
        drop(handle);
        assert_eq!(container.len(), 1);
        drop(stream);
        assert!(container.is_empty());
        container.listenable().add_listener(|_| {}).detach();
        assert_eq!(container.len(), 1);
    }
}
