//! The [`Tracker`]: what the client does with the configuration it follows.

use std::fmt;

use super::EnsembleConfig;
use super::connect::{same_server_key, servers};

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
    /// Woken on every new configuration (the session task decides whether to move).
    pub(crate) changed: tokio::sync::Notify,
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
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Takes a configuration read from the server; returns whether it is news (a configuration
    /// older than the one known is ignored).
    pub(crate) fn update(&self, config: EnsembleConfig) -> bool {
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
        self.changes.publish(config);
        // One waiter (the session task); a stored permit covers a change between its checks.
        self.changed.notify_one();
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

    /// Whether a connection made with `connect_string` can no longer reach the ensemble on its
    /// own: none of its servers is a member any more, and the configuration names others.
    pub(crate) fn should_move(&self, connect_string: &str) -> Option<String> {
        let target = self.connect_string()?;
        let members: Vec<(String, u16)> = servers(&target).iter().map(same_server_key).collect();
        let known = servers(connect_string)
            .iter()
            .map(same_server_key)
            .any(|server| members.contains(&server));
        (!known).then_some(target)
    }

    /// The members to ask for the configuration while a connection made with `connect_string`
    /// is down: the followed members, when they include servers that connection does not know
    /// (so the configuration may have moved on without it hearing).
    pub(crate) fn probe_target(&self, connect_string: &str) -> Option<String> {
        let target = self.connect_string()?;
        let known: Vec<(String, u16)> = servers(connect_string)
            .iter()
            .map(same_server_key)
            .collect();
        servers(&target)
            .iter()
            .map(same_server_key)
            .any(|server| !known.contains(&server))
            .then_some(target)
    }
}
