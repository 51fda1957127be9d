//! Differential conformance, in the manner of zetcd's: the same seeded stream of operations
//! runs against the model and against a real ZooKeeper server (3.8 and 3.9), one operation at
//! a time, and everything each session receives is compared after the differences that are
//! legitimate are normalized away (see `normalize.rs`).
//!
//! Each operation is sent on one session of each server; the harness waits for its reply,
//! then pings every session so that the watch events the operation caused have arrived
//! (a server sends a connection's frames in order), then waits for both servers to reap the
//! containers the operation emptied. What each session received (replies, events, their
//! order, connection closes) must then be the same.
//!
//! One test per release (3.8 and 3.9), each with its own real server (curator-test's, from the
//! release's jars) and its own model (answering as that release, `ServerRelease`), so one
//! `cargo test` compares the model with both; cargo runs the two side by side.
//!
//! - `CONFORMANCE_SEEDS`: how many seeds (1..=N, default 6), each on its own node under the
//!   root, one after the other on the same two servers;
//! - `CONFORMANCE_OPS`: operations per seed (default 300);
//! - `CONFORMANCE_SEED`: only this seed (a failure names it, with the replay command);
//! - `CONFORMANCE_HISTORY`: how many earlier operations a failure lists (default 30);
//! - `CONFORMANCE_DEBUG`: a failure also lists the real server's watches (`wchc`, `wchp`).

mod client;
mod generate;
mod normalize;

use std::fmt::Write as _;
use std::time::Duration;

use curator_test::{SessionCredentials, TestingServer, Timing, ZooKeeperVersion};
use curator_wire::proto::{ErrorCode, ExistsRequest, Request, SetWatches2};
use curator_zkmodel::{InProcessServer, ModelConfig, ServerRelease};

use client::{Client, Item};
use generate::{Generator, Op};
use normalize::Names;

/// The real servers' tick (curator-test's default), and so the model's.
const TICK_MS: u32 = 200;
/// The real servers' longest session (curator-test's default).
const MAX_SESSION_MS: u32 = 60_000;
/// How often the real server looks for containers to reap.
const CONTAINER_CHECK_MS: u64 = 50;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
        _ => default,
    }
}

/// The seeds of this run: `CONFORMANCE_SEED` alone, or `CONFORMANCE_SEEDS` of them.
fn seeds() -> Vec<u64> {
    if let Ok(seed) = std::env::var("CONFORMANCE_SEED") {
        if !seed.trim().is_empty() {
            return vec![seed.trim().parse().expect("CONFORMANCE_SEED is a number")];
        }
    }
    (1..=env_number("CONFORMANCE_SEEDS", 6)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_answers_as_zookeeper_3_8() {
    conformance(ZooKeeperVersion::V3_8, ServerRelease::V3_8).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_answers_as_zookeeper_3_9() {
    conformance(ZooKeeperVersion::V3_9, ServerRelease::V3_9).await;
}

async fn conformance(version: ZooKeeperVersion, release: ServerRelease) {
    let wait = Timing::new().wait();
    let real = TestingServer::builder()
        .version(version)
        .tick_time(Duration::from_millis(u64::from(TICK_MS)))
        .max_session_timeout(Duration::from_millis(u64::from(MAX_SESSION_MS)))
        .jvm_arg(format!(
            "-Dznode.container.checkIntervalMs={CONTAINER_CHECK_MS}"
        ))
        .start()
        .await
        .unwrap_or_else(|error| panic!("starting ZooKeeper {version}: {error}"));
    let config = ModelConfig::default()
        .release(release)
        .tick_time(TICK_MS)
        .max_session_timeout_ms(MAX_SESSION_MS);
    let model = InProcessServer::builder()
        .config(config)
        // Containers are reaped when the harness says, right after the operation that emptied
        // them (the real server does it within CONTAINER_CHECK_MS).
        .container_check_interval(Duration::from_secs(3_600))
        .start()
        .await
        .expect("starting the model");
    // Both servers live through every seed (each seed works under its own node), so that
    // what seeds share, the root, is the same on both.
    let mut sides = [
        Side {
            label: "model".into(),
            address: model.connect_string(),
            clients: Vec::new(),
            generations: Vec::new(),
            zxids: Vec::new(),
            names: Names::default(),
            model: Some(model),
            control: None,
        },
        Side {
            label: format!("ZooKeeper {version}"),
            address: real.connect_string(),
            clients: Vec::new(),
            generations: Vec::new(),
            zxids: Vec::new(),
            names: Names::default(),
            model: None,
            control: Some(
                Client::connect(&real.connect_string(), MAX_SESSION_MS as i32, wait)
                    .await
                    .0,
            ),
        },
    ];
    let ops = env_number("CONFORMANCE_OPS", 300) as usize;
    let started = std::time::Instant::now();
    let mut replays = Replays::default();
    for seed in seeds() {
        run_seed(&mut sides, version, seed, ops, &mut replays).await;
    }
    eprintln!(
        "conformance with ZooKeeper {version}: seeds {:?} x {ops} operations in {:?}; {} \
         reconnects with setWatches2, {} watches fired by them",
        seeds(),
        started.elapsed(),
        replays.reconnects,
        replays.fired
    );
    assert!(
        replays.fired > 0 || ops < 100,
        "no reconnect fired a watch: the stream does not exercise setWatches2"
    );
}

/// One server and the sessions on it.
struct Side {
    label: String,
    address: String,
    clients: Vec<Client>,
    generations: Vec<usize>,
    /// After each operation of the seed, the highest zxid a session of this side had seen
    /// (what a reconnect's watches are relative to).
    zxids: Vec<i64>,
    names: Names,
    /// The model (`None` for the real server).
    model: Option<InProcessServer>,
    /// The real server's session for looking without being compared.
    control: Option<Client>,
}

/// What each slot received during one operation, in order.
type Observation = Vec<Vec<Item>>;

impl Side {
    async fn open(&mut self, slot: usize, timeout: i32, wait: Duration) -> Item {
        let (client, item) = Client::connect(&self.address, timeout, wait).await;
        if slot < self.clients.len() {
            self.clients[slot] = client;
        } else {
            self.clients.push(client);
            self.generations.push(0);
        }
        item
    }

    fn session_name(&self, slot: usize) -> String {
        format!("s{slot}.{}", self.generations[slot])
    }

    async fn apply(&mut self, op: &Op, wait: Duration) -> Observation {
        let mut observed: Observation = vec![Vec::new(); self.clients.len()];
        match op {
            Op::Call { session, request } => {
                observed[*session] = self.clients[*session].call(request).await;
            }
            Op::Close {
                session,
                reopen_timeout,
            } => {
                let client = &mut self.clients[*session];
                let mut items = client.call(&Request::CloseSession).await;
                items.extend(client.until_closed().await);
                self.generations[*session] += 1;
                items.push(self.open(*session, *reopen_timeout, wait).await);
                observed[*session] = items;
            }
            Op::Expire {
                session,
                reopen_timeout,
            } => {
                let client = &mut self.clients[*session];
                let id = client.session_id;
                let password = client.password.clone();
                client.drop_connection();
                let expired = match &self.model {
                    Some(model) => model.expire_session(id),
                    None => {
                        let credentials = SessionCredentials::new(id, password);
                        let outcome =
                            curator_test::expire_session(&self.address, &credentials, wait)
                                .await
                                .expect("expiring a session");
                        outcome == curator_test::Expiry::Expired
                    }
                };
                assert!(
                    expired,
                    "{}: session {id:#x} was not there to expire",
                    self.label
                );
                self.generations[*session] += 1;
                let item = self.open(*session, *reopen_timeout, wait).await;
                observed[*session] = vec![item];
            }
            Op::Reconnect {
                session,
                back,
                watches,
            } => {
                let relative_zxid = self
                    .zxids
                    .len()
                    .checked_sub(*back)
                    .map_or(0, |at| self.zxids[at]);
                let client = &mut self.clients[*session];
                let mut items = vec![client.reconnect(&self.address).await];
                items.extend(
                    client
                        .call(&Request::SetWatches2(SetWatches2 {
                            relative_zxid,
                            ..watches.clone()
                        }))
                        .await,
                );
                observed[*session] = items;
            }
        }
        observed
    }

    /// Notes the highest zxid this side's sessions have seen after an operation.
    fn seen(&mut self) {
        let before = self.zxids.last().copied().unwrap_or(0);
        let now = self
            .clients
            .iter()
            .map(|client| client.last_zxid)
            .fold(before, i64::max);
        self.zxids.push(now);
    }

    /// Waits until the real server has reaped `paths`.
    async fn await_gone(&mut self, paths: &[String], wait: Duration) {
        let control = self
            .control
            .as_mut()
            .expect("the real side has a control session");
        let deadline = tokio::time::Instant::now() + wait;
        for path in paths {
            loop {
                let items = control
                    .call(&Request::Exists(ExistsRequest {
                        path: path.clone(),
                        watch: false,
                    }))
                    .await;
                let gone = items.iter().any(|item| {
                    matches!(
                        item,
                        Item::Reply {
                            result: Err(ErrorCode::NoNode),
                            ..
                        }
                    )
                });
                if gone {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{}: {path}, which the model reaped, was not reaped within {wait:?}",
                    self.label
                );
                tokio::time::sleep(Duration::from_millis(CONTAINER_CHECK_MS / 2)).await;
            }
        }
    }

    /// The real server's last zxid (in the header of a read's reply).
    async fn server_zxid(&mut self) -> i64 {
        let control = self
            .control
            .as_mut()
            .expect("the real side has a control session");
        let items = control
            .call(&Request::Exists(ExistsRequest {
                path: "/".into(),
                watch: false,
            }))
            .await;
        items
            .iter()
            .find_map(|item| match item {
                Item::Reply { zxid, .. } => Some(*zxid),
                _ => None,
            })
            .expect("the control session's read was answered")
    }

    /// Pings every session: whatever an operation sent them has arrived once the pong has.
    async fn barrier(&mut self, observed: &mut Observation) {
        for (slot, client) in self.clients.iter_mut().enumerate() {
            if client.is_open() {
                observed[slot].extend(client.call(&Request::Ping).await);
            }
        }
        if let Some(control) = self.control.as_mut() {
            control.call(&Request::Ping).await;
        }
    }

    /// The observation as text, `connected` naming the sessions opened in it.
    ///
    /// A session's end deletes its ephemerals in one transaction, in the order of a hash set
    /// on a real server (and in path order in the model): after a close or an expiry, each run
    /// of notifications is compared in (zxid, path, type) order.
    fn normalize(&mut self, op: &Op, observed: &Observation) -> Vec<Vec<String>> {
        let mut observed = observed.clone();
        if matches!(op, Op::Close { .. } | Op::Expire { .. }) {
            for items in &mut observed {
                for run in items.split_mut(|item| !matches!(item, Item::Event { .. })) {
                    run.sort_by_key(|item| match item {
                        Item::Event { zxid, event } => {
                            (*zxid, event.path.clone(), format!("{:?}", event.event_type))
                        }
                        _ => (0, String::new(), String::new()),
                    });
                }
            }
        }
        let mut text = Vec::new();
        for (slot, items) in observed.iter().enumerate() {
            let name = self.session_name(slot);
            text.push(
                items
                    .iter()
                    .map(|item| self.names.item(item, Some(&name)))
                    .collect(),
            );
        }
        text
    }
}

/// How much the reconnects exercised: reconnects, and watches their setWatches2 fired.
#[derive(Debug, Default)]
struct Replays {
    reconnects: usize,
    fired: usize,
}

async fn run_seed(
    sides: &mut [Side; 2],
    version: ZooKeeperVersion,
    seed: u64,
    ops: usize,
    replays: &mut Replays,
) {
    let wait = Timing::new().wait();
    let base = format!("/conformance-{seed}");
    let mut generator = Generator::new(seed, base.clone());
    for side in sides.iter_mut() {
        side.clients.clear();
        side.generations.clear();
        side.zxids.clear();
    }
    let mut history: Vec<String> = Vec::new();
    let fail = |history: &[String], index: usize, op: &str, what: String| -> ! {
        let mut report = String::new();
        let _ = writeln!(
            report,
            "the model differs from ZooKeeper {version}: seed {seed}, operation {index}: {op}"
        );
        let _ = writeln!(report, "{what}");
        let _ = writeln!(
            report,
            "the operations before it (last {}; CONFORMANCE_HISTORY for more):",
            history_len()
        );
        for line in history.iter().rev().take(history_len()).rev() {
            let _ = writeln!(report, "  {line}");
        }
        let _ = writeln!(
            report,
            "replay: CONFORMANCE_SEED={seed} CONFORMANCE_OPS={} cargo test -p curator-zkmodel --test conformance \\\n\
             (the seeds before it ran on the same servers: CONFORMANCE_SEEDS={seed} replays them too)",
            index + 1
        );
        panic!("{report}");
    };

    // The sessions.
    for slot in 0..generator.sessions() {
        let timeout = generator.session_timeout();
        let mut observed = Vec::new();
        for side in sides.iter_mut() {
            let item = side.open(slot, timeout, wait).await;
            let name = side.session_name(slot);
            observed.push(side.names.item(&item, Some(&name)));
        }
        if observed[0] != observed[1] {
            fail(
                &history,
                0,
                &format!("open session {slot} asking for {timeout} ms"),
                format!("model: {}\nreal:  {}", observed[0], observed[1]),
            );
        }
    }

    // The real server's last zxid less the model's, after the previous operation.
    let mut zxid_offset: Option<i64> = None;
    for index in 0..ops {
        let op = if index == 0 {
            generator.first()
        } else {
            let model = sides[0].model.as_ref().expect("the model side");
            model.server().with_model(|model| generator.next(model))
        };
        let mut observations = Vec::new();
        for side in sides.iter_mut() {
            let mut observed = side.apply(&op, wait).await;
            observations.push(std::mem::take(&mut observed));
        }
        // Containers the operation emptied are reaped before anything else happens.
        let reaped = reap(sides, &base, wait).await;
        absorb_failed_reaps(sides, &observations[1], reaped, &mut zxid_offset).await;
        for (side, observed) in sides.iter_mut().zip(observations.iter_mut()) {
            side.barrier(observed).await;
            side.seen();
        }
        let texts: Vec<Vec<Vec<String>>> = sides
            .iter_mut()
            .zip(&observations)
            .map(|(side, observed)| side.normalize(&op, observed))
            .collect();
        let op_text = describe(&op);
        if texts[0] != texts[1] {
            let mut what = String::new();
            for slot in 0..texts[0].len().max(texts[1].len()) {
                let model = texts[0].get(slot).cloned().unwrap_or_default();
                let real = texts[1].get(slot).cloned().unwrap_or_default();
                let mark = if model == real { " " } else { "*" };
                let _ = writeln!(what, "{mark} session {slot}:");
                let _ = writeln!(what, "    model: {model:?}");
                let _ = writeln!(what, "    real:  {real:?}");
            }
            if std::env::var("CONFORMANCE_DEBUG").is_ok() {
                for word in ["wchc", "wchp"] {
                    let dump = curator_test::four_letter_word(&sides[1].address, word, wait).await;
                    let _ = writeln!(what, "{word}: {dump:?}");
                }
                for (slot, client) in sides[1].clients.iter().enumerate() {
                    let _ = writeln!(what, "slot {slot}: {:#x}", client.session_id);
                }
            }
            let _ = writeln!(what, "raw model: {:?}", observations[0]);
            let _ = writeln!(what, "raw real:  {:?}", observations[1]);
            fail(&history, index, &op_text, what);
        }
        if let Op::Reconnect { session, .. } = &op {
            replays.reconnects += 1;
            replays.fired += observations[1][*session]
                .iter()
                .filter(|item| matches!(item, Item::Event { .. }))
                .count();
        }
        history.push(format!("{index}: {op_text} => {:?}", texts[1]));
    }
    // The sessions end, and the containers their ephemerals leave empty go: nothing of this
    // seed changes the root under the next one.
    for side in sides.iter_mut() {
        for client in &mut side.clients {
            if client.is_open() {
                client.call(&Request::CloseSession).await;
                client.until_closed().await;
            }
        }
    }
    reap(sides, &base, wait).await;
}

/// Reaps containers (and TTL nodes) on both sides until nothing more goes (a reaping may
/// empty its parent): the model reaps at once, and the nodes it deleted must go on the real
/// server too, which reaps on its own schedule. Whether anything was reaped.
async fn reap(sides: &mut [Side; 2], base: &str, wait: Duration) -> bool {
    let mut reaped = false;
    for _ in 0..32 {
        let model = sides[0].model.as_ref().expect("the model side");
        let before = model
            .server()
            .with_model(|model| generate::existing(model, base));
        model.server().tick();
        let after = model
            .server()
            .with_model(|model| generate::existing(model, base));
        let gone: Vec<String> = before
            .into_iter()
            .filter(|path| !after.contains(path))
            .collect();
        if gone.is_empty() {
            return reaped;
        }
        reaped = true;
        sides[1].await_gone(&gone, wait).await;
    }
    panic!("the model keeps reaping nodes under {base}");
}

/// A real server's container reaper deletes every empty container it finds at each check
/// (every `CONTAINER_CHECK_MS`), without waiting for its earlier deletes: on a loaded machine
/// a check can find a container whose delete is still under way and delete it again. That
/// second delete fails, and a failed write still takes a zxid, so the real server's last zxid
/// (in the header of every later read's and ping's reply) runs ahead of the model's by a
/// transaction that changed nothing. After an operation whose reaping put the real server
/// ahead of the model by more than before, the extra zxids are named as the zxid before them,
/// unless one of them is in what the operation's sessions received (then it was no such
/// transaction, and the comparison reports it). The real server's last zxid is read after the
/// last reaped node was seen gone, so it counts every such second delete: the reaper asks for
/// a node's delete only while the node exists, so before the read that saw it gone was
/// answered, and a server applies requests in the order they reach it.
async fn absorb_failed_reaps(
    sides: &mut [Side; 2],
    observed: &Observation,
    reaped: bool,
    offset: &mut Option<i64>,
) {
    let model_last = sides[0]
        .model
        .as_ref()
        .expect("the model side")
        .server()
        .with_model(|model| model.last_zxid());
    let real_last = sides[1].server_zxid().await;
    let now = real_last - model_last;
    if let Some(before) = *offset {
        if reaped && now > before {
            let visible = model_last + before;
            let received = observed.iter().flatten().any(|item| match item {
                Item::Reply { zxid, .. } | Item::Event { zxid, .. } => *zxid > visible,
                _ => false,
            });
            if !received {
                for zxid in visible + 1..=real_last {
                    sides[1].names.alias(zxid, visible);
                }
            }
        }
    }
    *offset = Some(now);
}

fn describe(op: &Op) -> String {
    match op {
        Op::Call { session, request } => format!("session {session}: {request:?}"),
        Op::Close {
            session,
            reopen_timeout,
        } => format!("session {session}: closeSession, then a new session ({reopen_timeout} ms)"),
        Op::Expire {
            session,
            reopen_timeout,
        } => format!("session {session}: expired, then a new session ({reopen_timeout} ms)"),
        Op::Reconnect {
            session,
            back,
            watches,
        } => format!(
            "session {session}: reconnects, setWatches2 relative to {back} operations ago: {watches:?}"
        ),
    }
}

/// How many operations a failure report lists (`CONFORMANCE_HISTORY`, default 30).
fn history_len() -> usize {
    env_number("CONFORMANCE_HISTORY", 30) as usize
}
