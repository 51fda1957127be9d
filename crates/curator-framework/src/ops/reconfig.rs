//! `reconfig()`: changes the ensemble's membership (ZooKeeper dynamic reconfiguration).

use std::future::IntoFuture;
use std::sync::Arc;

use crate::client::CuratorFramework;
use crate::ensemble::{EnsembleConfig, EnsembleMember};
use crate::error::{Error, Result};
use crate::ops::{self, OpFuture};

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
/// **Errors, each leaving the ensemble unchanged:** [`Error::ReconfigDisabled`] (servers without
/// `reconfigEnabled`), [`Error::NoAuth`], [`Error::ReconfigInProgress`] (another one is under
/// way: retry), [`Error::NewConfigNoQuorum`] (no quorum of the new configuration is connected to
/// the leader), [`Error::BadVersion`] (the configuration is no longer `from_config`'s),
/// [`Error::BadArguments`] (the server refused the change, e.g. it leaves no participant),
/// and [`Error::InvalidArgument`] for input refused before anything is sent: no change at all,
/// both kinds at once, a joining spec that is not `server.<id>=...`, a leaving id that is not a
/// number.
///
/// Like every operation it is retried after a connection loss under the client's retry policy;
/// a change applied just before the connection broke is then refused the second time
/// ([`Error::BadVersion`] with `from_config`, which is what makes a retried reconfig safe).
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
    leaving: Vec<String>,
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
        self.leaving
            .extend(ids.into_iter().map(|id| id.to_string()));
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
        let span = tracing::debug_span!(
            "zk.reconfig",
            session_id = ?client.session_id(),
            joining = self.joining.len(),
            leaving = self.leaving.len(),
            members = self.members.as_ref().map(Vec::len),
            from = self.from,
        );
        let change = Arc::new((self.joining, self.leaving, self.members, self.from));
        ops::run(
            &client,
            span,
            move |session, _| {
                let change = Arc::clone(&change);
                async move {
                    let (joining, leaving, members, from) = &*change;
                    session
                        .reconfig(joining, leaving, members.as_deref(), *from)
                        .await
                }
            },
            |result| {
                let (data, _stat) = result?;
                EnsembleConfig::parse(&String::from_utf8_lossy(&data))
            },
        )
    }
}

impl IntoFuture for ReconfigBuilder {
    type Output = Result<EnsembleConfig>;
    type IntoFuture = OpFuture<EnsembleConfig>;

    fn into_future(self) -> Self::IntoFuture {
        self.apply()
    }
}
