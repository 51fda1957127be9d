//! Ensemble providers: where the connect string of each new session comes from.

use std::fmt;

/// Supplies the connect string (`host:port[,host:port...][/chroot]`) each time a session is
/// made: at start and after every session loss. Host names are resolved again on every connect
/// attempt, so a changed DNS record is picked up.
pub trait EnsembleProvider: Send + Sync + fmt::Debug {
    /// The servers to connect to now.
    fn connect_string(&self) -> String;
}

/// Always the same servers.
///
/// ```
/// use curator_framework::ensemble::{EnsembleProvider, FixedEnsembleProvider};
/// let provider = FixedEnsembleProvider::new("zk1:2181,zk2:2181");
/// assert_eq!(provider.connect_string(), "zk1:2181,zk2:2181");
/// ```
#[derive(Debug, Clone)]
pub struct FixedEnsembleProvider(String);

impl FixedEnsembleProvider {
    /// Always `connect_string`.
    pub fn new(connect_string: impl Into<String>) -> Self {
        Self(connect_string.into())
    }
}

impl EnsembleProvider for FixedEnsembleProvider {
    fn connect_string(&self) -> String {
        self.0.clone()
    }
}

/// Asks a closure for the servers each time.
///
/// ```
/// use curator_framework::ensemble::{EnsembleProvider, FnEnsembleProvider};
/// let provider = FnEnsembleProvider::new(|| std::env::var("ZK").unwrap_or("127.0.0.1:2181".into()));
/// assert!(!provider.connect_string().is_empty());
/// ```
pub struct FnEnsembleProvider(Box<dyn Fn() -> String + Send + Sync>);

impl FnEnsembleProvider {
    /// Calls `f` for every new session.
    pub fn new(f: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Box::new(f))
    }
}

impl fmt::Debug for FnEnsembleProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnEnsembleProvider(..)")
    }
}

impl EnsembleProvider for FnEnsembleProvider {
    fn connect_string(&self) -> String {
        (self.0)()
    }
}
