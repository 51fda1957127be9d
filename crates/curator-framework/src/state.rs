//! Connection states, the policy that says which of them are errors, and the client's lifecycle.
//!
//! ```text
//!            start()
//!               │  first session established
//!               ▼
//!          Connected ─────────────┐ (or ReadOnly, when connected to a read-only server)
//!               │ connection lost │
//!               ▼                 │
//!    ┌──────▶ Suspended ──────────┼────────────┐
//!    │          │ reconnected to  │            │ server says: expired, or Suspended lasted the
//!    │          │ the same session│            │ session timeout (the old session is abandoned)
//!    │          ▼                 │            ▼
//!    └────── Reconnected ◀────────┴──────── Lost ── a new session is made ──▶ Reconnected
//! ```
//!
//! `Lost` always means: the session is gone, with its ephemeral nodes and watches. Whether the
//! server confirmed it or the client gave up waiting, the client never uses that session again,
//! so no two sessions of one client are ever alive together. Compare
//! [`CuratorFramework::session_id`](crate::CuratorFramework::session_id) before and after a
//! `Reconnected` to tell a new session from the old one.

pub(crate) mod circuit_breaker;

/// A connection state, as reported to connection-state listeners (Curator's names).
///
/// ```
/// use curator_framework::ConnectionState;
/// assert!(ConnectionState::Reconnected.is_connected());
/// assert!(!ConnectionState::Suspended.is_connected());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The first session was established.
    Connected,
    /// The connection was lost; the session may still be alive. Stop acting on anything that
    /// needs the session (a leader stops leading) until `Reconnected` or `Lost`.
    Suspended,
    /// Connected again: to the same session after `Suspended`, or to a new session after `Lost`.
    Reconnected,
    /// The session is gone: expired at the server, or abandoned after `Suspended` lasted the
    /// session timeout. Ephemeral nodes and watches of that session are gone. A new session is
    /// being made.
    Lost,
    /// Connected to a server in read-only mode (only when the builder allowed it).
    ReadOnly,
}

impl ConnectionState {
    /// Whether requests can be served in this state (`Connected`, `Reconnected`, `ReadOnly`).
    pub fn is_connected(self) -> bool {
        matches!(
            self,
            ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ReadOnly
        )
    }
}

impl std::fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Suspended => "SUSPENDED",
            ConnectionState::Reconnected => "RECONNECTED",
            ConnectionState::Lost => "LOST",
            ConnectionState::ReadOnly => "READ_ONLY",
        };
        f.write_str(name)
    }
}

/// Which connection states a recipe must treat as errors (stop leading, consider a lock lost).
///
/// ```
/// use curator_framework::ConnectionState;
/// use curator_framework::state::ConnectionStateErrorPolicy;
/// assert!(ConnectionStateErrorPolicy::Standard.is_error_state(ConnectionState::Suspended));
/// assert!(!ConnectionStateErrorPolicy::Session.is_error_state(ConnectionState::Suspended));
/// assert!(ConnectionStateErrorPolicy::Session.is_error_state(ConnectionState::Lost));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConnectionStateErrorPolicy {
    /// `Suspended` and `Lost` are errors (Curator's default, and the safe one).
    #[default]
    Standard,
    /// Only `Lost` is an error: a recipe keeps its role while the session may still be alive.
    Session,
}

impl ConnectionStateErrorPolicy {
    /// Whether `state` is an error under this policy.
    pub fn is_error_state(self, state: ConnectionState) -> bool {
        match self {
            ConnectionStateErrorPolicy::Standard => {
                matches!(state, ConnectionState::Suspended | ConnectionState::Lost)
            }
            ConnectionStateErrorPolicy::Session => state == ConnectionState::Lost,
        }
    }
}

/// The client's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameworkState {
    /// Built, not started.
    Latent,
    /// Started and not closed.
    Started,
    /// Closed; operations fail with [`Error::Closed`](crate::Error::Closed).
    Stopped,
}
