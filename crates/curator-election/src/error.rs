//! The failures of election calls that callers act on, beyond the framework's own errors.

use curator_framework::Error;

/// What [`LeaderLatch::proclaim`](crate::LeaderLatch::proclaim) fails with.
///
/// ```
/// use curator_election::ElectionError;
/// use curator_framework::Error;
/// assert_eq!(ElectionError::from(Error::ConnectionLoss), ElectionError::Zk(Error::ConnectionLoss));
/// assert_eq!(ElectionError::NotLeader.to_string(), "not the leader");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElectionError {
    /// This participant does not lead (any more): nothing was written.
    #[error("not the leader")]
    NotLeader,
    /// A ZooKeeper or framework error.
    #[error(transparent)]
    Zk(#[from] Error),
}
