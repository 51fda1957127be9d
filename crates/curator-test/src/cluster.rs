//! `TestingCluster`: a real ZooKeeper ensemble on loopback ports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use crate::config::{self, PeerPorts, Peers, ServerFiles, ServerSettings};
use crate::error::{Error, Result};
use crate::four_letter::{ServerMode, four_letter_word, server_mode};
use crate::java::{JavaProcess, server_jvm_args, spawn_java};
use crate::partition::{LinkedMember, PeerLinks, peer_host, write_hosts_file};
use crate::reconfig::{DynamicConfig, SuperCredentials, server_value};
use crate::sasl::ServerSasl;
use crate::timing::Timing;
use crate::tls::ServerTls;
use crate::version::ZooKeeperVersion;

const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
const START_ATTEMPTS: usize = 3;
/// `FastLeaderElection`'s cap on the interval between a looking member's notification rounds.
const MAX_NOTIFICATION_INTERVAL: &str = "zookeeper.fastleader.maxNotificationInterval";

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
    /// The proxies between members, for an ensemble built
    /// [`partitionable`](TestingClusterBuilder::partitionable).
    links: Option<PeerLinks>,
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

    /// Members can be reconfigured at run time (ZooKeeper's dynamic reconfiguration): they run
    /// with `reconfigEnabled=true` and `standaloneEnabled=false`, their `server.<id>=` lines live
    /// in a dynamic configuration file (`dynamicConfigFile`) that ZooKeeper rewrites after each
    /// reconfiguration, and a super user with a random password
    /// ([`TestingCluster::super_credentials`]) is the one identity allowed to reconfigure (no
    /// `skipACL`). See [`TestingCluster::start_new_member`],
    /// [`TestingCluster::stop_member`] and [`TestingCluster::move_member_to_new_port`].
    ///
    /// Combines with every other option (TLS, SASL, read-only mode, timing). With
    /// [`enforced`](ServerSasl::enforced) SASL the super user's client must also log in with
    /// SASL, since the servers refuse clients without it.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use curator_session::{Session, SessionConfig};
    /// use curator_test::TestingCluster;
    ///
    /// let cluster = TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let admin = Session::connect(
    ///     SessionConfig::new(&cluster.connect_string())?
    ///         .auth("digest", cluster.super_credentials().unwrap().digest_auth()),
    /// )
    /// .await?;
    /// let (config, _) = admin.get_config().await?; // "server.1=127.0.0.1:...\nversion=1..."
    /// # Ok(()) }
    /// ```
    pub fn dynamic_reconfig(mut self) -> Self {
        self.settings.super_user = Some(SuperCredentials::generate());
        self
    }

    /// Members can be partitioned from each other while clients stay attached to them:
    /// [`TestingCluster::isolate`], [`TestingCluster::partition`], [`TestingCluster::heal`].
    ///
    /// Every member reaches every other member's quorum and election ports through fault
    /// proxies of its own, one pair of proxies per ordered pair of members, so a partition cuts
    /// exactly the links between groups; clients still connect to the members' own client ports
    /// (or through their own [`FaultProxy`](crate::FaultProxy)s).
    ///
    /// How: the members' configuration names them by host name (`server.<id>=zk-<id>:...`),
    /// the same text on every member, and each member's JVM resolves those names with a hosts
    /// file of its own (`-Djdk.net.hosts.file`): its own name to `127.0.0.1`, where it binds
    /// its real ports, and member *b*'s name, for member *a*, to `127.1.a.b`, where a proxy at
    /// *b*'s port numbers forwards to *b*. Because the configuration text is shared, this
    /// combines with [`dynamic_reconfig`](Self::dynamic_reconfig) (ZooKeeper rewrites and
    /// shares that configuration; the per-member view lives in name resolution, which it does
    /// not touch), and [`TestingCluster::member_spec`] names the member `zk-<id>` too. A
    /// member's election proxy also rewrites the election address ZooKeeper sends in the first
    /// message of an election connection, because the receiver may close that connection and
    /// connect back to the address in it, bypassing the proxies.
    ///
    /// A looking member retries its peers at least every 2 s (ZooKeeper's
    /// `zookeeper.fastleader.maxNotificationInterval`, 60 s by default), so an isolated member
    /// rejoins within seconds of [`heal`](TestingCluster::heal) however long it was cut off.
    ///
    /// Member ids go up to 250 (one octet of the proxy addresses); the host names make this
    /// option unsuitable for Kerberos between members (they do not authenticate each other
    /// here anyway).
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// let cluster = curator_test::TestingCluster::builder(3).partitionable().start().await?;
    /// let leader = cluster.await_leader().await?;
    /// cluster.isolate(leader)?;     // the other two elect a new leader
    /// cluster.heal()?;              // the old leader rejoins as a follower
    /// # Ok(()) }
    /// ```
    pub fn partitionable(mut self) -> Self {
        self.settings.partitionable = true;
        self
    }

    /// Members keep serving reads after losing their quorum (see
    /// [`TestingCluster::start_read_only_capable`]).
    pub fn read_only_capable(mut self) -> Self {
        self.settings.read_only_mode = true;
        self
    }

    /// Every member runs this ZooKeeper release, whatever `ZOOKEEPER_CLASSPATH` and
    /// `CURATOR_TEST_ZK_VERSION` say (see [`ZooKeeperVersion`]).
    pub fn version(mut self, version: ZooKeeperVersion) -> Self {
        self.settings.version = Some(version);
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
    /// ZooKeeper's `myid`.
    id: u64,
    /// `member-<id>`: `zoo.cfg`, the dynamic configuration files, `data/`, the log.
    dir: PathBuf,
    /// The host its peers know it by: `127.0.0.1`, or `zk-<id>` in a partitionable ensemble.
    host: String,
    process: Option<JavaProcess>,
    ports: PeerPorts,
    files: ServerFiles,
    log: PathBuf,
    /// Taken out with [`TestingCluster::stop_member`]: left out of the connect strings until it
    /// is restarted.
    stopped: bool,
}

/// The modes of a member that serves clients.
const SERVING: &[ServerMode] = &[
    ServerMode::Leader,
    ServerMode::Follower,
    ServerMode::Observer,
];

impl Member {
    /// Writes the configuration and `myid` of member `id` into `dir` (the process is not
    /// started).
    fn write(
        dir: PathBuf,
        id: u64,
        ports: PeerPorts,
        settings: &ServerSettings,
        peers: Peers<'_>,
    ) -> Result<Self> {
        let files = write_files(&dir, id, ports, settings, peers)?;
        let myid = dir.join("data/myid");
        std::fs::write(&myid, format!("{id}\n"))
            .map_err(Error::io(format!("writing {}", myid.display())))?;
        Ok(Member {
            id,
            log: dir.join("zookeeper.log"),
            host: member_host(settings, id),
            dir,
            process: None,
            ports,
            files,
            stopped: false,
        })
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.ports.client)
    }

    fn spec(&self) -> String {
        format!(
            "server.{}={}",
            self.id,
            member_value(&self.host, &self.ports)
        )
    }

    fn linked(&self, index: usize) -> LinkedMember {
        LinkedMember {
            index,
            id: self.id,
            ports: self.ports,
        }
    }

    fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
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
            settings.version,
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
        let mode = config::await_serving(&address, process, SERVING, deadline).await?;
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
        let peers = peer_ports(n, &settings)?;
        // A dynamic ensemble starts from version 0: its first leader gives the configuration
        // its version and every member rewrites its files.
        let initial = DynamicConfig {
            version: 0,
            servers: (1..)
                .zip(&peers)
                .map(|(id, ports)| (id, member_value(&member_host(&settings, id), ports)))
                .collect(),
        };
        let mut members = Vec::with_capacity(n);
        for (id, ports) in (1..).zip(&peers) {
            let lines = if settings.super_user.is_some() {
                Peers::Dynamic(&initial)
            } else {
                Peers::Static(&peers)
            };
            members.push(Member::write(
                member_dir(dir.path(), id),
                id,
                *ports,
                &settings,
                lines,
            )?);
        }
        let links = settings.partitionable.then(PeerLinks::default);
        Ok(Self {
            members,
            settings,
            timing,
            links,
            dir,
        })
    }

    async fn launch_all(&mut self) -> Result<()> {
        if let Some(links) = &mut self.links {
            let linked: Vec<LinkedMember> = (0..)
                .zip(&self.members)
                .map(|(index, member)| member.linked(index))
                .collect();
            for (index, member) in linked.iter().enumerate() {
                links.connect(*member, &linked[..index]).await?;
            }
        }
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

    /// The members that belong in connect strings: all but those taken out with
    /// [`stop_member`](Self::stop_member).
    fn listed(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|member| !member.stopped)
    }

    /// Every member's client address, comma-separated, for a client's connect string.
    ///
    /// Members that were [`kill`](Self::kill)ed stay in it (they are still part of the ensemble,
    /// and come back with [`restart`](Self::restart)); members taken out with
    /// [`stop_member`](Self::stop_member) do not, until they are restarted. A member added with
    /// [`start_new_member`](Self::start_new_member) is in it, and a moved member is listed at
    /// its new port.
    pub fn connect_string(&self) -> String {
        self.listed()
            .map(Member::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every member's TLS client address (`localhost:<port>`), comma-separated, for an ensemble
    /// started with [`TestingClusterBuilder::tls`]; `None` otherwise. See
    /// [`TestingServer::secure_connect_string`](crate::TestingServer::secure_connect_string).
    /// Lists the members [`connect_string`](Self::connect_string) lists.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.listed()
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
    /// Lists the members [`connect_string`](Self::connect_string) lists.
    pub fn localhost_connect_string(&self) -> String {
        self.listed()
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
        self.member(index)?.kill();
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
        if let Err(error) = member.await_serving(deadline).await {
            // A member that exited does not run (one that is only slow goes on starting).
            if matches!(error, Error::Exited { .. }) {
                member.kill();
            }
            return Err(error);
        }
        member.stopped = false;
        Ok(())
    }

    /// Waits (up to the long deadline of [`Timing`]) until running member `index` serves as
    /// leader, follower or observer, and returns its mode: after [`heal`](Self::heal), the
    /// moment an isolated member has rejoined.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble or a member that does not
    /// run; [`Error::Exited`] when it exits; [`Error::StartTimeout`] when it does not serve in
    /// time.
    pub async fn await_serving(&mut self, index: usize) -> Result<ServerMode> {
        let deadline = self.timing.forever();
        self.member(index)?.await_serving(deadline).await
    }

    /// The super user of an ensemble started with
    /// [`dynamic_reconfig`](TestingClusterBuilder::dynamic_reconfig): a client that
    /// authenticates as it (scheme `digest`) may reconfigure the ensemble. `None` for an
    /// ensemble without dynamic reconfiguration, which has no super user.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use curator_session::{Session, SessionConfig};
    /// let cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let credentials = cluster.super_credentials().unwrap();
    /// let admin = Session::connect(
    ///     SessionConfig::new(&cluster.connect_string())?
    ///         .auth("digest", format!("super:{}", credentials.password()).into_bytes()),
    /// )
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub fn super_credentials(&self) -> Option<&SuperCredentials> {
        self.settings.super_user.as_ref()
    }

    /// Member `index`'s ZooKeeper id (`myid`): `index + 1`, also for members added with
    /// [`start_new_member`](Self::start_new_member). It is what a reconfiguration's `leaving`
    /// list names.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// let cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// assert_eq!(cluster.member_id(0), 1);
    /// let leaving = [cluster.member_id(0).to_string()]; // reconfig: leavings ["1"]
    /// # Ok(()) }
    /// ```
    ///
    /// # Panics
    /// When `index` is not below [`len`](Self::len).
    pub fn member_id(&self, index: usize) -> u64 {
        self.members[index].id
    }

    /// Member `index` as a reconfiguration's `joining` list names it, with its current ports:
    /// `server.<id>=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>`.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// let cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let spec = cluster.member_spec(2);
    /// assert!(spec.starts_with("server.3=127.0.0.1:"));
    /// assert!(spec.ends_with(&cluster.member_connect_string(2)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Panics
    /// When `index` is not below [`len`](Self::len).
    pub fn member_spec(&self, index: usize) -> String {
        self.members[index].spec()
    }

    /// Starts one more member, as ZooKeeper's reconfiguration guide adds a server: with the
    /// ensemble's current configuration (asked of a running member, the leader first) plus
    /// itself as a participant. It gets new ports, its own directory and id
    /// ([`member_id`](Self::member_id): its index + 1). This waits until it serves: it syncs
    /// with the leader and follows it as a *non-voting* follower (`srvr` says `follower`) that
    /// adopts the current configuration, in which it is absent. It becomes a voter once the test
    /// reconfigures it in with [`member_spec`](Self::member_spec):
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use curator_session::{Session, SessionConfig};
    /// let mut cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let admin = Session::connect(
    ///     SessionConfig::new(&cluster.connect_string())?
    ///         .auth("digest", cluster.super_credentials().unwrap().digest_auth()),
    /// )
    /// .await?;
    /// let new = cluster.start_new_member().await?; // 3, with id 4
    /// let spec = cluster.member_spec(new);
    /// // joining, leaving, new members, from any configuration version
    /// admin.reconfig(Some(spec), None, None, -1).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// Until it is reconfigured in, the new member cannot start on its own again: its files now
    /// hold the configuration without it (as ZooKeeper documents), so a [`restart`](Self::restart)
    /// of it then fails.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an ensemble without
    /// [`dynamic_reconfig`](TestingClusterBuilder::dynamic_reconfig) or one whose configuration
    /// already names the new id; [`Error::Protocol`] when no running member reports the
    /// configuration; start-up errors as [`crate::TestingServerBuilder::start`] (a start that
    /// loses its ports to another process is retried on new ones).
    ///
    /// # Cancellation safety
    /// Dropped before it returns, the new member's process is killed and the cluster is as
    /// before.
    pub async fn start_new_member(&mut self) -> Result<usize> {
        self.require_dynamic("start_new_member")?;
        let mut config = self.current_config().await?;
        let index = self.members.len();
        let id = index as u64 + 1;
        if config.servers.contains_key(&id) {
            return Err(Error::InvalidArgument(format!(
                "the ensemble's configuration already names server.{id}"
            )));
        }
        // Version 0, as a configuration no leader has established: the joiner adopts the
        // leader's committed configuration when it syncs, as ZooKeeper's guide describes.
        config.version = 0;
        let dir = member_dir(self.dir.path(), id);
        let deadline = self.timing.forever();
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let ports = peer_ports(1, &self.settings)?[0];
            config
                .servers
                .insert(id, member_value(&member_host(&self.settings, id), &ports));
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .map_err(Error::io(format!("removing {}", dir.display())))?;
            }
            let mut member = Member::write(
                dir.clone(),
                id,
                ports,
                &self.settings,
                Peers::Dynamic(&config),
            )?;
            if let Some(links) = &mut self.links {
                links.disconnect(index);
                let others: Vec<LinkedMember> = (0..)
                    .zip(&self.members)
                    .map(|(index, member)| member.linked(index))
                    .collect();
                links.connect(member.linked(index), &others).await?;
            }
            member.spawn(&self.settings)?;
            match member.await_serving(deadline).await {
                Ok(_) => {
                    self.members.push(member);
                    return Ok(index);
                }
                Err(error) if config::is_port_conflict(&error) => last_error = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidArgument("no start attempt".into())))
    }

    /// Stops member `index` (a kill: a member reconfigured out has nothing to flush) and takes it
    /// out of [`connect_string`](Self::connect_string) and the other connect strings; its index,
    /// id, ports and data stay, and [`is_running`](Self::is_running) is false. Use it after
    /// reconfiguring the member out of the ensemble: ZooKeeper does not stop a removed member,
    /// which goes on as a non-voting follower (`srvr` says `follower`) and keeps its clients,
    /// who can still read and write through it.
    ///
    /// A member reconfigured out cannot start again: ZooKeeper rewrote its files without it, so
    /// a [`restart`](Self::restart) fails with [`Error::Exited`] ("My id N not in the peer
    /// list"). A member stopped while it still belongs to the ensemble restarts as after
    /// [`kill`](Self::kill), and is listed again once it serves.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use curator_session::{Session, SessionConfig};
    /// let mut cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let admin = Session::connect(
    ///     SessionConfig::new(&cluster.connect_string())?
    ///         .auth("digest", cluster.super_credentials().unwrap().digest_auth()),
    /// )
    /// .await?;
    /// let leaving = cluster.member_id(0).to_string(); // "1"
    /// admin.reconfig(None, Some(leaving), None, -1).await?;
    /// cluster.stop_member(0)?;
    /// assert!(!cluster.is_running(0));
    /// assert_eq!(cluster.connect_string().split(',').count(), 2);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble.
    pub fn stop_member(&mut self, index: usize) -> Result<()> {
        let member = self.member(index)?;
        member.kill();
        member.stopped = true;
        Ok(())
    }

    /// Moves member `index` to a new client port: stops it, picks a free port, rewrites its
    /// configuration (the static `zoo.cfg` and the dynamic file: the ensemble's current
    /// configuration, asked of a running member, with this member at the new port and the same
    /// version), starts it again with the same id, data and other ports, waits until it serves,
    /// and returns its new [`member_spec`](Self::member_spec).
    ///
    /// The order is: **first this, then a reconfiguration** that joins the returned spec, so
    /// the ensemble's configuration names the new port too:
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use curator_session::{Session, SessionConfig};
    /// let mut cluster = curator_test::TestingCluster::builder(3).dynamic_reconfig().start().await?;
    /// let admin = Session::connect(
    ///     SessionConfig::new(&cluster.member_connect_string(0))?
    ///         .auth("digest", cluster.super_credentials().unwrap().digest_auth()),
    /// )
    /// .await?;
    /// let spec = cluster.move_member_to_new_port(1).await?; // serves on the new port already
    /// admin.reconfig(Some(spec), None, None, -1).await?;
    /// let moved = cluster.member_connect_string(1); // 127.0.0.1:<new port>
    /// # Ok(()) }
    /// ```
    ///
    /// Between the two steps the member serves on the new port while the rest of the ensemble
    /// (and `/zookeeper/config` on other members) still names the old one; the member keeps its
    /// own view because its file has the same version as the ensemble's, and ZooKeeper only
    /// adopts a configuration with a higher version. Do not reconfigure in between: a
    /// reconfiguration that still names the old port would move the member back to it.
    ///
    /// (ZooKeeper can also move a running member without a restart: a reconfiguration that
    /// joins the member's spec with another client port makes it rebind at once. This helper
    /// restarts instead, so the new port is chosen here and the member's files are what a
    /// later [`restart`](Self::restart) needs.)
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble, an ensemble without
    /// [`dynamic_reconfig`](TestingClusterBuilder::dynamic_reconfig), or a member the current
    /// configuration does not name; [`Error::Protocol`] when no running member reports the
    /// configuration; start-up errors as [`restart`](Self::restart).
    ///
    /// # Cancellation safety
    /// Not cancellation safe: dropped part-way, the member may be stopped, or running on the new
    /// port without this cluster knowing it.
    pub async fn move_member_to_new_port(&mut self, index: usize) -> Result<String> {
        self.require_dynamic("move_member_to_new_port")?;
        let id = self.member(index)?.id;
        let mut config = self.current_config().await?;
        if !config.servers.contains_key(&id) {
            return Err(Error::InvalidArgument(format!(
                "member {index} (server.{id}) is not in the ensemble's configuration"
            )));
        }
        let settings = self.settings.clone();
        let deadline = self.timing.forever();
        let member = self.member(index)?;
        member.kill();
        let mut last_error = None;
        for _ in 0..START_ATTEMPTS {
            let old = member.ports;
            let client = loop {
                let port = config::free_ports(1)?[0];
                if ![old.client, old.quorum, old.election]
                    .iter()
                    .chain(old.secure.as_ref())
                    .any(|&taken| taken == port)
                {
                    break port;
                }
            };
            let ports = PeerPorts { client, ..old };
            config
                .servers
                .insert(id, member_value(&member.host, &ports));
            member.files = write_files(&member.dir, id, ports, &settings, Peers::Dynamic(&config))?;
            member.ports = ports;
            member.stopped = false;
            member.spawn(&settings)?;
            match member.await_serving(deadline).await {
                Ok(_) => return Ok(member.spec()),
                Err(error) => {
                    member.kill();
                    if !config::is_port_conflict(&error) {
                        return Err(error);
                    }
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| Error::InvalidArgument("no start attempt".into())))
    }

    fn require_dynamic(&self, operation: &str) -> Result<()> {
        if self.settings.super_user.is_some() {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{operation} needs an ensemble started with TestingCluster::builder(n).dynamic_reconfig()"
            )))
        }
    }

    /// The ensemble's committed configuration, as the leader (else any running member that
    /// serves) reports it with `conf`.
    async fn current_config(&self) -> Result<DynamicConfig> {
        let leader = self.leader().await;
        let others = (0..self.members.len()).filter(|&index| Some(index) != leader);
        let mut last_error = None;
        for index in leader.into_iter().chain(others) {
            let member = &self.members[index];
            if member.process.is_none() {
                continue;
            }
            let answer = four_letter_word(&member.address(), "conf", self.timing.wait()).await;
            match answer.and_then(|answer| DynamicConfig::parse(&answer)) {
                Ok(config) => return Ok(config),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            Error::Protocol("no member runs to report the ensemble's configuration".into())
        }))
    }

    /// Whether the ensemble was built [`partitionable`](TestingClusterBuilder::partitionable).
    pub fn is_partitionable(&self) -> bool {
        self.links.is_some()
    }

    /// Cuts member `index` off from every other member, both ways: their current quorum and
    /// election connections are closed and new ones are closed as soon as they are accepted,
    /// until [`heal`](Self::heal) or another [`partition`](Self::partition). Clients attached
    /// to the member stay attached: a follower that loses its leader, or a leader that loses
    /// its quorum, stops serving them (ZooKeeper closes their connections while it looks for
    /// a leader), and the others elect a leader among themselves if they are a majority.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble or an ensemble not built
    /// [`partitionable`](TestingClusterBuilder::partitionable).
    pub fn isolate(&self, index: usize) -> Result<()> {
        let rest: Vec<usize> = (0..self.members.len()).filter(|&i| i != index).collect();
        self.partition(&[&[index], &rest])
    }

    /// Splits the ensemble into `groups` of member indices: members of different groups cannot
    /// reach each other (both ways), members of one group can. A member in no group is alone,
    /// so `partition(&[])` cuts every member off from every other ([`isolate(i)`](Self::isolate) is `partition(&[&[i],
    /// &[every other index]])`). Replaces the previous partition; members added later with
    /// [`start_new_member`](Self::start_new_member) reach everyone until the next call.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// let cluster = curator_test::TestingCluster::builder(5).partitionable().start().await?;
    /// cluster.partition(&[&[0, 1], &[2, 3, 4]])?; // the majority side elects a leader
    /// cluster.heal()?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an index outside the ensemble, a member in two groups, or
    /// an ensemble not built [`partitionable`](TestingClusterBuilder::partitionable).
    pub fn partition(&self, groups: &[&[usize]]) -> Result<()> {
        let links = self.require_links("partition")?;
        let n = self.members.len();
        let mut group_of = vec![None; n];
        for (group, members) in groups.iter().enumerate() {
            for &index in *members {
                let slot = group_of.get_mut(index).ok_or_else(|| {
                    Error::InvalidArgument(format!("member {index} of a {n}-member cluster"))
                })?;
                if slot.replace(group).is_some() {
                    return Err(Error::InvalidArgument(format!(
                        "member {index} is in two groups of {groups:?}"
                    )));
                }
            }
        }
        // A member in no group is alone: a group number no listed member has.
        links.apply(|index| group_of[index].unwrap_or(groups.len() + index));
        Ok(())
    }

    /// Ends every partition: all members reach each other again.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an ensemble not built
    /// [`partitionable`](TestingClusterBuilder::partitionable).
    pub fn heal(&self) -> Result<()> {
        self.require_links("heal")?.apply(|_| 0);
        Ok(())
    }

    /// Whether member `from` can reach member `to` now (not cut by a partition); `None` when
    /// the ensemble is not partitionable or there is no such pair.
    pub fn can_reach(&self, from: usize, to: usize) -> Option<bool> {
        self.links.as_ref()?.is_cut(from, to).map(|cut| !cut)
    }

    fn require_links(&self, operation: &str) -> Result<&PeerLinks> {
        self.links.as_ref().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{operation} needs an ensemble started with TestingCluster::builder(n).partitionable()"
            ))
        })
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

/// Writes a member's configuration (and, in a partitionable ensemble, its hosts file).
fn write_files(
    dir: &Path,
    id: u64,
    ports: PeerPorts,
    settings: &ServerSettings,
    peers: Peers<'_>,
) -> Result<ServerFiles> {
    let mut files = config::write_config(dir, ports.client_ports(), settings, peers)?;
    if settings.partitionable {
        files.jvm_args.push(write_hosts_file(dir, id)?);
        // A member cut off from the others retries them with a back-off that doubles up to
        // 60 s by default, so one isolated for a minute could take another minute to notice
        // that the partition healed. Capped at 2 s, it rejoins within seconds of `heal`.
        files
            .jvm_args
            .push(format!("-D{MAX_NOTIFICATION_INTERVAL}=2000"));
    }
    Ok(files)
}

fn member_host(settings: &ServerSettings, id: u64) -> String {
    if settings.partitionable {
        peer_host(id)
    } else {
        "127.0.0.1".to_owned()
    }
}

/// The value of a member's `server.<id>=` line, at `host`.
fn member_value(host: &str, ports: &PeerPorts) -> String {
    let value = server_value(ports);
    match value.strip_prefix("127.0.0.1:") {
        Some(rest) => format!("{host}:{rest}"),
        None => value,
    }
}

/// `n` members' ports: client, quorum, election and, with TLS, secure.
fn peer_ports(n: usize, settings: &ServerSettings) -> Result<Vec<PeerPorts>> {
    let per_member = if settings.tls.is_some() { 4 } else { 3 };
    let ports = config::free_ports(per_member * n)?;
    Ok(ports
        .chunks(per_member)
        .map(|p| PeerPorts {
            client: p[0],
            quorum: p[1],
            election: p[2],
            secure: p.get(3).copied(),
        })
        .collect())
}

fn member_dir(ensemble: &Path, id: u64) -> PathBuf {
    ensemble.join(format!("member-{id}"))
}
