//! Listener containers: how the framework and every recipe deliver events to user code.
//!
//! A [`ListenerContainer`] belongs to whoever publishes events (the client, a recipe); users add
//! listeners through its [`Listenable`] view: closures, async closures, trait objects, channels, or
//! a [`Stream`](futures::Stream). Events are delivered in publication order on a task of their
//! own, so a slow listener never stalls the session, and calling the client from a listener is
//! fine. A listener that panics is caught, reported to the client's unhandled-error listeners,
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

type SyncFn<E> = Arc<dyn Fn(E) + Send + Sync>;
type AsyncFn<E> = Arc<dyn Fn(E) -> BoxFuture<'static, ()> + Send + Sync>;

enum Entry<E> {
    Sync(SyncFn<E>),
    Async(AsyncFn<E>),
    Object(Arc<dyn Listener<E>>),
    Sender(mpsc::UnboundedSender<E>),
}

impl<E> Clone for Entry<E> {
    fn clone(&self) -> Self {
        match self {
            Entry::Sync(f) => Entry::Sync(Arc::clone(f)),
            Entry::Async(f) => Entry::Async(Arc::clone(f)),
            Entry::Object(l) => Entry::Object(Arc::clone(l)),
            Entry::Sender(s) => Entry::Sender(s.clone()),
        }
    }
}

struct Listeners<E> {
    name: String,
    entries: Mutex<Vec<(u64, Entry<E>)>>,
    next_id: AtomicU64,
    errors: Option<ListenerContainer<UnhandledError>>,
}

struct Shared<E> {
    listeners: Arc<Listeners<E>>,
    queue: mpsc::UnboundedSender<E>,
    /// Taken by the first publication, which starts the dispatcher on the current runtime.
    pending: Mutex<Option<mpsc::UnboundedReceiver<E>>>,
}

/// The publishing side of a set of listeners. Cheap to clone; clones share the listeners.
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
    /// A container whose listeners' panics are only logged. `name` appears in reports.
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_errors(name, None)
    }

    /// A container whose listeners' panics are published to `errors` (the client's
    /// unhandled-error listeners; see
    /// [`CuratorFramework::listener_container`](crate::CuratorFramework::listener_container)).
    pub fn reporting_to(
        name: impl Into<String>,
        errors: ListenerContainer<UnhandledError>,
    ) -> Self {
        Self::with_errors(name, Some(errors))
    }

    fn with_errors(
        name: impl Into<String>,
        errors: Option<ListenerContainer<UnhandledError>>,
    ) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        let listeners = Arc::new(Listeners {
            name: name.into(),
            entries: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            errors,
        });
        Self {
            shared: Arc::new(Shared {
                listeners,
                queue,
                pending: Mutex::new(Some(pending)),
            }),
        }
    }

    /// Queues `event` for every listener. Never blocks; delivery happens on the dispatcher task,
    /// in the order of `publish` calls.
    pub fn publish(&self, event: E) {
        if let Some(pending) = self.shared.pending.lock().take() {
            let listeners = Arc::clone(&self.shared.listeners);
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(dispatch(listeners, pending));
                }
                Err(_) => {
                    tracing::error!(container = %listeners.name, "events published outside a Tokio runtime are dropped");
                    return;
                }
            }
        }
        let _ = self.shared.queue.send(event);
    }

    /// The view users add listeners through.
    pub fn listenable(&self) -> Listenable<E> {
        Listenable {
            listeners: Arc::clone(&self.shared.listeners),
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
                Entry::Sync(f) => std::panic::catch_unwind(AssertUnwindSafe(|| f(event.clone()))),
                Entry::Object(l) => {
                    std::panic::catch_unwind(AssertUnwindSafe(|| l.on_event(event.clone())))
                }
                Entry::Async(f) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| f(event.clone()))) {
                        Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
                        Err(panic) => Err(panic),
                    }
                }
                Entry::Sender(sender) => {
                    if sender.send(event.clone()).is_err() {
                        // The receiving side is gone: nobody listens any more.
                        listeners.entries.lock().retain(|(other, _)| *other != id);
                    }
                    Ok(())
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

/// Where users add listeners. Obtained from a [`ListenerContainer`] (for the client:
/// [`CuratorFramework::connection_state_listenable`](crate::CuratorFramework::connection_state_listenable)).
pub struct Listenable<E> {
    listeners: Arc<Listeners<E>>,
}

impl<E> Clone for Listenable<E> {
    fn clone(&self) -> Self {
        Self {
            listeners: Arc::clone(&self.listeners),
        }
    }
}

impl<E> fmt::Debug for Listenable<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listenable")
            .field("name", &self.listeners.name)
            .finish_non_exhaustive()
    }
}

impl<E: Clone + Send + 'static> Listenable<E> {
    fn add(&self, entry: Entry<E>) -> ListenerHandle {
        let id = self.listeners.next_id.fetch_add(1, Ordering::Relaxed);
        self.listeners.entries.lock().push((id, entry));
        let weak = Arc::downgrade(&self.listeners);
        ListenerHandle {
            remove: Some(Box::new(move || {
                if let Some(listeners) = weak.upgrade() {
                    listeners.entries.lock().retain(|(other, _)| *other != id);
                }
            })),
        }
    }

    /// Adds a closure called with each event.
    pub fn add_listener(&self, listener: impl Fn(E) + Send + Sync + 'static) -> ListenerHandle {
        self.add(Entry::Sync(Arc::new(listener)))
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
        self.add(Entry::Object(listener))
    }

    /// Forwards each event into a channel. The listener removes itself when the receiver closes.
    pub fn add_sender(&self, sender: mpsc::UnboundedSender<E>) -> ListenerHandle {
        self.add(Entry::Sender(sender))
    }

    /// Every event from now on, as a stream; dropping the stream removes the listener.
    pub fn stream(&self) -> ListenerStream<E> {
        let (sender, receiver) = mpsc::unbounded_channel();
        let handle = self.add_sender(sender);
        ListenerStream {
            receiver,
            _handle: handle,
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

/// A stream of events from a [`Listenable`]; dropping it removes its listener.
#[derive(Debug)]
pub struct ListenerStream<E> {
    receiver: mpsc::UnboundedReceiver<E>,
    _handle: ListenerHandle,
}

impl<E> futures::Stream for ListenerStream<E> {
    type Item = E;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        self.receiver.poll_recv(cx)
    }
}

impl ListenerStream<crate::ConnectionState> {
    /// Waits for the next `Connected` or `Reconnected` transition (forever, once the client
    /// is closed and the stream has ended). Recipes use it to act again after a reconnect or a
    /// new session.
    ///
    /// ```no_run
    /// # async fn demo(client: curator_framework::CuratorFramework) {
    /// let mut states = client.connection_state_stream();
    /// states.next_connected().await;
    /// println!("connected again; re-check what the session held");
    /// # }
    /// ```
    ///
    /// # Cancellation safety
    /// Safe: transitions not yet looked at stay in the stream.
    pub async fn next_connected(&mut self) {
        use futures::StreamExt;
        while let Some(state) = self.next().await {
            if matches!(
                state,
                crate::ConnectionState::Connected | crate::ConnectionState::Reconnected
            ) {
                return;
            }
        }
        std::future::pending::<()>().await;
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
