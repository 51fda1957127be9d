//! What several queue test files share: the fault schedule of the stress tests and their
//! exactly-once check.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use curator_framework::CuratorFramework;
use curator_test::FaultProxy;

/// Cuts every proxy's connections over and over (half the time after holding replies a
/// moment, so requests are applied with their replies lost) until `done`; returns how many
/// cuts it made. At each cut number in `expiries`, instead of a plain cut, the session of the
/// paired client behind that cut's proxy (`proxies[cut % len]`) is expired at `server`.
pub(crate) async fn chaos(
    proxies: Vec<(Arc<FaultProxy>, Option<CuratorFramework>)>,
    expiries: &[usize],
    server: String,
    done: Arc<AtomicBool>,
) -> usize {
    let mut cuts = 0;
    while !done.load(Ordering::SeqCst) {
        // Fault timing, not synchronisation: how long a link works between cuts.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (proxy, client) = &proxies[cuts % proxies.len()];
        match client {
            Some(client) if expiries.contains(&cuts) => {
                curator_testkit::expire_behind(client, proxy, &server).await;
            }
            _ if cuts % 2 == 0 => {
                proxy.pause_replies();
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            _ => {}
        }
        proxy.drop_connections();
        proxy.resume();
        cuts += 1;
    }
    cuts
}

/// Every item of `expected` distinct ones was taken, none twice.
pub(crate) fn assert_each_once(taken: &[String], expected: usize) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for item in taken {
        *counts.entry(item).or_default() += 1;
    }
    let duplicates: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicates.is_empty(), "duplicates: {duplicates:?}");
    assert_eq!(counts.len(), expected, "no item lost");
}
