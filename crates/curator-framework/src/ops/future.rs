//! The future every operation returns.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures::future::BoxFuture;

use crate::error::Result;

/// The future of an operation. Its first request was sent when it was created; awaiting it
/// waits for the answer (and any retries).
///
/// # Cancellation safety
/// Dropping it abandons the wait, not the request: a request already sent may still be applied.
/// Operations that could leave a node behind say how they clean up (a protected create deletes
/// its node in the background; a guaranteed delete keeps deleting).
#[must_use = "operations do nothing useful unless awaited"]
pub struct OpFuture<T> {
    state: State<T>,
}

enum State<T> {
    Pending(BoxFuture<'static, Result<T>>),
    Ready(Option<Result<T>>),
}

impl<T> fmt::Debug for OpFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Pending(_) => "pending",
            State::Ready(Some(_)) => "ready",
            State::Ready(None) => "taken",
        };
        f.debug_struct("OpFuture").field("state", &state).finish()
    }
}

impl<T: Send + 'static> OpFuture<T> {
    /// Polls `future` once right away, so everything it does before its first suspension (its
    /// first request) happens now, in call order.
    pub(crate) fn eager(future: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        let mut boxed: BoxFuture<'static, Result<T>> = Box::pin(future);
        let mut cx = Context::from_waker(Waker::noop());
        match boxed.as_mut().poll(&mut cx) {
            Poll::Ready(result) => Self {
                state: State::Ready(Some(result)),
            },
            Poll::Pending => Self {
                state: State::Pending(boxed),
            },
        }
    }

    /// A future that is already done (bad input, for example).
    pub(crate) fn ready(result: Result<T>) -> Self {
        Self {
            state: State::Ready(Some(result)),
        }
    }
}

// The output is stored by value and never pinned, so moving an `OpFuture` is always fine.
impl<T> Unpin for OpFuture<T> {}

impl<T> Future for OpFuture<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        match &mut self.get_mut().state {
            State::Pending(future) => future.as_mut().poll(cx),
            State::Ready(result) => {
                Poll::Ready(result.take().expect("OpFuture polled after completion"))
            }
        }
    }
}
