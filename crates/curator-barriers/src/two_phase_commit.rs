//! Two-phase commit: the ZooKeeper recipe for agreeing on one outcome among sites.

use std::fmt;
use std::future::IntoFuture;
use std::time::Duration;

use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result, paths};
use futures::future::{join_all, select_all};
use tokio::time::Instant;

/// The node holding the decision, a child of the transaction node.
pub const OUTCOME_NODE: &str = "_outcome";
/// The ephemeral child of a site's node that shows the site is alive.
pub const ALIVE_NODE: &str = "alive";

/// A site's vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vote {
    /// The site can commit.
    Commit,
    /// The site cannot commit: the transaction aborts.
    Abort,
}

impl Vote {
    fn as_bytes(self) -> &'static [u8] {
        match self {
            Vote::Commit => b"commit",
            Vote::Abort => b"abort",
        }
    }

    fn parse(bytes: &[u8]) -> Option<Vote> {
        match bytes {
            b"commit" => Some(Vote::Commit),
            b"abort" => Some(Vote::Abort),
            _ => None,
        }
    }
}

/// The decision every participant learns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Every site voted commit.
    Commit,
    /// Some site voted abort, vanished, or the decision timed out.
    Abort {
        /// Why (`site db1 voted abort`, `site db2 vanished`, `timed out`).
        reason: String,
    },
}

impl Outcome {
    /// Whether this is [`Outcome::Commit`].
    pub fn is_commit(&self) -> bool {
        matches!(self, Outcome::Commit)
    }

    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Outcome::Commit => b"commit".to_vec(),
            Outcome::Abort { reason } => format!("abort\n{reason}").into_bytes(),
        }
    }

    fn parse(bytes: &[u8]) -> Outcome {
        let text = String::from_utf8_lossy(bytes);
        match text.split_once('\n') {
            None if text == "commit" => Outcome::Commit,
            Some(("abort", reason)) => Outcome::Abort {
                reason: reason.to_owned(),
            },
            _ => Outcome::Abort {
                reason: format!("unreadable outcome {text:?}"),
            },
        }
    }
}

/// A two-phase commit among named sites (the ZooKeeper documentation's recipe, which no other
/// ZooKeeper library ships). It has no options and nothing to start or close: the coordinator
/// and each site act through calls that return when done.
///
/// Layout under the transaction node `T` (created by the coordinator with [`begin`](Self::begin);
/// its data is the site names, one per line):
/// - `T/<site>`: persistent, created when the site [`join`](Self::join)s; empty until the site
///   votes, then `commit` or `abort` (written once, at version 0);
/// - `T/<site>/alive`: ephemeral, created with it: the site's presence;
/// - `T/_outcome`: the decision, `commit` or `abort\n<reason>`, created once: the first
///   participant that can decide creates it and everyone else reads it, so all learn the same
///   outcome.
///
/// Any participant waiting in [`outcome`](Self::outcome) decides as soon as it can: commit when
/// every site voted commit; abort as soon as one site votes abort or a site that joined loses
/// its presence (its session ended) before the decision; abort when the wait times out. Watches
/// wake the participants; nobody polls.
///
/// ```no_run
/// # async fn demo(coordinator: curator_framework::CuratorFramework, site_client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use std::time::Duration;
/// use curator_barriers::{TwoPhaseCommit, Vote};
/// let tx = TwoPhaseCommit::new(coordinator, "/transactions/tx-42")?;
/// tx.begin(&["db1", "db2"]).await?;
///
/// // On each site (its own client):
/// let site = TwoPhaseCommit::new(site_client, "/transactions/tx-42")?.join("db1").await?;
/// site.vote(Vote::Commit).await?;
/// let outcome = site.outcome(Duration::from_secs(30)).await?;
///
/// // The coordinator learns the same outcome, then cleans up.
/// assert_eq!(tx.outcome(Duration::from_secs(30)).await?, outcome);
/// tx.delete().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TwoPhaseCommit {
    client: CuratorFramework,
    path: String,
}

/// One site of a [`TwoPhaseCommit`], returned by [`TwoPhaseCommit::join`].
#[derive(Clone)]
pub struct Site {
    tx: TwoPhaseCommit,
    name: String,
}

impl fmt::Debug for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Site")
            .field("transaction", &self.tx.path)
            .field("name", &self.name)
            .finish()
    }
}

fn validate_site(site: &str) -> Result<()> {
    if site.is_empty() || site.starts_with('_') || site.contains(['/', '\n']) {
        return Err(Error::InvalidArgument(format!(
            "a site name must be non-empty, must not start with '_' and must not contain '/' or a newline: {site:?}"
        )));
    }
    Ok(())
}

impl TwoPhaseCommit {
    /// The transaction at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            client,
            path: path.to_owned(),
        })
    }

    /// The transaction node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Creates the transaction for `sites` (the coordinator's step).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for no sites, a bad or repeated site name;
    /// [`Error::NodeExists`] when the transaction exists; connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the transaction created or not (`begin` again to know:
    /// [`Error::NodeExists`] means it was).
    pub async fn begin(&self, sites: &[impl AsRef<str>]) -> Result<()> {
        let mut names: Vec<&str> = sites.iter().map(AsRef::as_ref).collect();
        if names.is_empty() {
            return Err(Error::InvalidArgument(
                "a two-phase commit needs at least one site".into(),
            ));
        }
        for name in &names {
            validate_site(name)?;
        }
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::InvalidArgument(format!(
                "site names must be distinct: {names:?}"
            )));
        }
        self.client
            .create()
            .creating_parent_containers_if_needed()
            .idempotent()
            .for_path(&self.path, names.join("\n"))
            .await
            .map(drop)
    }

    /// The sites the coordinator named.
    ///
    /// # Errors
    /// [`Error::NoNode`] when the transaction does not exist; connection errors.
    ///
    /// # Cancellation safety
    /// Safe (a read).
    pub async fn sites(&self) -> Result<Vec<String>> {
        let (data, _) = self.client.get_data().for_path(&self.path).await?;
        Ok(parse_sites(&data))
    }

    /// Joins as `site`: creates its node and its presence.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `site` is not one of the transaction's sites;
    /// [`Error::NodeExists`] when the site already joined; [`Error::NoNode`] when the
    /// transaction does not exist (the coordinator has not begun it); connection errors.
    ///
    /// # Cancellation safety
    /// The site's node and presence are made together or not at all; dropping the future may
    /// leave them made (a later `join` then fails with [`Error::NodeExists`]).
    pub async fn join(&self, site: &str) -> Result<Site> {
        validate_site(site)?;
        let sites = self.sites().await?;
        if !sites.iter().any(|s| s == site) {
            return Err(Error::InvalidArgument(format!(
                "{site:?} is not a site of {}: {sites:?}",
                self.path
            )));
        }
        let node = paths::join(&self.path, site);
        let joined = self
            .client
            .transaction()
            .create(&node, [])
            .op(curator_framework::ops::transaction::TransactionOp::create(
                &paths::join(&node, ALIVE_NODE),
                [],
            )
            .with_mode(CreateMode::Ephemeral))
            .commit()
            .await;
        match joined {
            Ok(_) => {}
            Err(Error::Transaction { cause, .. }) => return Err(*cause),
            Err(error) => return Err(error),
        }
        Ok(Site {
            tx: self.clone(),
            name: site.to_owned(),
        })
    }

    /// Waits for the outcome, deciding it when this participant is the first to see it is
    /// decided; aborts the transaction when `timeout` passes first.
    ///
    /// # Errors
    /// [`Error::NoNode`] when the transaction does not exist; connection errors.
    ///
    /// # Cancellation safety
    /// Safe: a decision it was recording either stands for everyone or was never made.
    pub async fn outcome(&self, timeout: Duration) -> Result<Outcome> {
        let deadline = Instant::now() + timeout;
        let outcome_path = paths::join(&self.path, OUTCOME_NODE);
        loop {
            let (children, _, children_watch) = self
                .client
                .get_children()
                .watched()
                .for_path(&self.path)
                .await?;
            if children.iter().any(|c| c == OUTCOME_NODE) {
                return self.read_outcome(&outcome_path).await;
            }
            let (sites, mut watchers) = self.look().await?;
            watchers.push(children_watch);
            if let Some(decision) = decide(&sites) {
                return self.settle(&outcome_path, decision).await;
            }
            let wake = select_all(watchers.into_iter().map(IntoFuture::into_future));
            if tokio::time::timeout_at(deadline, wake).await.is_err() {
                return self
                    .settle(
                        &outcome_path,
                        Outcome::Abort {
                            reason: "timed out".into(),
                        },
                    )
                    .await;
            }
        }
    }

    /// Deletes the transaction and everything under it (once every participant has its
    /// outcome).
    ///
    /// # Errors
    /// Connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave part of the transaction's nodes behind (`delete` again).
    pub async fn delete(&self) -> Result<()> {
        self.client
            .delete()
            .deleting_children_if_needed()
            .quietly()
            .for_path(&self.path)
            .await
    }

    /// Each site's state, with watches on everything that can change it.
    async fn look(&self) -> Result<(Vec<SiteState>, Vec<Watcher>)> {
        let names = self.sites().await?;
        let reads = names
            .iter()
            .map(|name| {
                let node = paths::join(&self.path, name);
                let data = self
                    .client
                    .get_data()
                    .watched()
                    .for_path(&node)
                    .into_future();
                let alive = self
                    .client
                    .check_exists()
                    .watched()
                    .for_path(&paths::join(&node, ALIVE_NODE))
                    .into_future();
                async move { (data.await, alive.await) }
            })
            .collect::<Vec<_>>();
        let mut sites = Vec::with_capacity(names.len());
        let mut watchers = Vec::new();
        for (name, (data, alive)) in names.into_iter().zip(join_all(reads).await) {
            let (joined, vote) = match data {
                Ok((data, _, watcher)) => {
                    watchers.push(watcher);
                    (true, Vote::parse(&data))
                }
                Err(Error::NoNode) => {
                    // Not joined yet: the children watch wakes us when it does.
                    (false, None)
                }
                Err(error) => return Err(error),
            };
            let (alive, watcher) = alive?;
            watchers.push(watcher);
            sites.push(SiteState {
                name,
                joined,
                vote,
                alive: alive.is_some(),
            });
        }
        Ok((sites, watchers))
    }

    /// Records `decision` unless someone decided first; returns the outcome that stands.
    async fn settle(&self, outcome_path: &str, decision: Outcome) -> Result<Outcome> {
        match self
            .client
            .create()
            .idempotent()
            .for_path(outcome_path, decision.to_bytes())
            .await
        {
            Ok(_) => Ok(decision),
            Err(Error::NodeExists) => self.read_outcome(outcome_path).await,
            Err(error) => Err(error),
        }
    }

    async fn read_outcome(&self, outcome_path: &str) -> Result<Outcome> {
        let (data, _) = self.client.get_data().for_path(outcome_path).await?;
        Ok(Outcome::parse(&data))
    }
}

impl Site {
    /// The site's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Votes (once; voting the same again is fine, a different vote is an error).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the site already voted differently; connection errors.
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the vote cast or not (voting the same again is fine).
    pub async fn vote(&self, vote: Vote) -> Result<()> {
        let node = paths::join(&self.tx.path, &self.name);
        match self
            .tx
            .client
            .set_data()
            .with_version(0)
            .for_path(&node, vote.as_bytes())
            .await
        {
            Ok(_) => Ok(()),
            Err(Error::BadVersion) => {
                let (data, _) = self.tx.client.get_data().for_path(&node).await?;
                if Vote::parse(&data) == Some(vote) {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument(format!(
                        "site {} already voted {}",
                        self.name,
                        String::from_utf8_lossy(&data)
                    )))
                }
            }
            Err(error) => Err(error),
        }
    }

    /// See [`TwoPhaseCommit::outcome`].
    ///
    /// # Errors
    /// As [`TwoPhaseCommit::outcome`].
    ///
    /// # Cancellation safety
    /// As [`TwoPhaseCommit::outcome`].
    pub async fn outcome(&self, timeout: Duration) -> Result<Outcome> {
        self.tx.outcome(timeout).await
    }

    /// The transaction this site belongs to.
    pub fn transaction(&self) -> &TwoPhaseCommit {
        &self.tx
    }
}

struct SiteState {
    name: String,
    joined: bool,
    vote: Option<Vote>,
    alive: bool,
}

fn parse_sites(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What the sites' states decide, if anything yet.
fn decide(sites: &[SiteState]) -> Option<Outcome> {
    if let Some(site) = sites.iter().find(|s| s.vote == Some(Vote::Abort)) {
        return Some(Outcome::Abort {
            reason: format!("site {} voted abort", site.name),
        });
    }
    if let Some(site) = sites.iter().find(|s| s.joined && !s.alive) {
        return Some(Outcome::Abort {
            reason: format!("site {} vanished", site.name),
        });
    }
    sites
        .iter()
        .all(|s| s.vote == Some(Vote::Commit))
        .then_some(Outcome::Commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: &str, joined: bool, vote: Option<Vote>, alive: bool) -> SiteState {
        SiteState {
            name: name.into(),
            joined,
            vote,
            alive,
        }
    }

    #[test]
    fn decisions() {
        let commit = Some(Vote::Commit);
        assert_eq!(
            decide(&[site("a", true, commit, true), site("b", true, commit, true)]),
            Some(Outcome::Commit)
        );
        assert_eq!(
            decide(&[site("a", true, commit, true), site("b", false, None, false)]),
            None,
            "b has not joined"
        );
        assert_eq!(
            decide(&[
                site("a", true, None, true),
                site("b", true, Some(Vote::Abort), true)
            ]),
            Some(Outcome::Abort {
                reason: "site b voted abort".into()
            })
        );
        assert_eq!(
            decide(&[site("a", true, commit, false), site("b", true, None, true)]),
            Some(Outcome::Abort {
                reason: "site a vanished".into()
            })
        );
        for outcome in [
            Outcome::Commit,
            Outcome::Abort {
                reason: "timed out".into(),
            },
        ] {
            assert_eq!(Outcome::parse(&outcome.to_bytes()), outcome);
        }
        assert!(validate_site("_outcome").is_err());
        assert!(validate_site("a/b").is_err());
        assert!(validate_site("db1").is_ok());
    }
}
