//! The future every operation returns, and the first poll that sends an attempt's request.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use futures::future::BoxFuture;

use crate::error::Result;

/// The future of an operation: one allocation holding its attempts and their retries. Its first
/// request was handed over when it was created (sent at once when a session was connected,
/// otherwise queued in order for the next connection); awaiting it waits for the answer and any
/// retries.
///
/// # Cancellation safety
/// Dropping it abandons the operation: a request not yet sent is never sent, and a request
/// already sent may still be applied. Operations that could leave a node behind say how they
/// clean up (a protected create deletes its node in the background; a guaranteed delete keeps
/// deleting).
#[must_use = "dropping an operation abandons it (a request already sent may still apply)"]
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
    pub(crate) fn new(future: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        Self {
            state: State::Pending(Box::pin(future)),
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

/// One attempt whose first request has been sent.
///
/// The wire client sends a request when one of its methods is called, and an attempt calls the
/// first of them before its first suspension point. [`Sent::now`] polls the attempt once, which
/// runs it exactly that far: this is the one place that turns "an attempt was started" into "its
/// request is on its way", and the dispatcher calls it under its lock, in submission order.
pub(crate) struct Sent<T>(OpFuture<T>);

impl<T: Send + 'static> Sent<T> {
    pub(crate) fn now(attempt: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        let mut attempt: BoxFuture<'static, Result<T>> = Box::pin(attempt);
        // The waker is never woken: the caller polls again (with its own) when it awaits.
        let mut cx = Context::from_waker(Waker::noop());
        Sent(match attempt.as_mut().poll(&mut cx) {
            Poll::Ready(result) => OpFuture::ready(result),
            Poll::Pending => OpFuture {
                state: State::Pending(attempt),
            },
        })
    }
}

impl<T> Future for Sent<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        Pin::new(&mut self.get_mut().0).poll(cx)
    }
}
