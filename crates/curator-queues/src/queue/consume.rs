//! The consumer: a cooperative task that lists the items once per batch and works through
//! them, at most once or, with a lock path, lock-safe (at least once).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use curator_framework::codec::{self, Codec};
use curator_framework::metrics::names as metric;
use curator_framework::ops::transaction::TransactionOp;
use curator_framework::recipe::{Backoff, Cancelled};
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, Error, Result, paths};
use futures::future::{BoxFuture, select_all};
use tokio::time::Instant;

use super::{Core, ErrorMode, Kind, names};
use crate::envelope;

/// The consumer as the loop calls it: the item's error rendered as text.
pub(super) type ConsumeFn<T> =
    Arc<dyn Fn(T) -> BoxFuture<'static, std::result::Result<(), String>> + Send + Sync>;

/// A consumer closure in that form.
pub(super) fn consume_fn<T, F, Fut, E>(consumer: F) -> ConsumeFn<T>
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = std::result::Result<(), E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    Arc::new(move |item| {
        let fut = consumer(item);
        Box::pin(async move { fut.await.map_err(|e| e.to_string()) })
    })
}

enum Processed {
    Done,
    /// Another consumer holds the item's lock: this watch fires when it lets go.
    Locked(Watcher),
}

/// Takes items until cancelled; an item in hand is finished first (the loop only looks at
/// `cancelled` between items and while it waits).
pub(super) async fn consume_loop<T, C>(
    core: Arc<Core<T, C>>,
    consume: ConsumeFn<T>,
    cancel: Cancelled,
) where
    T: Send + 'static,
    C: Codec<T>,
{
    // Items whose data cannot be decoded: reported once, left in place, skipped.
    let mut poisoned: Vec<String> = Vec::new();
    // This consumer's mark in the lock nodes it makes, to know its own lock from another's.
    let token = curator_framework::random::uuid().to_string();
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    // Items another consumer held locked in the last pass: in the bucketed layout a bucket
    // holding only these does not keep this consumer from the next bucket.
    let mut locked: HashSet<String> = HashSet::new();
    loop {
        if cancel.is_cancelled() {
            return;
        }
        let listed = tokio::select! {
            () = cancel.cancelled() => return,
            listed = core.item_names(&locked) => listed,
        };
        let (names, watcher) = match listed {
            Ok(found) => {
                #[allow(clippy::cast_precision_loss)] // a count of children
                core.recipe
                    .name()
                    .set(metric::QUEUE_DEPTH, found.0.len() as f64);
                found
            }
            Err(error @ Error::ResponseTooLarge { .. }) => {
                // Every listing would fail the same way (the client's `max_listing_bytes`):
                // stop consuming, and say so.
                core.recipe.tasks().report_unhandled(&error);
                return;
            }
            Err(error) => {
                tracing::warn!(%error, path = %core.path, "queue consumer cannot list; retrying");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = backoff.wait() => continue,
                }
            }
        };
        let mut wakers: Vec<Watcher> = watcher;
        let mut next_due: Option<Instant> = None;
        let skipped = std::mem::take(&mut locked);
        let mut failed = false;
        for name in names {
            if cancel.is_cancelled() {
                return;
            }
            if poisoned.contains(&name) {
                continue;
            }
            if core.kind == Kind::Delay {
                let due = names::delay_epoch(&name);
                let now = names::epoch_ms(SystemTime::now());
                if due > now {
                    next_due = Some(Instant::now() + Duration::from_millis(due - now));
                    break;
                }
            }
            match core.process(&name, &consume, &token).await {
                Ok(Processed::Done) => {}
                Ok(Processed::Locked(watcher)) => {
                    wakers.push(watcher);
                    locked.insert(name);
                }
                Err(Error::Decode { reason, .. }) => {
                    tracing::error!(item = %name, %reason, "undecodable queue item left in place");
                    poisoned.push(name);
                }
                Err(error) => {
                    tracing::warn!(%error, item = %name, "queue consumer failed; listing again");
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            tokio::select! {
                () = cancel.cancelled() => return,
                () = backoff.wait() => continue,
            }
        }
        backoff.reset();
        // Bucketed: items newly found locked by others may hide a next bucket this pass did not
        // list; list again at once, past them (a bucket of skipped items no longer stops the
        // scan). The watches of this pass are dropped; the next pass sets them again.
        if core.buckets.is_some() && !locked.is_subset(&skipped) {
            continue;
        }
        let wake: BoxFuture<'static, ()> = if wakers.is_empty() {
            Box::pin(std::future::pending())
        } else {
            Box::pin(async move {
                select_all(wakers.into_iter().map(|w| Box::pin(w.changed()))).await;
            })
        };
        let due: BoxFuture<'static, ()> = match next_due {
            Some(at) => Box::pin(tokio::time::sleep_until(at)),
            None => Box::pin(std::future::pending()),
        };
        tokio::select! {
            () = cancel.cancelled() => return,
            () = wake => {}
            () = due => {}
        }
    }
}

impl<T, C> Core<T, C>
where
    T: Send + 'static,
    C: Codec<T>,
{
    async fn process(&self, name: &str, consume: &ConsumeFn<T>, token: &str) -> Result<Processed> {
        let item_path = paths::join(&self.path, name);
        match &self.lock_path {
            None => {
                let (data, stat) = match self.client.get_data().for_path(&item_path).await {
                    Ok(found) => found,
                    Err(Error::NoNode) => return Ok(Processed::Done),
                    Err(error) => return Err(error),
                };
                let taken = match &self.outcomes {
                    Some(outcomes) => outcomes.take(name, stat.version).await?,
                    None => self.take_plain(&item_path, stat.version).await?,
                };
                if !taken {
                    return Ok(Processed::Done);
                }
                self.taken(stat.ctime);
                self.consume_taken(name, &item_path, &data, consume).await
            }
            Some(lock_path) => {
                self.process_locked(name, &item_path, lock_path, consume, token)
                    .await
            }
        }
    }

    /// Records the consumer lag of an item taken now whose node was created at `ctime` (server
    /// clock, ms since the epoch). Item data carries no put time (Curator's encoding), so the
    /// node's creation stands for it; clock skew between server and consumer shifts the value
    /// (negative readings count as 0). For a delay queue it includes the delay asked for.
    fn taken(&self, ctime: i64) {
        let lag = curator_framework::metrics::seconds_since_epoch_millis(ctime);
        self.recipe
            .name()
            .record_seconds(metric::QUEUE_CONSUMER_LAG_SECONDS, lag);
    }

    /// Deletes the item at `version`; `Ok(false)` when another consumer took it first.
    async fn take_plain(&self, item_path: &str, version: i32) -> Result<bool> {
        // The item is ours when our versioned delete applies. `idempotent`: a retry after a
        // lost reply that finds the item gone counts as ours (at least once across connection
        // loss: another consumer may have taken it meanwhile).
        match self
            .client
            .delete()
            .with_version(version)
            .idempotent()
            .for_path(item_path)
            .await
        {
            Ok(()) => Ok(true),
            // Another consumer took it (or changed it) first.
            Err(Error::NoNode | Error::BadVersion) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Runs the consumer on the items of a node this consumer took (deleted).
    async fn consume_taken(
        &self,
        name: &str,
        item_path: &str,
        data: &[u8],
        consume: &ConsumeFn<T>,
    ) -> Result<Processed> {
        let items = envelope::decode(item_path, data)?;
        for bytes in items {
            match self.codec.decode(&bytes) {
                Ok(item) => {
                    if let Err(error) = consume(item).await {
                        tracing::warn!(item = name, %error, "queue consumer failed; the item is gone (not lock-safe)");
                    }
                }
                Err(error) => {
                    tracing::error!(item = name, %error, "undecodable queue item dropped")
                }
            }
        }
        Ok(Processed::Done)
    }

    async fn process_locked(
        &self,
        name: &str,
        item_path: &str,
        lock_path: &str,
        consume: &ConsumeFn<T>,
        token: &str,
    ) -> Result<Processed> {
        // Flat: in the bucketed layout `name` is `bucket-<n>/<item>`.
        let lock = paths::join(lock_path, &crate::bucket::flat_name(name));
        // The session that owns the lock node.
        let owner = loop {
            match self
                .client
                .create()
                .creating_parent_containers_if_needed()
                .with_mode(CreateMode::Ephemeral)
                .for_path(&lock, token.as_bytes())
                .with_stat()
                .await
            {
                Ok((_, stat)) => break stat.ephemeral_owner,
                Err(Error::NodeExists) => {
                    match self.client.get_data().watched().for_path(&lock).await {
                        // Our own lock, on our live session: a create retried after its reply
                        // was lost, or a delete of ours that failed. Waiting for it to go would
                        // wait for our own session to end.
                        Ok((data, stat, _))
                            if data == token.as_bytes()
                                && Some(stat.ephemeral_owner) == self.client.session_id() =>
                        {
                            break stat.ephemeral_owner;
                        }
                        Ok((_, _, watcher)) => return Ok(Processed::Locked(watcher)),
                        Err(Error::NoNode) => {}
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            }
        };
        let result = self.consume_locked(name, item_path, consume).await;
        // The lock is an ephemeral node of the session that made it: if the session changed
        // meanwhile, the lock went with it and the node there now is another consumer's.
        if self.client.session_id() == Some(owner) {
            if let Err(error) = self.client.delete().quietly().for_path(&lock).await {
                tracing::debug!(%error, lock, "queue lock not deleted; it goes with the session");
            }
        }
        result.map(|()| Processed::Done)
    }

    async fn consume_locked(
        &self,
        name: &str,
        item_path: &str,
        consume: &ConsumeFn<T>,
    ) -> Result<()> {
        let data = match self.client.get_data().for_path(item_path).await {
            Ok((data, stat)) => {
                self.taken(stat.ctime);
                data
            }
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(error),
        };
        let items = envelope::decode(item_path, &data)?;
        let mut decoded = Vec::with_capacity(items.len());
        for bytes in &items {
            decoded.push(
                self.codec
                    .decode(bytes)
                    .map_err(|e| codec::with_path(e, item_path))?,
            );
        }
        for (index, item) in decoded.into_iter().enumerate() {
            if let Err(error) = consume(item).await {
                tracing::warn!(item = name, %error, mode = ?self.error_mode, "queue consumer failed");
                return match self.error_mode {
                    ErrorMode::Delete => self.delete_item(item_path).await,
                    ErrorMode::Requeue => {
                        let requeued = envelope::encode(&items[index..]);
                        let result = self
                            .client
                            .transaction()
                            .delete(item_path)
                            .op(TransactionOp::create(
                                &paths::join(&self.path, names::name_prefix(name)),
                                requeued,
                            )
                            .with_mode(CreateMode::PersistentSequential))
                            .commit()
                            .await;
                        match result {
                            Ok(_) => Ok(()),
                            Err(Error::Transaction { index: 0, cause })
                                if *cause == Error::NoNode =>
                            {
                                Ok(())
                            }
                            Err(error) => Err(error),
                        }
                    }
                };
            }
        }
        self.delete_item(item_path).await
    }

    async fn delete_item(&self, item_path: &str) -> Result<()> {
        match self.client.delete().for_path(item_path).await {
            Ok(()) | Err(Error::NoNode) => Ok(()),
            Err(error) => Err(error),
        }
    }
}
