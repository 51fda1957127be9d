//! `reconfig()`: changes the ensemble's membership (ZooKeeper dynamic reconfiguration).

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::ensemble::{EnsembleConfig, EnsembleMember};
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture};
use crate::wire::WireSession;

/// Options of `reconfig()`: either an incremental change ([`joining`](Self::joining) and
/// [`leaving`](Self::leaving)) or a whole new member list ([`with_members`](Self::with_members)),
/// optionally only [`from_config`](Self::from_config) a known version. Awaiting it returns the
/// new configuration.
///
/// **Permissions.** The servers must run with `reconfigEnabled=true`, and the session must be
/// allowed to write `/zookeeper/config`: the super user
/// (`zookeeper.DigestAuthenticationProvider.superDigest`), an identity the node's ACL grants
/// write to, or servers with `skipACL=yes`. Otherwise the server answers
/// [`Error::NoAuth`].
///
/// **How it is applied.** Each attempt syncs and reads the configuration first (two round trips
/// more than the bare request), checks the change against it and sends it conditioned on the version it
/// read, so what was checked is what the change applies to. Without
/// [`from_config`](Self::from_config), a change that loses the race with another
/// reconfiguration is checked and sent again (a few times) against the newer configuration.
///
/// **Errors, each leaving the ensemble unchanged:** [`Error::ReconfigDisabled`] (servers without
/// `reconfigEnabled`), [`Error::NoAuth`], [`Error::ReconfigInProgress`] (another one is under
/// way: retry), [`Error::NewConfigNoQuorum`] (no quorum of the new configuration is connected to
/// the leader: members that are not running yet, say), [`Error::BadVersion`] (the configuration
/// is no longer `from_config`'s), [`Error::BadArguments`] (the server refused the change as
/// malformed), and [`Error::InvalidArgument`] for input refused before any change
/// is sent: no change at all, both kinds at once, a joining spec that is not
/// `server.<id>=...`, a leaving id the ensemble does not have (ZooKeeper itself would accept that
/// as a change that removes nothing and still makes a new configuration version).
///
/// Like every operation it is retried after a connection loss under the client's retry policy.
/// A change whose reply was lost (removing the leader often ends the connection before the
/// reply) is found applied by the retry's read and reported as done, with the configuration
/// read.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// let config = client.ensemble_config().await?;
/// let config = client
///     .reconfig()
///     .joining(["server.4=10.0.0.4:2888:3888:participant;10.0.0.4:2181"])
///     .leaving([1])
///     .from_config(config.version)
///     .await?;
/// assert!(config.member(4).is_some() && config.member(1).is_none());
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until it is awaited"]
pub struct ReconfigBuilder {
    client: CuratorFramework,
    joining: Vec<String>,
    leaving: Vec<u64>,
    members: Option<Vec<String>>,
    from: Option<i64>,
}

impl ReconfigBuilder {
    pub(crate) fn new(client: CuratorFramework) -> Self {
        Self {
            client,
            joining: Vec::new(),
            leaving: Vec::new(),
            members: None,
            from: None,
        }
    }

    /// Members to add (or to change: the same id with a new address or role), each as
    /// `server.<id>=<host>:<quorum port>:<election port>[:participant|observer][;[<host>:]<client port>]`
    /// (an [`EnsembleMember`]'s `Display` form).
    pub fn joining<I, S>(mut self, members: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.joining.extend(members.into_iter().map(Into::into));
        self
    }

    /// Ids of members to remove.
    pub fn leaving<I>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = u64>,
    {
        self.leaving.extend(ids);
        self
    }

    /// Replaces the whole membership (non-incremental), each member as for
    /// [`joining`](Self::joining).
    pub fn with_members<I, S>(mut self, members: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.members = Some(members.into_iter().map(Into::into).collect());
        self
    }

    /// Applies the change only if the current configuration's version is `version`
    /// ([`EnsembleConfig::version`]); otherwise [`Error::BadVersion`].
    pub fn from_config(mut self, version: i64) -> Self {
        self.from = Some(version);
        self
    }

    fn check(&self) -> Result<()> {
        let invalid = |why: String| Err(Error::InvalidArgument(format!("reconfig: {why}")));
        let incremental = !self.joining.is_empty() || !self.leaving.is_empty();
        match &self.members {
            Some(_) if incremental => {
                return invalid(
                    "with_members replaces the membership; it cannot be combined with joining or leaving"
                        .into(),
                );
            }
            Some(members) if members.is_empty() => {
                return invalid("with_members needs at least one member".into());
            }
            None if !incremental => {
                return invalid("no change: name joining, leaving or with_members".into());
            }
            _ => {}
        }
        for spec in self.joining.iter().chain(self.members.iter().flatten()) {
            spec.parse::<EnsembleMember>()?;
        }
        Ok(())
    }

    /// Sends the change; resolves to the new configuration.
    pub fn apply(self) -> OpFuture<EnsembleConfig> {
        if let Err(error) = self.check() {
            return OpFuture::new(async move { Err(error) });
        }
        let client = self.client.without_namespace();
        let span = crate::ops::OpSpan {
            op: "zk.reconfig",
            span: tracing::debug_span!(
                "zk.reconfig",
                session_id = ?client.session_id(),
                joining = self.joining.len(),
                leaving = self.leaving.len(),
                members = self.members.as_ref().map(Vec::len),
                from = self.from,
            ),
        };
        let change = Arc::new(Change {
            joining: self.joining,
            leaving: self.leaving,
            members: self.members,
            from: self.from,
            first_seen: parking_lot::Mutex::new(None),
        });
        ops::run(
            &client,
            span,
            move |session, attempt| {
                let change = Arc::clone(&change);
                async move { change.attempt(&session, attempt).await }
            },
            |result| result,
        )
    }
}

/// What a reconfiguration asks for, and what its attempts saw.
#[derive(Debug)]
struct Change {
    joining: Vec<String>,
    leaving: Vec<u64>,
    members: Option<Vec<String>>,
    /// The caller's `from_config`.
    from: Option<i64>,
    /// The configuration version the first attempt read.
    first_seen: parking_lot::Mutex<Option<i64>>,
}

impl Change {
    /// How many times a change without `from_config` is tried again when another
    /// reconfiguration lands between its read and its write.
    const CONCURRENT_CHANGES: usize = 5;

    /// One attempt: read the configuration, check the change against it, and send it
    /// conditioned on the version read, so the check still holds when the change is applied.
    async fn attempt(&self, session: &WireSession, attempt: u32) -> Result<EnsembleConfig> {
        let leaving: Vec<String> = self.leaving.iter().map(u64::to_string).collect();
        let mut concurrent = 0;
        loop {
            // The connected server may lag the leader: catch up first, so the version read is
            // the one the leader checks.
            session.sync("/zookeeper/config").await?;
            let (data, _) = session.get_config().await?;
            let current = EnsembleConfig::parse(&String::from_utf8_lossy(&data))?;
            let first = *self.first_seen.lock().get_or_insert(current.version);
            // A retry after a lost connection: the change may have been applied before the
            // reply was lost. The configuration then already is what was asked for.
            if attempt > 0 && current.version != first && self.is_applied(&current) {
                return Ok(current);
            }
            if let Some(from) = self.from
                && from != current.version
            {
                return Err(Error::BadVersion);
            }
            if let Some(unknown) = self
                .leaving
                .iter()
                .find(|id| current.member(**id).is_none())
            {
                return Err(Error::InvalidArgument(format!(
                    "reconfig: no member {unknown} in the ensemble (configuration version {:x})",
                    current.version
                )));
            }
            let sent = session
                .reconfig(
                    &self.joining,
                    &leaving,
                    self.members.as_deref(),
                    Some(current.version),
                )
                .await;
            match sent {
                Ok((data, _)) => return EnsembleConfig::parse(&String::from_utf8_lossy(&data)),
                // Another reconfiguration landed after the read: check again against it,
                // unless the caller asked for one version only.
                Err(Error::BadVersion)
                    if self.from.is_none() && concurrent < Self::CONCURRENT_CHANGES =>
                {
                    concurrent += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Whether `config` already is what this change asks for.
    fn is_applied(&self, config: &EnsembleConfig) -> bool {
        let parsed = |specs: &[String]| -> Option<Vec<EnsembleMember>> {
            specs.iter().map(|s| s.parse().ok()).collect()
        };
        match &self.members {
            Some(members) => parsed(members).is_some_and(|mut wanted| {
                wanted.sort_by_key(|m| m.id);
                wanted == config.members
            }),
            None => {
                self.leaving.iter().all(|id| config.member(*id).is_none())
                    && parsed(&self.joining).is_some_and(|joining| {
                        joining.iter().all(|m| config.member(m.id) == Some(m))
                    })
            }
        }
    }
}

impl IntoFuture for ReconfigBuilder {
    type Output = Result<EnsembleConfig>;
    type IntoFuture = OpFuture<EnsembleConfig>;

    fn into_future(self) -> Self::IntoFuture {
        self.apply()
    }
}
