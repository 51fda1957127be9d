//! The simulation: turmoil's network and clock, curator-zkmodel's server on one host, the
//! caller's clients on others, and the faults of a [`FaultPlan`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use curator_framework::retry::ExponentialBackoffRetry;
use curator_framework::{CuratorFramework, CuratorFrameworkBuilder};
use curator_zkmodel::{ModelConfig, Server};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::connector::{Cuts, CuttableConnector};
use crate::faults::{Fault, FaultPlan, FaultRecord};
use crate::{ZK_HOST, ZK_PORT};

/// What a client body gets: its host's name and a builder of framework clients that reach the
/// simulated server.
///
/// ```no_run
/// # async fn body(client: curator_sim::SimClient) -> Result<(), Box<dyn std::error::Error>> {
/// let zk = client.connect().await?;
/// zk.create().for_path("/hello", b"from the simulation").await?;
/// zk.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SimClient {
    name: String,
    session_timeout: Duration,
    faults: SimFaults,
}

impl SimClient {
    /// The client host's name on the simulated network.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Faults this body injects itself, at the points it chooses (beside the plan's).
    pub fn faults(&self) -> &SimFaults {
        &self.faults
    }

    /// A framework client builder set for the simulation: the server's address, the
    /// simulated network (a [`TurmoilConnector`](crate::TurmoilConnector) whose connections
    /// [`SimFaults::cut`] can break), the simulation's session timeout, a retry
    /// policy that outlasts its faults, and no ensemble tracking (there is one server). Change
    /// what you like before `build()`.
    pub fn builder(&self) -> CuratorFrameworkBuilder {
        CuratorFramework::builder()
            .connect_string(format!("{ZK_HOST}:{ZK_PORT}"))
            .connector(Arc::new(CuttableConnector {
                host: self.name.clone(),
                cuts: self.faults.cuts.clone(),
            }))
            .session_timeout(self.session_timeout)
            .connection_timeout(self.session_timeout / 2)
            .retry_policy(
                ExponentialBackoffRetry::new(Duration::from_millis(50), 29)
                    .with_max_sleep(Duration::from_millis(500)),
            )
            .ensemble_tracking(false)
    }

    /// A started client from [`builder`](Self::builder) (its session may still be on its way).
    ///
    /// # Errors
    /// What `build()` and `start()` return.
    pub async fn connect(&self) -> curator_framework::Result<CuratorFramework> {
        let client = self.builder().build()?;
        client.start().await?;
        Ok(client)
    }
}

/// Settings of a [`Simulation`], from [`Simulation::builder`].
///
/// ```
/// use std::time::Duration;
/// use curator_sim::{FaultPlan, Simulation};
/// let sim = Simulation::builder(7)
///     .faults(FaultPlan::all().quiet_after(Duration::from_secs(10)))
///     .session_timeout(Duration::from_secs(4))
///     .latency(Duration::ZERO, Duration::from_millis(20))
///     .build();
/// # drop(sim);
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until .build()"]
pub struct SimulationBuilder {
    seed: u64,
    duration: Duration,
    faults: FaultPlan,
    session_timeout: Duration,
    latency: (Duration, Duration),
    model: ModelConfig,
    step: Duration,
}

impl SimulationBuilder {
    /// How far simulated time moves per step of the simulation (default 1 ms): every host
    /// runs once per step, and messages are delivered on step boundaries. Longer steps run a
    /// simulated second in fewer steps (faster), with coarser timing.
    pub fn step(mut self, step: Duration) -> Self {
        self.step = step.max(Duration::from_micros(1));
        self
    }

    /// The longest simulated time the clients may take (default 120 s): a simulation still
    /// running then fails with [`SimError`].
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The faults to inject (default: [`FaultPlan::none`]).
    pub fn faults(mut self, plan: FaultPlan) -> Self {
        self.faults = plan;
        self
    }

    /// The session timeout clients ask for (default 4 s; the server's tick, 500 ms by default,
    /// bounds it to 1–10 s).
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Each message's latency, drawn from the seed between `min` and `max` (default 0–10 ms).
    pub fn latency(mut self, min: Duration, max: Duration) -> Self {
        self.latency = (min, max.max(min));
        self
    }

    /// The model server's settings (default: a 500 ms tick).
    pub fn model(mut self, config: ModelConfig) -> Self {
        self.model = config;
        self
    }

    /// The simulation, with the server's host in it.
    pub fn build<'a>(self) -> Simulation<'a> {
        // Every host runs on this thread, and turmoil polls software as it is registered: the
        // framework's randomness (retry jitter, backoff, node ids) comes from the seed from now
        // on (until `run` ends).
        curator_framework::random::seed_thread(self.seed);
        let mut turmoil = turmoil::Builder::new();
        turmoil
            .rng_seed(self.seed)
            // A fixed start (2026-01-01T00:00:00Z), so session ids and node times repeat.
            .epoch(std::time::UNIX_EPOCH + Duration::from_secs(1_767_225_600))
            .simulation_duration(self.duration)
            .min_message_latency(self.latency.0)
            .max_message_latency(self.latency.1)
            .tick_duration(self.step)
            .enable_random_order();
        let mut sim = turmoil.build();
        let now_ms = Arc::new(AtomicI64::new(epoch_ms(sim.since_epoch())));
        let clock = Arc::clone(&now_ms);
        // The simulation's time at the start of the current step (set by `run` before each):
        // never turmoil's per-host clock, which reads the wall clock while a crashed host's
        // tasks are dropped (and a server drops connections then).
        let server = Server::with_clock(self.model, move || clock.load(Ordering::SeqCst));
        let serving = server.clone();
        let (control, controlled) = tokio::sync::watch::channel(Power {
            up: true,
            generation: 0,
        });
        sim.host(ZK_HOST, move || serve(serving.clone(), controlled.clone()));
        let faults = SimFaults {
            server: server.clone(),
            control: control.clone(),
            cuts: Cuts::default(),
            injected: Arc::default(),
        };
        Simulation {
            sim,
            server,
            faults,
            control,
            now_ms,
            rng: StdRng::seed_from_u64(self.seed ^ 0x5eed_fa17),
            plan: self.faults,
            clients: Vec::new(),
            session_timeout: self.session_timeout,
            seed: self.seed,
        }
    }
}

fn epoch_ms(since_epoch: Duration) -> i64 {
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}

/// Whether the server is up, and how many times it was (re)started.
#[derive(Debug, Clone, Copy)]
struct Power {
    up: bool,
    generation: u64,
}

/// The server's software: serves the model on the simulated network and ticks it, while the
/// simulation keeps it up. A restart or an outage closes every connection and stops listening;
/// a start serves the same model again (`Server::restart`: the tree and the sessions kept, as
/// a real server's are on disk). It all happens in the host's own turn (not through turmoil's
/// crash, whose dropped sockets read the wall clock), so a seed replays exactly.
async fn serve(server: Server, mut power: tokio::sync::watch::Receiver<Power>) -> turmoil::Result {
    let tick = server.with_model(|model| model.config().tick());
    let every = Duration::from_millis(u64::try_from(tick).unwrap_or(500).max(1));
    loop {
        let generation = {
            let now = power.wait_for(|power| power.up).await?;
            now.generation
        };
        server.restart();
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", ZK_PORT)).await?;
        let mut connections = tokio::task::JoinSet::new();
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                changed = power.changed() => {
                    changed?;
                    let now = *power.borrow();
                    if !now.up || now.generation != generation {
                        break;
                    }
                }
                _ = ticks.tick() => server.tick(),
                accepted = listener.accept() => {
                    let (stream, peer) = accepted?;
                    let server = server.clone();
                    connections.spawn_local(async move {
                        // A connection that breaks the protocol or fails ends alone, as on a
                        // real server.
                        let _ = server.serve(stream, &peer.ip().to_string()).await;
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        connections.shutdown().await;
    }
}

/// A deterministic simulation: curator-zkmodel's server on the host [`ZK_HOST`], the caller's
/// clients on hosts of their own, turmoil's network between them (seeded latency) and the
/// faults of a [`FaultPlan`], all on one thread in simulated time. The same seed gives the
/// same run.
///
/// ```
/// use std::time::Duration;
/// use curator_sim::{FaultPlan, Simulation};
///
/// let mut sim = Simulation::builder(42)
///     .faults(FaultPlan::all().quiet_after(Duration::from_secs(5)))
///     .build();
/// sim.client("app", |client| async move {
///     let zk = client.connect().await?;
///     let made = zk.create().creating_parents_if_needed().for_path("/jobs/1", b"x").await?;
///     assert_eq!(made, "/jobs/1");
///     zk.close().await?;
///     Ok(())
/// });
/// let report = sim.run().expect("the simulation passes");
/// assert!(report.last_zxid > 0);
/// ```
pub struct Simulation<'a> {
    sim: turmoil::Sim<'a>,
    server: Server,
    /// Keeps the server up or down.
    control: tokio::sync::watch::Sender<Power>,
    /// The server's clock: the simulated time at the start of the current step.
    now_ms: Arc<AtomicI64>,
    rng: StdRng,
    plan: FaultPlan,
    clients: Vec<String>,
    session_timeout: Duration,
    seed: u64,
    faults: SimFaults,
}

impl fmt::Debug for Simulation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulation")
            .field("seed", &self.seed)
            .field("clients", &self.clients)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl<'a> Simulation<'a> {
    /// Settings for a simulation of `seed`.
    pub fn builder(seed: u64) -> SimulationBuilder {
        SimulationBuilder {
            seed,
            duration: Duration::from_secs(120),
            faults: FaultPlan::none(),
            session_timeout: Duration::from_secs(4),
            latency: (Duration::ZERO, Duration::from_millis(10)),
            model: ModelConfig::default().tick_time(500),
            step: Duration::from_millis(1),
        }
    }

    /// Adds a client host `name` running `body`; the simulation ends when every client's body
    /// has returned. A body's error fails the simulation.
    pub fn client<F, Fut>(&mut self, name: &str, body: F)
    where
        F: FnOnce(SimClient) -> Fut,
        Fut: Future<Output = Result<(), Box<dyn std::error::Error>>> + 'static,
    {
        let client = SimClient {
            name: name.to_owned(),
            session_timeout: self.session_timeout,
            faults: self.faults.clone(),
        };
        self.clients.push(name.to_owned());
        self.sim.client(name, body(client));
    }

    /// The model server (read its tree after a run, or expire a session yourself).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Runs until every client's body has returned, injecting the plan's faults.
    ///
    /// # Errors
    /// [`SimError`] when a body fails, panics, or the clients outlast the duration; it carries
    /// the seed and the faults so far.
    pub fn run(&mut self) -> Result<SimReport, SimError> {
        // The framework's randomness has come from the seed since `build` (every host runs on
        // this thread); it is the operating system's again after the run.
        let outcome = self.steps();
        curator_framework::random::unseed_thread();
        outcome
    }

    fn steps(&mut self) -> Result<SimReport, SimError> {
        let mut faults: Vec<FaultRecord> = Vec::new();
        let mut next_at = self.plan.pause(&mut self.rng);
        // The fault in force, and when it ends.
        let mut active: Option<(usize, Duration)> = None;
        loop {
            let now = self.sim.elapsed();
            self.now_ms
                .store(epoch_ms(self.sim.since_epoch()), Ordering::SeqCst);
            let quiet = now >= self.plan.quiet_after;
            if let Some((index, until)) = active
                && (now >= until || quiet)
            {
                self.undo(&faults[index].fault);
                faults[index].until = now;
                active = None;
                next_at = now + self.plan.pause(&mut self.rng);
            }
            if active.is_none() && !quiet && now >= next_at {
                if let Some((fault, lasting)) = self.plan.draw(&mut self.rng, &self.clients) {
                    let fault = self.apply(fault);
                    let lasts = matches!(
                        fault,
                        Fault::Partition { .. }
                            | Fault::Hold { .. }
                            | Fault::Outage
                            | Fault::LostReplies { .. }
                    );
                    faults.push(FaultRecord {
                        fault,
                        at: now,
                        until: now,
                    });
                    if lasts {
                        active = Some((faults.len() - 1, now + lasting));
                    } else {
                        next_at = now + self.plan.pause(&mut self.rng);
                    }
                } else {
                    next_at = Duration::MAX;
                }
            }
            match self.sim.step() {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    return Err(SimError {
                        seed: self.seed,
                        at: now,
                        error: error.to_string(),
                        faults: self.with_injected(faults),
                    });
                }
            }
        }
        Ok(SimReport {
            seed: self.seed,
            elapsed: self.sim.elapsed(),
            last_zxid: self.server.with_model(|model| model.last_zxid()),
            faults: self.with_injected(faults),
        })
    }

    /// The plan's faults and the ones bodies injected, in the order they started.
    fn with_injected(&self, mut faults: Vec<FaultRecord>) -> Vec<FaultRecord> {
        let now = self.sim.elapsed();
        faults.extend(self.faults.injected.lock().drain(..).map(|mut record| {
            // Still in force at the end (never repaired, released or started again).
            if record.until == Duration::MAX {
                record.until = now.max(record.at);
            }
            record
        }));
        faults.sort_by_key(|record| record.at);
        faults
    }

    fn apply(&mut self, fault: Fault) -> Fault {
        match fault {
            Fault::Partition { ref client } => self.sim.partition(ZK_HOST, client.as_str()),
            Fault::Hold { ref client } => self.sim.hold(ZK_HOST, client.as_str()),
            Fault::Restart => self.control.send_modify(|power| power.generation += 1),
            Fault::Outage => self.control.send_modify(|power| power.up = false),
            Fault::Cut { ref client } => self.faults.cuts.cut(client),
            Fault::LostReplies { ref client } => {
                self.sim.partition_oneway(ZK_HOST, client.as_str())
            }
            Fault::Expiry { pick, .. } => {
                let mut sessions = self.server.with_model(|model| model.session_ids());
                sessions.sort_unstable();
                let session = (!sessions.is_empty())
                    .then(|| sessions[usize::try_from(pick % sessions.len() as u64).unwrap_or(0)]);
                if let Some(id) = session {
                    self.server.expire_session(id);
                }
                return Fault::Expiry { pick, session };
            }
        }
        fault
    }

    fn undo(&mut self, fault: &Fault) {
        match fault {
            Fault::Partition { client } => self.sim.repair(ZK_HOST, client.as_str()),
            Fault::Hold { client } => self.sim.release(ZK_HOST, client.as_str()),
            Fault::LostReplies { client } => self.sim.repair_oneway(ZK_HOST, client.as_str()),
            Fault::Outage => self.control.send_modify(|power| {
                power.up = true;
                power.generation += 1;
            }),
            Fault::Restart | Fault::Cut { .. } | Fault::Expiry { .. } => {}
        }
    }
}

/// How a simulation went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimReport {
    /// Its seed.
    pub seed: u64,
    /// The simulated time it took.
    pub elapsed: Duration,
    /// The server's last zxid at the end.
    pub last_zxid: i64,
    /// The faults injected, in order.
    pub faults: Vec<FaultRecord>,
}

/// A simulation that failed: a client's body returned an error or panicked, or the clients
/// outlasted the duration. `curator-sim`'s runs print it with the seed that replays it.
#[derive(Debug, Clone)]
pub struct SimError {
    /// The seed that replays it.
    pub seed: u64,
    /// When (simulated time).
    pub at: Duration,
    /// What failed.
    pub error: String,
    /// The faults injected until then.
    pub faults: Vec<FaultRecord>,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "simulation of seed {} failed at {:.3}s: {}",
            self.seed,
            self.at.as_secs_f64(),
            self.error
        )?;
        for fault in &self.faults {
            write!(f, "\n  {fault}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimError {}

/// Faults a client body injects itself, at the points it chooses: the directed fault tests'
/// tools (a proxy's pause and cut, a server's restart, an expiry), in simulated time. From
/// [`SimClient::faults`]; each one is also in the run's [`SimReport::faults`].
///
/// ```
/// use std::time::Duration;
/// use curator_sim::Simulation;
///
/// let mut sim = Simulation::builder(3).build();
/// sim.client("app", |client| async move {
///     let zk = client.connect().await?;
///     zk.create().for_path("/kept", b"").await?;
///     client.faults().restart_server();
///     client.faults().cut("app");
///     // The framework reconnects; the tree was kept.
///     assert!(zk.check_exists().for_path("/kept").await?.is_some());
///     let session = zk.session_id().expect("connected");
///     client.faults().expire_session(session);
///     zk.close().await?;
///     Ok(())
/// });
/// let report = sim.run().expect("the simulation passes");
/// assert_eq!(report.faults.len(), 3);
/// ```
#[derive(Clone)]
pub struct SimFaults {
    server: Server,
    control: tokio::sync::watch::Sender<Power>,
    cuts: Cuts,
    injected: Arc<parking_lot::Mutex<Vec<FaultRecord>>>,
}

impl fmt::Debug for SimFaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFaults").finish_non_exhaustive()
    }
}

impl SimFaults {
    fn record(&self, fault: Fault, lasts: bool) {
        let at = turmoil::sim_elapsed().unwrap_or_default();
        self.injected.lock().push(FaultRecord {
            fault,
            at,
            until: if lasts { Duration::MAX } else { at },
        });
    }

    fn ended(&self, ends: impl Fn(&Fault) -> bool) {
        let at = turmoil::sim_elapsed().unwrap_or_default();
        if let Some(record) = self
            .injected
            .lock()
            .iter_mut()
            .rev()
            .find(|record| record.until == Duration::MAX && ends(&record.fault))
        {
            record.until = at;
        }
    }

    /// Cuts `client` (a client host's name) off from the server: messages either way are lost
    /// until [`repair`](Self::repair). Its connections stay open, as behind a black hole.
    pub fn partition(&self, client: &str) {
        turmoil::partition(ZK_HOST, client);
        self.record(
            Fault::Partition {
                client: client.to_owned(),
            },
            true,
        );
    }

    /// Loses every reply to `client`: its requests reach the server (and apply), what the
    /// server sends it is lost, until [`repair`](Self::repair). A lost reply, as a proxy
    /// that pauses replies makes one.
    pub fn lose_replies(&self, client: &str) {
        turmoil::partition_oneway(ZK_HOST, client);
        self.record(
            Fault::LostReplies {
                client: client.to_owned(),
            },
            true,
        );
    }

    /// Ends a [`partition`](Self::partition) or [`lose_replies`](Self::lose_replies) of
    /// `client`.
    pub fn repair(&self, client: &str) {
        turmoil::repair(ZK_HOST, client);
        self.ended(|fault| {
            matches!(fault, Fault::Partition { client: c } | Fault::LostReplies { client: c }
                if c == client)
        });
    }

    /// Holds every message between `client` and the server (a paused link) until
    /// [`release`](Self::release) delivers them.
    pub fn hold(&self, client: &str) {
        turmoil::hold(ZK_HOST, client);
        self.record(
            Fault::Hold {
                client: client.to_owned(),
            },
            true,
        );
    }

    /// Ends a [`hold`](Self::hold) of `client`: what was held is delivered.
    pub fn release(&self, client: &str) {
        turmoil::release(ZK_HOST, client);
        self.ended(|fault| matches!(fault, Fault::Hold { client: c } if c == client));
    }

    /// Breaks the connections `client` has now (a reset TCP connection): its session lives on
    /// the server, and its framework clients reconnect.
    pub fn cut(&self, client: &str) {
        self.cuts.cut(client);
        self.record(
            Fault::Cut {
                client: client.to_owned(),
            },
            false,
        );
    }

    /// Restarts the server's software: every connection closes; the tree and the sessions are
    /// kept, as a real server's are on disk.
    pub fn restart_server(&self) {
        self.control.send_modify(|power| power.generation += 1);
        self.record(Fault::Restart, false);
    }

    /// Stops the server until [`start_server`](Self::start_server) (its data kept).
    pub fn stop_server(&self) {
        self.control.send_modify(|power| power.up = false);
        self.record(Fault::Outage, true);
    }

    /// Starts a server stopped by [`stop_server`](Self::stop_server).
    pub fn start_server(&self) {
        self.control.send_modify(|power| {
            if !power.up {
                power.up = true;
                power.generation += 1;
            }
        });
        self.ended(|fault| matches!(fault, Fault::Outage));
    }

    /// Expires `session_id` on the server now (its ephemeral nodes go, its watches end, its
    /// client hears `Expired` when it next reaches the server). False when there is no such
    /// session.
    pub fn expire_session(&self, session_id: i64) -> bool {
        let expired = self.server.expire_session(session_id);
        self.record(
            Fault::Expiry {
                pick: 0,
                session: expired.then_some(session_id),
            },
            false,
        );
        expired
    }

    /// The simulated server (read its tree with [`Server::with_model`]).
    pub fn server(&self) -> &Server {
        &self.server
    }
}
