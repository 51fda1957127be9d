//! The [`Tracker`]: what the client does with the configuration it follows.

use std::fmt;

use super::EnsembleConfig;

/// What the client does with the ensemble's dynamic configuration (see
/// [`CuratorFrameworkBuilder::ensemble_tracking`](crate::CuratorFrameworkBuilder::ensemble_tracking)).
pub(crate) struct Tracker {
    /// Follow the configuration at all.
    pub(crate) follow: bool,
    /// Use it for the connect string of later connections.
    pub(crate) rewrite: bool,
    /// The chroot of the connect string the client was given, kept on every rewritten one.
    chroot: Option<String>,
    current: parking_lot::Mutex<Option<EnsembleConfig>>,
    pub(crate) changes: crate::listen::ListenerContainer<EnsembleConfig>,
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker")
            .field("follow", &self.follow)
            .field("rewrite", &self.rewrite)
            .field("chroot", &self.chroot)
            .field("current", &*self.current.lock())
            .finish_non_exhaustive()
    }
}

impl Tracker {
    pub(crate) fn new(
        follow: bool,
        rewrite: bool,
        chroot: Option<String>,
        changes: crate::listen::ListenerContainer<EnsembleConfig>,
    ) -> Self {
        Self {
            follow,
            rewrite: follow && rewrite,
            chroot,
            current: parking_lot::Mutex::new(None),
            changes,
        }
    }

    /// Takes a configuration read from the server; returns whether it is news (a configuration
    /// older than the one known is ignored). `before` runs on news before anyone hears of it.
    pub(crate) fn update_then(&self, config: EnsembleConfig, before: impl FnOnce()) -> bool {
        {
            let mut current = self.current.lock();
            if let Some(known) = current.as_ref() {
                if config.version < known.version || *known == config {
                    return false;
                }
            }
            *current = Some(config.clone());
        }
        tracing::info!(
            version = format_args!("{:#x}", config.version),
            members = config.members.len(),
            connect_string = config.connect_string().as_deref().unwrap_or("-"),
            "ensemble configuration"
        );
        before();
        self.changes.publish(config);
        true
    }

    pub(crate) fn current(&self) -> Option<EnsembleConfig> {
        self.current.lock().clone()
    }

    /// The connect string the next connection should use, when the configuration is followed
    /// and names client addresses: those addresses and the original chroot.
    pub(crate) fn connect_string(&self) -> Option<String> {
        if !self.rewrite {
            return None;
        }
        let hosts = self.current.lock().as_ref()?.connect_string()?;
        Some(match &self.chroot {
            Some(chroot) => format!("{hosts}{chroot}"),
            None => hosts,
        })
    }
}
