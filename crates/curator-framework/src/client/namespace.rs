//! Namespace nodes: created (as containers, with their parents) before the first write under a
//! namespace, in the same dispatch, so the request that needs them is queued right behind them.
//! Reads never create them (see `ops::run_read`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::future::join_all;
use parking_lot::Mutex;

use crate::acl::AclProvider;
use crate::error::{Error, Result};
use crate::paths;
use crate::types::CreateMode;
use crate::wire::WireSession;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The nodes exist (a create succeeded or met `NodeExists`).
    Ensured,
    /// Their creates were sent on this session and are not answered yet: later requests on
    /// the same session are queued behind them and need not send them again.
    InFlight { session_id: i64 },
}

/// What the client knows of its namespaces' nodes.
#[derive(Debug, Default)]
pub(crate) struct Namespaces {
    states: Mutex<HashMap<Arc<str>, State>>,
}

impl Namespaces {
    /// Whether requests under `namespace` on `session_id` must be preceded by its creates; if
    /// so, marks them as in flight (the caller sends them now).
    pub(crate) fn needs_creates(&self, namespace: &Arc<str>, session_id: i64) -> bool {
        let mut states = self.states.lock();
        match states.get(namespace) {
            Some(State::Ensured) => false,
            Some(State::InFlight { session_id: id }) if *id == session_id => false,
            _ => {
                states.insert(Arc::clone(namespace), State::InFlight { session_id });
                true
            }
        }
    }

    /// Records how the creates went: ensured, or to be sent again by the next request.
    pub(crate) fn settle(&self, namespace: &Arc<str>, ok: bool) {
        let mut states = self.states.lock();
        if ok {
            states.insert(Arc::clone(namespace), State::Ensured);
        } else if matches!(states.get(namespace), Some(State::InFlight { .. })) {
            states.remove(namespace);
        }
    }

    /// Whether the namespace's nodes are known to exist.
    pub(crate) fn is_ensured(&self, namespace: &str) -> bool {
        matches!(self.states.lock().get(namespace), Some(State::Ensured))
    }
}

/// The creates of `/namespace` and its parents as containers: all sent at the first poll, top
/// down; `NodeExists` counts as success.
pub(crate) fn creates(
    session: Arc<WireSession>,
    namespace: &str,
    acl_provider: &dyn AclProvider,
) -> impl Future<Output = Result<()>> + Send + 'static {
    let full = format!("/{namespace}");
    let mut targets: Vec<String> = paths::ancestors(&full)
        .into_iter()
        .map(str::to_owned)
        .collect();
    targets.push(full);
    let requests: Vec<(String, Vec<crate::acl::Acl>)> = targets
        .into_iter()
        .map(|path| {
            let acl = acl_provider.acl_for_path(&path);
            (path, acl)
        })
        .collect();
    async move {
        let creates = requests
            .iter()
            .map(|(path, acl)| session.create(path, &[], CreateMode::Container, acl, None));
        for result in join_all(creates).await {
            match result {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}
