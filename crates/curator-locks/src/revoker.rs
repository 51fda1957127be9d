//! `Revoker`: ask a lock's holder to release it.

use curator_framework::{CuratorFramework, Error, Result};

use crate::mutex::REVOKE_MESSAGE;

/// Asks the holder of a revocable lock to release it (Curator's `Revoker`): writes
/// `__REVOKE__` into the holder's lock node, which a holder that made its lock revocable watches.
/// Java and Rust holders both understand it.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::{InterProcessMutex, Revoker};
/// let mutex = InterProcessMutex::builder(client.clone(), "/locks/report").build()?;
/// if let Some(holder) = mutex.participant_nodes().await?.first() {
///     Revoker::attempt_revoke(&client, holder).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Revoker;

impl Revoker {
    /// Asks the holder of the lock node `node` to release. A node that is already gone is not an
    /// error.
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the request written or not.
    pub async fn attempt_revoke(client: &CuratorFramework, node: &str) -> Result<()> {
        match client.set_data().for_path(node, REVOKE_MESSAGE).await {
            Ok(_) | Err(Error::NoNode) => Ok(()),
            Err(error) => Err(error),
        }
    }
}
