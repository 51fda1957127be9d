//! `TestingCluster`: a real ZooKeeper ensemble on loopback ports.

use std::time::Duration;

use tempfile::TempDir;

use crate::config::{self, ClientPorts, PeerPorts, ServerFiles, ServerSettings};
use crate::error::{Error, Result};
use crate::four_letter::{ServerMode, server_mode};
use crate::java::{JavaProcess, server_jvm_args, spawn_java};
use crate::sasl::ServerSasl;
use crate::timing::Timing;
use crate::tls::ServerTls;

const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
const START_ATTEMPTS: usize = 3;

/// An ensemble of `n` real ZooKeeper servers (`QuorumPeerMain`) on loopback ports, each with its
/// own data directory. Members are numbered from 0 here (their ZooKeeper `myid` is index + 1).
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// let mut cluster = curator_test::TestingCluster::start(3).await?;
/// let leader = cluster.await_leader().await?;
/// cluster.kill(leader)?;             // the others elect a new leader
/// let next = cluster.await_leader().await?;
/// assert_ne!(leader, next);
/// cluster.restart(leader).await?;    // rejoins as a follower
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingCluster {
    members: Vec<Member>,
    settings: ServerSettings,
    timing: Timing,
    dir: TempDir,
}

/// Options for a [`TestingCluster`].
///
/// ```no_run
/// # async fn demo() -> curator_test::Result<()> {
/// use curator_test::{TestCertificates, TestingCluster};
/// let certs = TestCertificates::generate()?;
/// let cluster = TestingCluster::builder(3).tls(certs.server_tls()).start().await?;
/// let tls_members = cluster.secure_connect_string().unwrap(); // "localhost:p1,localhost:p2,..."
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TestingClusterBuilder {
    members: usize,
    settings: ServerSettings,
    timing: Option<Timing>,
}

impl TestingClusterBuilder {
    /// Every member serves TLS on a second client port with the certificate and client
    /// authentication of `tls` ([`TestingCluster::secure_connect_string`]). The members talk to
    /// each other in plaintext, and their plaintext client ports stay open.
    pub fn tls(mut self, tls: ServerTls) -> Self {
        self.settings.tls = Some(tls);
        self
    }

    /// Every member authenticates clients with SASL (see [`ServerSasl`]). The members do not
    /// authenticate each other.
    pub fn sasl(mut self, sasl: ServerSasl) -> Self {
        self.settings.sasl = Some(sasl);
        self
    }

    /// Members keep serving reads after losing their quorum (see
    /// [`TestingCluster::start_read_only_capable`]).
    pub fn read_only_capable(mut self) -> Self {
        self.settings.read_only_mode = true;
        self
    }

    /// An extra JVM option for every member.
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
        self.settings.jvm_args.push(arg.into());
        self
    }

    /// The deadlines used while starting and restarting (default [`Timing::new`]).
    pub fn timing(mut self, timing: Timing) -> Self {
        self.timing = Some(timing);
        self
    }

    /// Starts the ensemble and waits until every member serves (with TLS, until every TLS port
    /// accepts connections) and one leads.
    ///
    /// # Errors
    /// As [`TestingCluster::start`]; [`Error::InvalidArgument`] for an invalid [`ServerSasl`]
    /// option.
    pub async fn start(self) -> Result<TestingCluster> {
        self.settings.validate()?;
        TestingCluster::launch(self.members, self.timing.unwrap_or_default(), self.settings).await
    }
}

#[derive(Debug)]
struct Member {
    process: Option<JavaProcess>,
    ports: PeerPorts,
    files: ServerFiles,
    log: std::path::PathBuf,
}

impl Member {
    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.ports.client)
    }

    fn secure_address(&self) -> Option<String> {
        self.ports.secure.map(|port| format!("localhost:{port}"))
    }

    fn spawn(&mut self, settings: &ServerSettings) -> Result<()> {
        let args = vec![self.files.config.display().to_string()];
        let mut jvm_args = settings.jvm_args.clone();
        jvm_args.extend(self.files.jvm_args.iter().cloned());
        if settings.read_only_mode {
            jvm_args.push("-Dreadonlymode.enabled=true".to_owned());
        }
        self.process = Some(spawn_java(
            &server_jvm_args(&jvm_args),
            QUORUM_MAIN,
            &args,
            &self.log,
        )?);
        Ok(())
    }

    async fn await_serving(&mut self, deadline: Duration) -> Result<ServerMode> {
        let address = self.address();
        let process = self
            .process
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument(format!("member at {address} is not running")))?;
        let mode = config::await_serving(
            &address,
            process,
            &[
                ServerMode::Leader,
                ServerMode::Follower,
                ServerMode::Observer,
            ],
            deadline,
        )
        .await?;
        if let Some(secure) = self.ports.secure {
            config::await_accepting(&format!("127.0.0.1:{secure}"), process, deadline).await?;
        }
        Ok(mode)
    }
}

impl TestingCluster {
    /// Starts an `n`-member ensemble and waits until every member serves and one leads.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `n == 0`; start-up errors as
    /// [`crate::TestingServerBuilder::start`].
    pub async fn start(n: usize) -> Result<Self> {
        Self::start_with(n, Timing::new()).await
    }

    /// [`TestingCluster::start`] with explicit deadlines.
    ///
    /// # Errors
    /// As [`TestingCluster::start`].
    pub async fn start_with(n: usize, timing: Timing) -> Result<Self> {
        Self::launch(n, timing, ServerSettings::default()).await
    }

    /// An ensemble whose members keep serving reads after losing their quorum, to clients that
    /// allow read-only mode. It runs with ZooKeeper's local sessions (sessions are known to one
    /// member until they create an ephemeral node), which a read-only member needs to accept
    /// sessions; the default ensemble does not, as most production ensembles do not.
    ///
    /// # Errors
    /// As [`TestingCluster::start`].
    pub async fn start_read_only_capable(n: usize) -> Result<Self> {
        Self::builder(n).read_only_capable().start().await
    }

    /// Options for an `n`-member ensemble (TLS, SASL, read-only mode, deadlines).
    pub fn builder(n: usize) -> TestingClusterBuilder {
        TestingClusterBuilder {
            members: n,
            settings: ServerSettings::default(),
            timing: None,
        }
    }

    async fn launch(n: usize, timing: Timing, settings: ServerSettings) -> Result<Self> {
        if n == 0 {
            return Err(Error::InvalidArgument(
                "a cluster needs at least one member".into(),
            ));
        }
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let mut cluster = Self::prepare(n, timing, settings.clone())?;
            match cluster.launch_all().await {
                Ok(()) => return Ok(cluster),
                Err(error) if config::is_port_conflict(&error) => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidArgument("no start attempt".into())))
    }

    fn prepare(n: usize, timing: Timing, settings: ServerSettings) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("curator-test-ensemble-")
            .tempdir()
            .map_err(Error::io("creating a temporary ensemble directory"))?;
        let per_member = if settings.tls.is_some() { 4 } else { 3 };
        let ports = config::free_ports(per_member * n)?;
        let peers: Vec<PeerPorts> = ports
            .chunks(per_member)
            .map(|p| PeerPorts {
                client: p[0],
                quorum: p[1],
                election: p[2],
                secure: p.get(3).copied(),
            })
            .collect();
        let mut members = Vec::with_capacity(n);
        for (index, ports) in peers.iter().enumerate() {
            let member_dir = dir.path().join(format!("member-{}", index + 1));
            let client_ports = ClientPorts {
                plain: ports.client,
                secure: ports.secure,
            };
            let files = config::write_config(&member_dir, client_ports, &settings, &peers)?;
            let myid = member_dir.join("data/myid");
            std::fs::write(&myid, format!("{}\n", index + 1))
                .map_err(Error::io(format!("writing {}", myid.display())))?;
            members.push(Member {
                process: None,
                ports: *ports,
                files,
                log: member_dir.join("zookeeper.log"),
            });
        }
        Ok(Self {
            members,
            settings,
            timing,
            dir,
        })
    }

    async fn launch_all(&mut self) -> Result<()> {
        for member in &mut self.members {
            member.spawn(&self.settings)?;
        }
        let deadline = self.timing.forever();
        for member in &mut self.members {
            member.await_serving(deadline).await?;
        }
        self.await_leader().await?;
        Ok(())
    }

    /// Number of members, running or not.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: a cluster has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every member's client address, comma-separated, for a client's connect string.
    pub fn connect_string(&self) -> String {
        self.members
            .iter()
            .map(Member::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every member's TLS client address (`localhost:<port>`), comma-separated, for an ensemble
    /// started with [`TestingClusterBuilder::tls`]; `None` otherwise. See
    /// [`TestingServer::secure_connect_string`](crate::TestingServer::secure_connect_string).
    pub fn secure_connect_string(&self) -> Option<String> {
        self.members
            .iter()
            .map(Member::secure_address)
            .collect::<Option<Vec<_>>>()
            .map(|addresses| addresses.join(","))
    }

    /// One member's TLS client address (`localhost:<port>`), for an ensemble with TLS.
    ///
    /// # Panics
    /// When `index` is not below [`len`](Self::len).
    pub fn member_secure_connect_string(&self, index: usize) -> Option<String> {
        self.members[index].secure_address()
    }

    /// Every member's plaintext client address as `localhost:<port>`, comma-separated: what a
    /// Kerberos client connects to (see
    /// [`TestingServer::localhost_connect_string`](crate::TestingServer::localhost_connect_string)).
    pub fn localhost_connect_string(&self) -> String {
        self.members
            .iter()
            .map(|member| format!("localhost:{}", member.ports.client))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// One member's client address (`host:port`).
    ///
    /// # Panics
    /// When `index` is not below [`len`](Self::len).
    pub fn member_connect_string(&self, index: usize) -> String {
        self.members[index].address()
    }

    /// The ensemble's temporary directory (one `member-N` directory per member).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Whether member `index` runs.
    pub fn is_running(&self, index: usize) -> bool {
        self.members.get(index).is_some_and(|m| m.process.is_some())
    }

    /// Kills member `index`, as a crash would; its data stays for [`restart`](Self::restart).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble.
    pub fn kill(&mut self, index: usize) -> Result<()> {
        let member = self.member(index)?;
        if let Some(mut process) = member.process.take() {
            process.kill();
        }
        Ok(())
    }

    /// Starts member `index` again (killing it first if it runs) with the same ports and data, and
    /// waits until it serves as leader, follower or observer. A lone member of a broken quorum
    /// never serves, so restart enough members to form a quorum, in any order, before relying on
    /// the wait: this waits up to the long deadline.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble; start-up errors as
    /// [`crate::TestingServerBuilder::start`].
    pub async fn restart(&mut self, index: usize) -> Result<()> {
        self.kill(index)?;
        let settings = self.settings.clone();
        let deadline = self.timing.forever();
        let member = self.member(index)?;
        member.spawn(&settings)?;
        member.await_serving(deadline).await?;
        Ok(())
    }

    /// The index of the member that reports itself leader now, asked with `srvr`.
    pub async fn leader(&self) -> Option<usize> {
        for (index, member) in self.members.iter().enumerate() {
            if member.process.is_some()
                && server_mode(&member.address(), Duration::from_secs(2)).await
                    == Some(ServerMode::Leader)
            {
                return Some(index);
            }
        }
        None
    }

    /// Waits (up to the long deadline of [`Timing`]) until a member leads, and returns its index.
    ///
    /// # Errors
    /// [`Error::Timeout`] when no member leads in time (for example when too few run).
    pub async fn await_leader(&self) -> Result<usize> {
        let deadline = self.timing.forever();
        let start = std::time::Instant::now();
        loop {
            if let Some(leader) = self.leader().await {
                return Ok(leader);
            }
            if start.elapsed() > deadline {
                return Err(Error::Timeout(deadline, "an ensemble leader".into()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn member(&mut self, index: usize) -> Result<&mut Member> {
        let len = self.members.len();
        self.members.get_mut(index).ok_or_else(|| {
            Error::InvalidArgument(format!("member {index} of a {len}-member cluster"))
        })
    }
}
