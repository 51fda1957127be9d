//! Random writers for tests that follow a changing tree (caches, their convergence through
//! faults): creates, sets and deletes at random under a root, in phases, until told to stop.
//!
//! ```no_run
//! # async fn demo(client: curator_framework::CuratorFramework) {
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicBool, AtomicUsize};
//! use curator_testkit::writers::{Control, mutate};
//!
//! let (_running, running) = tokio::sync::watch::channel(true);
//! let control = Control {
//!     phase: Arc::new(AtomicUsize::new(0)),
//!     stop: Arc::new(AtomicBool::new(false)),
//!     done: Arc::new(AtomicUsize::new(0)),
//!     running,
//!     parked: Arc::new(AtomicUsize::new(0)),
//! };
//! let writer = tokio::spawn(mutate(client, "/tree".into(), 7, control.clone()));
//! control.stop.store(true, std::sync::atomic::Ordering::SeqCst);
//! writer.await.unwrap();
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use curator_framework::CuratorFramework;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

/// What a test shares with its writers.
#[derive(Debug, Clone)]
pub struct Control {
    /// The phase: writers work under `root/p<phase>`.
    pub phase: Arc<AtomicUsize>,
    /// Set to end the writers.
    pub stop: Arc<AtomicBool>,
    /// Writes made so far (each, whatever its outcome).
    pub done: Arc<AtomicUsize>,
    /// `false` parks the writers (before their next write) until it is `true` again.
    pub running: watch::Receiver<bool>,
    /// How many writers are parked.
    pub parked: Arc<AtomicUsize>,
}

/// Random creates, sets and deletes on paths up to three levels below `root/p<phase>`, until
/// `stop`. Each phase works on its own subtree, so what a disruption made a cache miss is not
/// repaired by later writes: only the cache's own resync can repair it. Errors (no node, node
/// exists, a connection lost during a restart) are part of it and ignored.
pub async fn mutate(client: CuratorFramework, root: String, seed: u64, control: Control) {
    let Control {
        phase,
        stop,
        done,
        mut running,
        parked,
    } = control;
    let mut rng = StdRng::seed_from_u64(seed);
    while !stop.load(Ordering::SeqCst) {
        if !*running.borrow() {
            parked.fetch_add(1, Ordering::SeqCst);
            let _ = running.wait_for(|r| *r).await;
            parked.fetch_sub(1, Ordering::SeqCst);
        }
        let base = format!("{root}/p{}", phase.load(Ordering::SeqCst));
        random_write(&client, &mut rng, &base, 3).await;
        done.fetch_add(1, Ordering::SeqCst);
    }
}

/// One random write below `base`, on a path 1 to `max_depth` levels down named from `a`, `b`
/// and `c`: a create (parents as needed, 40%), a set (40%) or a delete with its children
/// (20%). Its error, if any (no node, node exists, a connection lost), is ignored: writers that
/// race each other and faults expect them.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) {
/// use rand::SeedableRng;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(7);
/// curator_testkit::writers::random_write(&client, &mut rng, "/tree", 2).await;
/// # }
/// ```
pub async fn random_write(
    client: &CuratorFramework,
    rng: &mut impl Rng,
    base: &str,
    max_depth: usize,
) {
    let names = ["a", "b", "c"];
    let depth = rng.random_range(1..=max_depth.max(1));
    let mut path = base.to_owned();
    for _ in 0..depth {
        path.push('/');
        path.push_str(names[rng.random_range(0..names.len())]);
    }
    let data = format!("v{}", rng.random_range(0..1000)).into_bytes();
    let _ = match rng.random_range(0..10) {
        0..=3 => client
            .create()
            .creating_parents_if_needed()
            .for_path(&path, data)
            .await
            .map(drop),
        4..=7 => client.set_data().for_path(&path, data).await.map(drop),
        _ => {
            client
                .delete()
                .deleting_children_if_needed()
                .for_path(&path)
                .await
        }
    };
}
