//! Counters a client keeps about itself ([`Metrics`], from `client.metrics()`), and the metrics
//! it records through the [`metrics`](https://docs.rs/metrics/0.24) facade ([`names`]), so any
//! exporter plugs in. The facade is a well-kept crate (the `metrics-rs` project, used by vector
//! and many services): recording through it is a no-op when no recorder is installed, and
//! Prometheus, OpenTelemetry, StatsD and in-process recorders exist for it.

use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a client's counters, from
/// [`CuratorFramework::metrics`](crate::CuratorFramework::metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Operations started (each awaited builder counts once, whatever its retries).
    pub operations: u64,
    /// Operations that ended in an error.
    pub failed_operations: u64,
    /// Retries made under the retry policy.
    pub retries: u64,
    /// Connection-state transitions published.
    pub state_transitions: u64,
    /// Sessions established (1 + the number of session losses recovered from).
    pub sessions: u64,
    /// Guaranteed deletes (and cleanups of protected creates) still being retried in the
    /// background.
    pub pending_guaranteed_deletes: u64,
    /// Background deletes that ended with the node gone.
    pub completed_guaranteed_deletes: u64,
    /// Background deletes given up: on an error retrying cannot fix (a changed version, no
    /// permission; also reported to the unhandled-error listeners), or because the client closed
    /// first. Their node may still exist.
    pub abandoned_guaranteed_deletes: u64,
    /// Recipe tasks running now ([`CuratorFramework::recipe_tasks`](crate::CuratorFramework::recipe_tasks)):
    /// 0 once the client is closed.
    pub recipe_tasks: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) operations: AtomicU64,
    pub(crate) failed_operations: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) state_transitions: AtomicU64,
    pub(crate) sessions: AtomicU64,
    pub(crate) pending_guaranteed_deletes: AtomicU64,
    pub(crate) completed_guaranteed_deletes: AtomicU64,
    pub(crate) abandoned_guaranteed_deletes: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Metrics {
        Metrics {
            operations: self.operations.load(Ordering::Relaxed),
            failed_operations: self.failed_operations.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            state_transitions: self.state_transitions.load(Ordering::Relaxed),
            sessions: self.sessions.load(Ordering::Relaxed),
            pending_guaranteed_deletes: self.pending_guaranteed_deletes.load(Ordering::Relaxed),
            completed_guaranteed_deletes: self.completed_guaranteed_deletes.load(Ordering::Relaxed),
            abandoned_guaranteed_deletes: self.abandoned_guaranteed_deletes.load(Ordering::Relaxed),
            recipe_tasks: 0,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics through the `metrics` facade.
// ---------------------------------------------------------------------------------------------

/// The names of the metrics the framework and the recipes record through the
/// [`metrics`](https://docs.rs/metrics/0.24) facade (the table in the crate's README says what
/// each one measures and which labels it has).
///
/// ```
/// use curator_framework::metrics::names;
/// assert_eq!(names::OPERATION_DURATION_SECONDS, "curator_operation_duration_seconds");
/// ```
pub mod names {
    /// Histogram, seconds: how long each operation took, from its first request to its result,
    /// retries included. Label `op` (`zk.create`, `zk.get_data`, …: the operation's span name).
    pub const OPERATION_DURATION_SECONDS: &str = "curator_operation_duration_seconds";
    /// Counter: retries made under the retry policy. Label `op`.
    pub const OPERATION_RETRIES_TOTAL: &str = "curator_operation_retries_total";
    /// Counter: operations that ended in an error. Labels `op` and `error` (the error's kind in
    /// snake case: `no_node`, `connection_loss`, …).
    pub const OPERATION_FAILURES_TOTAL: &str = "curator_operation_failures_total";
    /// Counter: connection-state transitions published. Label `state` (`connected`,
    /// `suspended`, `reconnected`, `lost`, `read_only`).
    pub const CONNECTION_STATE_TRANSITIONS_TOTAL: &str =
        "curator_connection_state_transitions_total";
    /// Counter: ZooKeeper sessions established.
    pub const SESSIONS_ESTABLISHED_TOTAL: &str = "curator_sessions_established_total";
    /// Histogram, seconds: how long each session lived, recorded when it ends (lost, ended on
    /// request, or closed with the client).
    pub const SESSION_LIFETIME_SECONDS: &str = "curator_session_lifetime_seconds";
    /// Histogram, seconds: how long a lock acquisition waited (also when it timed out or
    /// failed). Label `name` (see [`RecipeName`](super::RecipeName)).
    pub const LOCK_WAIT_SECONDS: &str = "curator_lock_wait_seconds";
    /// Histogram, seconds: how long a lock was held, recorded on release. Label `name`.
    pub const LOCK_HOLD_SECONDS: &str = "curator_lock_hold_seconds";
    /// Histogram, seconds: how long each leadership lasted, recorded when it ends. Label `name`.
    pub const LEADER_TENURE_SECONDS: &str = "curator_leader_tenure_seconds";
    /// Gauge: 1 while this participant leads, else 0. Label `name`.
    pub const LEADER_IS_LEADER: &str = "curator_leader_is_leader";
    /// Gauge: the items a queue consumer saw when it last listed the queue. Label `name`.
    pub const QUEUE_DEPTH: &str = "curator_queue_depth";
    /// Histogram, seconds: from an item's node creation (its `ctime`, server clock) to its
    /// take (local clock). Label `name`.
    pub const QUEUE_CONSUMER_LAG_SECONDS: &str = "curator_queue_consumer_lag_seconds";
    /// Histogram, seconds: from a node's last change (its `mtime`, server clock) to the cache
    /// event about it being delivered (local clock). Label `name`.
    pub const CACHE_EVENT_LAG_SECONDS: &str = "curator_cache_event_lag_seconds";
}

/// Describes every metric of [`names`] (unit and help text) to the installed recorder.
///
/// Clients call it when they start; call it again after installing a recorder later (the
/// facade hands descriptions only to the recorder installed at the time).
///
/// ```
/// curator_framework::metrics::describe();
/// ```
pub fn describe() {
    use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_histogram!(
        names::OPERATION_DURATION_SECONDS,
        Unit::Seconds,
        "ZooKeeper operation latency, retries included, by operation"
    );
    describe_counter!(
        names::OPERATION_RETRIES_TOTAL,
        "Retries under the retry policy, by operation"
    );
    describe_counter!(
        names::OPERATION_FAILURES_TOTAL,
        "Operations that ended in an error, by operation and error kind"
    );
    describe_counter!(
        names::CONNECTION_STATE_TRANSITIONS_TOTAL,
        "Connection-state transitions, by new state"
    );
    describe_counter!(
        names::SESSIONS_ESTABLISHED_TOTAL,
        "ZooKeeper sessions established"
    );
    describe_histogram!(
        names::SESSION_LIFETIME_SECONDS,
        Unit::Seconds,
        "How long each ZooKeeper session lived"
    );
    describe_histogram!(
        names::LOCK_WAIT_SECONDS,
        Unit::Seconds,
        "Time spent waiting to acquire a lock"
    );
    describe_histogram!(
        names::LOCK_HOLD_SECONDS,
        Unit::Seconds,
        "Time a lock was held"
    );
    describe_histogram!(
        names::LEADER_TENURE_SECONDS,
        Unit::Seconds,
        "How long each leadership lasted"
    );
    describe_gauge!(names::LEADER_IS_LEADER, "1 while leading, else 0");
    describe_gauge!(
        names::QUEUE_DEPTH,
        Unit::Count,
        "Items seen by the last listing of a queue consumer"
    );
    describe_histogram!(
        names::QUEUE_CONSUMER_LAG_SECONDS,
        Unit::Seconds,
        "From an item's creation (server clock) to its take (local clock)"
    );
    describe_histogram!(
        names::CACHE_EVENT_LAG_SECONDS,
        Unit::Seconds,
        "From a node's last change (server clock) to the cache event (local clock)"
    );
}

/// The value of the `name` label a recipe instance records its metrics under.
///
/// A label value per lock or election path can make a metrics backend keep one series per
/// path: fine for a few well-known paths, ruinous for paths made per job or per tenant. So
/// recipes label their metrics with a name set on their builder when there is one (pick from a
/// small, fixed set: `"orders"`, `"scheduler"`), and with their path otherwise.
///
/// ```
/// use curator_framework::metrics::RecipeName;
/// assert_eq!(RecipeName::new(None, "/locks/orders-17").as_str(), "/locks/orders-17");
/// assert_eq!(RecipeName::new(Some("orders"), "/locks/orders-17").as_str(), "orders");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecipeName(std::sync::Arc<str>);

impl RecipeName {
    /// `name` when given, else `path`.
    ///
    /// ```
    /// let name = curator_framework::metrics::RecipeName::new(None, "/election");
    /// assert_eq!(name.as_str(), "/election");
    /// ```
    pub fn new(name: Option<&str>, path: &str) -> RecipeName {
        RecipeName(std::sync::Arc::from(name.unwrap_or(path)))
    }

    /// The label value.
    ///
    /// ```
    /// let name = curator_framework::metrics::RecipeName::new(Some("jobs"), "/queues/jobs");
    /// assert_eq!(name.as_str(), "jobs");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Records `seconds` in the histogram `metric` (one of [`names`]) under this name.
    ///
    /// ```
    /// use curator_framework::metrics::{RecipeName, names};
    /// let name = RecipeName::new(None, "/locks/a");
    /// name.record(names::LOCK_WAIT_SECONDS, std::time::Duration::from_millis(3));
    /// ```
    pub fn record(&self, metric: &'static str, duration: std::time::Duration) {
        ::metrics::histogram!(metric, "name" => self.label()).record(duration.as_secs_f64());
    }

    /// Records `seconds` (which may come from another clock, so may be negative: recorded as
    /// 0) in the histogram `metric` under this name.
    ///
    /// ```
    /// use curator_framework::metrics::{RecipeName, names};
    /// RecipeName::new(None, "/q").record_seconds(names::QUEUE_CONSUMER_LAG_SECONDS, -0.2);
    /// ```
    pub fn record_seconds(&self, metric: &'static str, seconds: f64) {
        ::metrics::histogram!(metric, "name" => self.label()).record(seconds.max(0.0));
    }

    /// Sets the gauge `metric` (one of [`names`]) under this name.
    ///
    /// ```
    /// use curator_framework::metrics::{RecipeName, names};
    /// RecipeName::new(None, "/election").set(names::LEADER_IS_LEADER, 1.0);
    /// ```
    pub fn set(&self, metric: &'static str, value: f64) {
        ::metrics::gauge!(metric, "name" => self.label()).set(value);
    }

    fn label(&self) -> ::metrics::SharedString {
        ::metrics::SharedString::from(std::sync::Arc::clone(&self.0))
    }
}

/// Seconds from `millis` since the Unix epoch (a ZooKeeper `ctime` or `mtime`, server clock)
/// to now (local clock); negative when the server's clock is ahead.
///
/// ```
/// let now = std::time::SystemTime::now()
///     .duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
/// assert!(curator_framework::metrics::seconds_since_epoch_millis(now - 1_000) >= 1.0);
/// ```
pub fn seconds_since_epoch_millis(millis: i64) -> f64 {
    let now = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(now) => now.as_secs_f64(),
        Err(_) => 0.0,
    };
    // Precision: f64 holds epoch milliseconds exactly.
    #[allow(clippy::cast_precision_loss)]
    let then = millis as f64 / 1000.0;
    now - then
}

/// An operation ended after `elapsed`: records its latency, and its failure.
pub(crate) fn operation_finished(
    op: &'static str,
    elapsed: std::time::Duration,
    error: Option<&crate::error::Error>,
) {
    ::metrics::histogram!(names::OPERATION_DURATION_SECONDS, "op" => op)
        .record(elapsed.as_secs_f64());
    if let Some(error) = error {
        ::metrics::counter!(
            names::OPERATION_FAILURES_TOTAL,
            "op" => op,
            "error" => error_kind(error)
        )
        .increment(1);
    }
}

/// An operation is retried.
pub(crate) fn operation_retried(op: &'static str) {
    ::metrics::counter!(names::OPERATION_RETRIES_TOTAL, "op" => op).increment(1);
}

/// A connection state was published.
pub(crate) fn state_published(state: crate::state::ConnectionState) {
    use crate::state::ConnectionState::*;
    let state = match state {
        Connected => "connected",
        Suspended => "suspended",
        Reconnected => "reconnected",
        Lost => "lost",
        ReadOnly => "read_only",
    };
    ::metrics::counter!(names::CONNECTION_STATE_TRANSITIONS_TOTAL, "state" => state).increment(1);
}

/// A session was established.
pub(crate) fn session_established() {
    ::metrics::counter!(names::SESSIONS_ESTABLISHED_TOTAL).increment(1);
}

/// A session ended after living `lifetime`.
pub(crate) fn session_ended(lifetime: std::time::Duration) {
    ::metrics::histogram!(names::SESSION_LIFETIME_SECONDS).record(lifetime.as_secs_f64());
}

/// The `error` label of a failure: the variant's name in snake case (a bounded set).
pub(crate) fn error_kind(error: &crate::error::Error) -> &'static str {
    use crate::error::Error::*;
    match error {
        NoNode => "no_node",
        NodeExists => "node_exists",
        BadVersion => "bad_version",
        NotEmpty => "not_empty",
        NoChildrenForEphemerals => "no_children_for_ephemerals",
        NoAuth => "no_auth",
        InvalidAcl => "invalid_acl",
        AuthFailed => "auth_failed",
        ConnectionLoss => "connection_loss",
        OperationTimeout => "operation_timeout",
        SessionExpired => "session_expired",
        SessionMoved => "session_moved",
        NotReadOnly => "not_read_only",
        NoWatcher => "no_watcher",
        QuotaExceeded => "quota_exceeded",
        Throttled => "throttled",
        ReconfigDisabled => "reconfig_disabled",
        NewConfigNoQuorum => "new_config_no_quorum",
        ReconfigInProgress => "reconfig_in_progress",
        Unimplemented => "unimplemented",
        Transaction { .. } => "transaction",
        Other { .. } => "other",
        UnexpectedReply(_) => "unexpected_reply",
        BadArguments => "bad_arguments",
        Tls(_) => "tls",
        SaslLogin { .. } => "sasl_login",
        IdentityNotGranted { .. } => "identity_not_granted",
        Closed => "closed",
        NotStarted => "not_started",
        AlreadyStarted => "already_started",
        NotConnected { .. } => "not_connected",
        Timeout { .. } => "timeout",
        InvalidPath { .. } => "invalid_path",
        InvalidArgument(_) => "invalid_argument",
        Decode { .. } => "decode",
        Decompression { .. } => "decompression",
        #[cfg(feature = "schema")]
        SchemaViolation { .. } => "schema_violation",
        LockLost { .. } => "lock_lost",
        NotLeader { .. } => "not_leader",
        ResponseTooLarge { .. } => "response_too_large",
        ValueTooLarge { .. } => "value_too_large",
        ChunkedRead { .. } => "chunked_read",
    }
}

/// The `op` label of [`CuratorFramework::call_with_retry`](crate::CuratorFramework::call_with_retry).
pub(crate) const CALL_WITH_RETRY: &str = "call_with_retry";
