//! `NonBlockingLease`: at most one holder per interval, cluster-wide, timed by ZooKeeper's clock.

use std::fmt;
use std::ops::Deref;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use curator_framework::recipe::Hold;
use curator_framework::types::Stat;
use curator_framework::{CuratorFramework, Error, Result, paths};
use tokio::time::Instant;

/// The first word of a lease node's data (the layout's version).
const FORMAT: &str = "lease-v1";
/// The child of the lease node written to learn the server's time.
const CLOCK: &str = "clock";

/// A time-boxed lease (Kazoo's `NonBlockingLease`, ShedLock's "at most one run per interval"):
/// [`try_acquire`](Self::try_acquire) wins the lease for a duration, or says at once that someone
/// else holds it. No session-bound node is held: the winner may exit (a cron job) and the lease
/// stays taken until its interval ends.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_locks::NonBlockingLease;
/// let lease = NonBlockingLease::new(client, "/leases/hourly-cleanup", "cleanup@host-7")?;
/// if let Some(grant) = lease.try_acquire(Duration::from_secs(70 * 60)).await? {
///     println!("won until {:?} (token {})", grant.until(), grant.fencing_token());
///     // ... the cleanup, finished before grant.deadline() ...
/// }
/// # Ok(()) }
/// ```
///
/// **Layout.** The lease is one persistent node at `path` whose data is one line of text,
/// `lease-v1 <duration in ms> <holder id>` (the id may contain spaces), plus a child `clock`
/// whose writes tell the server's time. The interval of the current holder starts at the lease
/// node's `mtime` and lasts the stored duration.
///
/// **Whose clock.** Every time comes from ZooKeeper: the `mtime` of a write is the wall clock of
/// the ensemble's leader when it ordered the write. To learn "now", a contender writes the
/// `clock` child and reads the `mtime` the server gave it; the lease is free when that is at or
/// after the holder's `mtime` plus its duration. Client clocks do not matter. The leader's clock
/// does: when leadership moves to a server whose clock is off by `s`, an interval that spans the
/// change is shortened or lengthened by `s` (and a leader's clock stepped backwards lengthens it
/// by the step). Intervals are never shared, whatever the clocks do: a takeover is a `setData`
/// conditional on the version read, so of two contenders that saw the same expired interval one
/// wins and the other reads the winner's new interval.
///
/// **Renewal.** A contender whose id is the holder's takes the lease again even before its
/// interval ended: a new interval starts now (Kazoo's rule). Give every run its own id when runs
/// must not renew one another's lease.
#[derive(Clone)]
pub struct NonBlockingLease {
    client: CuratorFramework,
    path: String,
    clock: String,
    holder: String,
}

impl fmt::Debug for NonBlockingLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NonBlockingLease")
            .field("path", &self.path)
            .field("holder", &self.holder)
            .finish()
    }
}

/// A won [`NonBlockingLease`] interval: who holds it, until when (server time), and its
/// [`Hold`] (through `Deref`, as every holder's): the lease node, a fencing token, and a
/// [`lost`](Hold::lost) signal that resolves at the grant's [`deadline`](Self::deadline) (or
/// when the client closes). The interval is time-boxed, not tied to a session, so connection
/// trouble does not end it. Dropping the grant changes nothing: the interval runs to its end
/// unless [`release`](Self::release)d.
///
/// Writes guarded by the grant's hold (`client.transaction().guarded_by(&grant)`) are refused
/// once the deadline has passed; the server's check in the same transaction only proves that
/// the lease node exists, so a resource that must refuse an older holder compares fencing
/// tokens (see [`FencingGate`](crate::FencingGate)).
///
/// ```no_run
/// # async fn demo(lease: curator_locks::NonBlockingLease) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// if let Some(grant) = lease.try_acquire(Duration::from_secs(60)).await? {
///     tokio::time::timeout_at(grant.deadline(), async { /* the work */ }).await.ok();
///     grant.release().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "a grant says the lease was won; dropping it keeps the lease until its interval ends"]
pub struct LeaseGrant {
    client: CuratorFramework,
    holder: String,
    hold: Hold,
    version: i32,
    started_ms: i64,
    until_ms: i64,
    deadline: Instant,
}

impl Deref for LeaseGrant {
    type Target = Hold;

    fn deref(&self) -> &Hold {
        &self.hold
    }
}

impl fmt::Debug for LeaseGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseGrant")
            .field("path", &self.hold.node_path())
            .field("holder", &self.holder)
            .field("fencing_token", &self.hold.fencing_token())
            .field("started_ms", &self.started_ms)
            .field("until_ms", &self.until_ms)
            .finish()
    }
}

/// What a lease node says.
struct Current {
    holder: String,
    duration_ms: i64,
}

impl NonBlockingLease {
    /// The lease at `path` (created, with its parents, by the first contender), contended for as
    /// `holder` (an id naming this contender: a host and job name, say).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let lease = curator_locks::NonBlockingLease::new(client, "/leases/report", "report@host-7")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject; [`Error::InvalidArgument`] for
    /// an empty `holder` or one with a line break.
    pub fn new(client: CuratorFramework, path: &str, holder: &str) -> Result<Self> {
        paths::validate(path)?;
        if holder.is_empty() || holder.contains(['\n', '\r']) {
            return Err(Error::InvalidArgument(format!(
                "a lease holder id must be one non-empty line, not {holder:?}"
            )));
        }
        Ok(Self {
            clock: paths::join(path, CLOCK),
            client,
            path: path.to_owned(),
            holder: holder.to_owned(),
        })
    }

    /// The lease's node.
    ///
    /// ```no_run
    /// # fn demo(lease: curator_locks::NonBlockingLease) {
    /// println!("lease at {}", lease.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Takes the lease for `duration` (counted in whole milliseconds, rounded up) when it is free
    /// (never taken, or its interval ended on the server's clock) or already this holder's;
    /// `None` at once when someone else holds it.
    ///
    /// ```no_run
    /// # async fn demo(lease: curator_locks::NonBlockingLease) -> curator_framework::Result<()> {
    /// use std::time::Duration;
    /// match lease.try_acquire(Duration::from_secs(600)).await? {
    ///     Some(grant) => println!("ours until {} ms (server time)", grant.until_ms()),
    ///     None => println!("someone else runs this interval"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero duration or one over `i64::MAX` ms; connection
    /// errors after the client's retry policy gave up; [`Error::Decode`] when the node holds
    /// something that is not a lease.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the lease won without a grant (the winning write went out):
    /// it is then held, by nobody who knows, until its interval ends.
    pub async fn try_acquire(&self, duration: Duration) -> Result<Option<LeaseGrant>> {
        let duration_ms = duration_ms(duration)?;
        let data = format!("{FORMAT} {duration_ms} {}", self.holder);
        loop {
            let (current, stat) = match self.client.get_data().for_path(&self.path).await {
                Ok((bytes, stat)) => (self.decode(&bytes)?, stat),
                Err(Error::NoNode) => {
                    let sent = Instant::now();
                    match self
                        .client
                        .create()
                        .creating_parents_if_needed()
                        .for_path(&self.path, &data)
                        .with_stat()
                        .await
                    {
                        Ok((_, stat)) => return Ok(Some(self.grant(&stat, duration, sent))),
                        Err(Error::NodeExists) => continue,
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            };
            let free = match &current {
                None => true,
                Some(current) if current.holder == self.holder => true,
                Some(current) => {
                    let now = self.server_now().await?;
                    now >= stat.mtime.saturating_add(current.duration_ms)
                }
            };
            if !free {
                return Ok(None);
            }
            let sent = Instant::now();
            match self
                .client
                .set_data()
                .with_version(stat.version)
                .for_path(&self.path, &data)
                .await
            {
                Ok(stat) => return Ok(Some(self.grant(&stat, duration, sent))),
                // Someone else wrote (took it, renewed, released) since the read: decide again.
                Err(Error::BadVersion | Error::NoNode) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// The server's time now: the `mtime` of a write of the clock node.
    async fn server_now(&self) -> Result<i64> {
        loop {
            match self.client.set_data().for_path(&self.clock, b"").await {
                Ok(stat) => return Ok(stat.mtime),
                Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
            match self
                .client
                .create()
                .creating_parents_if_needed()
                .for_path(&self.clock, b"")
                .with_stat()
                .await
            {
                Ok((_, stat)) => return Ok(stat.mtime),
                Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
    }

    fn grant(&self, stat: &Stat, duration: Duration, sent: Instant) -> LeaseGrant {
        let duration_ms = duration_ms(duration).unwrap_or(i64::MAX);
        // The server stamped the write after it was sent: counting from the send, this instant
        // comes no later than the interval's end (with clocks that run at one rate).
        let deadline = sent + duration;
        LeaseGrant {
            client: self.client.clone(),
            holder: self.holder.clone(),
            hold: Hold::until(&self.client, self.path.clone(), stat.mzxid, deadline),
            version: stat.version,
            started_ms: stat.mtime,
            until_ms: stat.mtime.saturating_add(duration_ms),
            deadline,
        }
    }

    fn decode(&self, data: &[u8]) -> Result<Option<Current>> {
        decode(data).map_err(|reason| Error::Decode {
            path: self.path.clone(),
            reason,
        })
    }
}

impl LeaseGrant {
    /// The holder id that won.
    ///
    /// ```no_run
    /// # fn demo(grant: curator_locks::LeaseGrant) {
    /// println!("won by {}", grant.holder());
    /// # }
    /// ```
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// When the interval started: the server's time of the winning write, in milliseconds since
    /// the Unix epoch.
    ///
    /// ```no_run
    /// # fn demo(grant: curator_locks::LeaseGrant) {
    /// assert!(grant.started_ms() < grant.until_ms());
    /// # }
    /// ```
    pub fn started_ms(&self) -> i64 {
        self.started_ms
    }

    /// When the interval ends, in milliseconds since the Unix epoch on the server's clock
    /// (see [`NonBlockingLease`] on whose clock that is).
    ///
    /// ```no_run
    /// # fn demo(grant: curator_locks::LeaseGrant) {
    /// println!("until {} ms", grant.until_ms());
    /// # }
    /// ```
    pub fn until_ms(&self) -> i64 {
        self.until_ms
    }

    /// [`until_ms`](Self::until_ms) as a time (the server's clock).
    ///
    /// ```no_run
    /// # fn demo(grant: curator_locks::LeaseGrant) {
    /// println!("until {:?}", grant.until());
    /// # }
    /// ```
    pub fn until(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(u64::try_from(self.until_ms).unwrap_or(0))
    }

    /// A local instant no later than the interval's end, for this process to stop its work by
    /// (the hold is lost then):
    /// the duration counted from just before the winning write was sent (the server stamped it
    /// later). It assumes the local and the leader's clocks run at the same rate; stop earlier
    /// by a margin for drift and for a leader change (see [`NonBlockingLease`]).
    ///
    /// ```no_run
    /// # async fn demo(grant: curator_locks::LeaseGrant) {
    /// let _ = tokio::time::timeout_at(grant.deadline(), async { /* work */ }).await;
    /// # }
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Ends the interval now, when the lease is still this grant's (nobody wrote it since):
    /// `true` then, also when the release's reply was lost and a retry finds it applied;
    /// `false` when it had already passed to someone else (or was renewed).
    ///
    /// ```no_run
    /// # async fn demo(grant: curator_locks::LeaseGrant) -> curator_framework::Result<()> {
    /// if !grant.release().await? {
    ///     println!("the lease had already moved on");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Connection errors after the client's retry policy gave up.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the interval ended or not.
    pub async fn release(self) -> Result<bool> {
        // Duration 0: the interval ended at this write, so the next contender finds it free.
        let data = format!("{FORMAT} 0 {}", self.holder);
        // Idempotent: a retry after a lost reply that meets `BadVersion` reads the node, and the
        // release did apply when the node is one version on with exactly this data. Nobody else
        // writes that: a renewal writes a duration, another holder its own id, and only this
        // grant knew the version.
        match self
            .client
            .set_data()
            .with_version(self.version)
            .idempotent()
            .for_path(self.hold.node_path(), data)
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::BadVersion | Error::NoNode) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

fn duration_ms(duration: Duration) -> Result<i64> {
    let ms = duration.as_nanos().div_ceil(1_000_000);
    match i64::try_from(ms) {
        Ok(ms) if ms > 0 => Ok(ms),
        _ => Err(Error::InvalidArgument(format!(
            "a lease lasts from 1 ms to i64::MAX ms, not {duration:?}"
        ))),
    }
}

/// A lease node's data; empty data is a free lease (a node made beforehand).
fn decode(data: &[u8]) -> std::result::Result<Option<Current>, String> {
    let text = std::str::from_utf8(data).map_err(|_| "a lease node holds text".to_owned())?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut words = text.splitn(3, ' ');
    let (Some(FORMAT), Some(duration), Some(holder)) = (words.next(), words.next(), words.next())
    else {
        return Err(format!(
            "a lease node holds `{FORMAT} <ms> <holder>`, not {text:?}"
        ));
    };
    let duration_ms = duration
        .parse()
        .map_err(|_| format!("bad lease duration {duration:?}"))?;
    Ok(Some(Current {
        holder: holder.to_owned(),
        duration_ms,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_data_round_trips() {
        let current = decode(b"lease-v1 300 cron on host 7").unwrap().unwrap();
        assert_eq!(current.holder, "cron on host 7");
        assert_eq!(current.duration_ms, 300);
        assert!(decode(b"").unwrap().is_none());
        assert!(decode(b"lease-v2 1 x").is_err());
        assert!(decode(b"lease-v1 x y").is_err());
    }

    #[test]
    fn durations_round_up_to_milliseconds() {
        assert_eq!(duration_ms(Duration::from_micros(1)).unwrap(), 1);
        assert_eq!(duration_ms(Duration::from_millis(300)).unwrap(), 300);
        assert!(duration_ms(Duration::ZERO).is_err());
    }
}
