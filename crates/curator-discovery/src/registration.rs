//! One locally registered instance, kept on the server: created at registration, re-created
//! with its latest data after deletion, reconnection and session expiry, exactly once, always
//! owned by the live session.

use std::fmt;
use std::sync::Arc;

use curator_framework::recipe::{Backoff, RecipeTasks, TaskHandle};
use curator_framework::watcher::Watcher;
use curator_framework::{CreateMode, CuratorFramework, Error, Result};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::Payload;
use crate::instance::ServiceInstance;
use crate::serializer::JsonInstanceSerializer;

/// How many times one registration pass goes round before giving up (each round is a create,
/// a read, or the deletion of another session's node).
const MAX_ROUNDS: usize = 10;

struct State<P> {
    instance: ServiceInstance<P>,
    data: Vec<u8>,
    /// The local data may not be on the server yet (a write failed, or nothing written yet).
    dirty: bool,
    /// The node's path: the instance path, or for sequential nodes the created path once known.
    actual: Option<String>,
}

pub(crate) struct Registration<P> {
    client: CuratorFramework,
    serializer: JsonInstanceSerializer,
    path: String,
    mode: CreateMode,
    watch_instances: bool,
    state: Mutex<State<P>>,
    /// Held by every write of the node and every look at it, so a local update and the
    /// adoption of a change made by others never interleave.
    write: tokio::sync::Mutex<()>,
    poke: Notify,
    /// The keeper task (a child of the discovery's tasks).
    tasks: RecipeTasks,
    keeper: Mutex<Option<TaskHandle>>,
}

impl<P> fmt::Debug for Registration<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("actual", &self.state.lock().actual)
            .finish_non_exhaustive()
    }
}

impl<P: Payload> Registration<P> {
    pub(crate) fn new(
        client: CuratorFramework,
        tasks: RecipeTasks,
        serializer: JsonInstanceSerializer,
        path: String,
        instance: ServiceInstance<P>,
        watch_instances: bool,
    ) -> Result<Arc<Self>> {
        let data = serializer.serialize(&instance)?;
        check_len(&data)?;
        let mode = instance.service_type().create_mode();
        let actual = (!mode.is_sequential()).then(|| path.clone());
        Ok(Arc::new(Self {
            client,
            serializer,
            path,
            mode,
            watch_instances,
            state: Mutex::new(State {
                instance,
                data,
                dirty: true,
                actual,
            }),
            write: tokio::sync::Mutex::new(()),
            poke: Notify::new(),
            tasks,
            keeper: Mutex::new(None),
        }))
    }

    /// The instance as last registered, updated or (with `watch_instances`) changed by others.
    pub(crate) fn instance(&self) -> ServiceInstance<P> {
        self.state.lock().instance.clone()
    }

    /// The node's path (for a sequential instance, once created).
    pub(crate) fn actual_path(&self) -> Option<String> {
        self.state.lock().actual.clone()
    }

    /// Puts the node in place now, then keeps it in the background (once stopped, never
    /// again: the task would end at once).
    pub(crate) async fn register(self: &Arc<Self>) -> Result<()> {
        self.settle().await?;
        let mut keeper = self.keeper.lock();
        if keeper.is_none() {
            *keeper = Some(self.tasks.spawn(Arc::clone(self).keep()));
        }
        Ok(())
    }

    /// New data for the instance: written now when the node exists, and used for every
    /// re-creation. The local copy changes even when the write fails (the keeper writes it
    /// later).
    pub(crate) async fn update(&self, instance: ServiceInstance<P>) -> Result<()> {
        let data = self.serializer.serialize(&instance)?;
        check_len(&data)?;
        let _write = self.write.lock().await;
        let actual = {
            let mut state = self.state.lock();
            state.instance = instance;
            state.data.clone_from(&data);
            state.dirty = true;
            state.actual.clone()
        };
        let Some(actual) = actual else {
            self.poke.notify_one();
            return Ok(());
        };
        match self.client.set_data().for_path(&actual, &data).await {
            Ok(_) => {
                let mut state = self.state.lock();
                if state.data == data {
                    state.dirty = false;
                }
                Ok(())
            }
            Err(Error::NoNode) => {
                self.poke.notify_one();
                Ok(())
            }
            Err(error) => {
                self.poke.notify_one();
                Err(error)
            }
        }
    }

    /// Stops keeping the node (waits for the keeper to end); deletes nothing.
    pub(crate) async fn stop(&self) {
        let _ = self.tasks.close().await;
        self.keeper.lock().take();
    }

    /// Stops keeping the node and deletes it (guaranteed: retried in the background when the
    /// connection is down).
    pub(crate) async fn unregister(&self) -> Result<()> {
        self.stop().await;
        let _write = self.write.lock().await;
        match self.actual_path() {
            Some(path) => {
                self.client
                    .delete()
                    .guaranteed()
                    .quietly()
                    .for_path(&path)
                    .await
            }
            None => Ok(()),
        }
    }

    /// Passes until the node is in place (or an error other than "gone, try again").
    async fn settle(&self) -> Result<Watcher> {
        let mut last = Error::NoNode;
        for _ in 0..MAX_ROUNDS {
            match self.pass().await {
                Ok(watcher) => return Ok(watcher),
                Err(Error::NoNode) => last = Error::NoNode,
                Err(error) => return Err(error),
            }
        }
        Err(last)
    }

    /// One look at the node, and one step towards having it in place with this session:
    /// `Ok` with a watch on its data when it is; `Err(NoNode)` when another pass is needed.
    async fn pass(&self) -> Result<Watcher> {
        let _write = self.write.lock().await;
        let actual = self.actual_path();
        let Some(path) = actual else {
            return self.create(&self.path, self.mode).await;
        };
        let (data, stat, watcher) = match self.client.get_data().watched().for_path(&path).await {
            Ok(found) => found,
            Err(Error::NoNode) => return self.create(&path, recreate_mode(self.mode)).await,
            Err(error) => return Err(error),
        };
        if self.mode.is_ephemeral() {
            let session = self.client.session_id().ok_or(Error::ConnectionLoss)?;
            if stat.ephemeral_owner != session {
                // Another session's node (this process's previous session, not yet reaped, or
                // someone else's): replace it, so the node is ours and watchers see a change.
                tracing::debug!(path, "replacing an instance node of another session");
                match self
                    .client
                    .delete()
                    .with_version(stat.version)
                    .for_path(&path)
                    .await
                {
                    Ok(()) | Err(Error::NoNode | Error::BadVersion) => {}
                    Err(error) => return Err(error),
                }
                return Err(Error::NoNode);
            }
        }
        let (dirty, local) = {
            let state = self.state.lock();
            (state.dirty, state.data.clone())
        };
        if data == local {
            self.state.lock().dirty = false;
        } else if dirty {
            match self
                .client
                .set_data()
                .with_version(stat.version)
                .for_path(&path, &local)
                .await
            {
                Ok(_) => self.state.lock().dirty = false,
                Err(Error::BadVersion) => return Err(Error::NoNode),
                Err(error) => return Err(error),
            }
        } else if self.watch_instances {
            // Someone else changed the instance: that is now the instance kept.
            match self.serializer.deserialize::<P>(&data) {
                Ok(instance) => {
                    let mut state = self.state.lock();
                    state.instance = instance;
                    state.data = data;
                }
                Err(error) => {
                    tracing::warn!(path, %error, "ignoring undecodable instance data");
                }
            }
        }
        Ok(watcher)
    }

    /// Creates the node with the local data; `Err(NoNode)` asks for another pass (which sets
    /// the watch, or deals with a node already there).
    async fn create(&self, path: &str, mode: CreateMode) -> Result<Watcher> {
        let data = self.state.lock().data.clone();
        let created = self
            .client
            .create()
            .creating_parent_containers_if_needed()
            .with_mode(mode)
            .for_path(path, &data)
            .await;
        match created {
            Ok(created) => {
                let mut state = self.state.lock();
                state.actual = Some(created);
                state.dirty = false;
                Err(Error::NoNode)
            }
            Err(Error::NodeExists) => Err(Error::NoNode),
            Err(error) => Err(error),
        }
    }

    /// Keeps the node: a pass, then wait for a change of the node, a reconnection or new
    /// data, and again.
    /// Runs until its task is cancelled (`stop`, the discovery's close, the client's close) or
    /// the client is closed.
    async fn keep(self: Arc<Self>) {
        let mut states = self.client.connection_state_stream();
        let mut backoff = Backoff::standard();
        loop {
            match self.settle().await {
                Ok(watcher) => {
                    backoff.reset();
                    tokio::select! {
                        _ = watcher.changed() => {}
                        connected = states.next_connected() => if connected.is_err() { return },
                        () = self.poke.notified() => {}
                    }
                }
                Err(Error::Closed) => return,
                Err(error) => {
                    tracing::debug!(%error, path = %self.path, "instance not registered yet; trying again");
                    tokio::select! {
                        () = backoff.wait() => {}
                        connected = states.next_connected() => if connected.is_err() { return },
                    }
                }
            }
        }
    }
}

/// The non-sequential mode a sequential node is re-created with, so it keeps its path.
fn recreate_mode(mode: CreateMode) -> CreateMode {
    match mode {
        CreateMode::EphemeralSequential => CreateMode::Ephemeral,
        CreateMode::PersistentSequential => CreateMode::Persistent,
        other => other,
    }
}

fn check_len(data: &[u8]) -> Result<()> {
    if data.len() > curator_framework::paths::MAX_DATA_LEN {
        return Err(Error::InvalidArgument(format!(
            "the instance's JSON is {} bytes, over ZooKeeper's limit of {} bytes",
            data.len(),
            curator_framework::paths::MAX_DATA_LEN
        )));
    }
    Ok(())
}
