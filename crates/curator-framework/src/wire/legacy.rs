//! The only module that names the wire client (`zookeeper-client`). Everything it hands out is
//! in the framework's own types; see docs/decisions/0001-wire-client.md for why this client.
//!
//! Each method sends its request when it is first polled, before its first suspension point, so
//! operations that are polled once when created (see `ops::future`) reach the server in the
//! order they were created.

use std::sync::{Arc, Weak};
use std::time::Duration;

use zookeeper_client as zk;

use crate::acl::{Acl, Perms};
use crate::error::{Error, Result};
use crate::security::{AuthIdentity, LoadedTls, SaslConfig, SaslKind, TlsConfig, TlsFailure};
use crate::types::multi::{Read, ReadResult, Step, TransactionResult};
use crate::types::{CreateMode, EventType, KeeperState, Stat, WatchedEvent};

/// How to open a session.
#[derive(Clone)]
pub(crate) struct ConnectSettings {
    pub(crate) session_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) can_be_read_only: bool,
    /// See `CuratorFrameworkBuilder::max_listing_bytes`.
    pub(crate) max_listing_bytes: Option<usize>,
    pub(crate) auth: Vec<(String, Vec<u8>)>,
    pub(crate) tls: Option<WireTls>,
    pub(crate) sasl: Option<SaslConfig>,
    /// Cancelled when the client closes: watches end at once, whatever the connection does.
    pub(crate) closed: tokio_util::sync::CancellationToken,
}

/// The client's TLS certificates, as the wire client takes them: a cell every new connection
/// reads, so a reload applies to the next connection.
#[derive(Clone)]
pub(crate) struct WireTls {
    config: TlsConfig,
    certs: zk::TlsDynamicCerts,
    loaded: Arc<parking_lot::Mutex<LoadedTls>>,
}

impl std::fmt::Debug for WireTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireTls")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl WireTls {
    /// Reads and checks `config`.
    ///
    /// # Errors
    /// [`Error::Tls`] with [`TlsFailure::Config`].
    pub(crate) fn new(config: TlsConfig) -> Result<Self> {
        let loaded = config.load()?;
        let certs = zk::TlsDynamicCerts::new(parse_tls(&loaded)?);
        Ok(Self {
            config,
            certs,
            loaded: Arc::new(parking_lot::Mutex::new(loaded)),
        })
    }

    /// Reads the settings again (their files may have new certificates); the next connection
    /// uses them.
    ///
    /// # Errors
    /// As [`new`](Self::new); the certificates in use stay.
    pub(crate) fn reload(&self) -> Result<()> {
        let loaded = self.config.load()?;
        self.certs.update(parse_tls(&loaded)?);
        *self.loaded.lock() = loaded;
        Ok(())
    }

    /// The PEM texts in use.
    pub(crate) fn loaded(&self) -> LoadedTls {
        self.loaded.lock().clone()
    }
}

fn parse_tls(loaded: &LoadedTls) -> Result<zk::TlsCerts> {
    let config = |reason: String| Error::Tls(TlsFailure::Config { reason });
    let ca = zk::TlsCa::from_pem(loaded.ca.expose())
        .map_err(|error| config(format!("the CA: {error}")))?;
    let mut certs = zk::TlsCerts::builder().with_ca(ca);
    if let Some((cert, key)) = &loaded.identity {
        let identity = zk::TlsIdentity::from_pem(cert.expose(), key.expose())
            .map_err(|error| config(format!("the client certificate or key: {error}")))?;
        certs = certs.with_identity(identity);
    }
    certs
        .build()
        .map_err(|error| config(format!("the certificates: {error}")))
}

impl std::fmt::Debug for ConnectSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectSettings")
            .field("session_timeout", &self.session_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("can_be_read_only", &self.can_be_read_only)
            .field("max_listing_bytes", &self.max_listing_bytes)
            .field(
                "auth_schemes",
                &self
                    .auth
                    .iter()
                    .map(|(s, _)| s.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("tls", &self.tls)
            .field("sasl", &self.sasl)
            .finish()
    }
}

impl ConnectSettings {
    fn connector(&self) -> zk::Connector {
        let mut connector = zk::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.connection_timeout)
            .with_readonly(self.can_be_read_only)
            // One pass over the servers, then an error: the session holder decides what to do
            // next (and says why, for a certificate or a login that will not work).
            .with_fail_eagerly();
        for (scheme, auth) in &self.auth {
            connector = connector.with_auth(scheme, auth);
        }
        if let Some(tls) = &self.tls {
            let mut options = zk::TlsOptions::new().with_certs(tls.certs.clone());
            if tls.config.skips_hostname_verification() {
                // SAFETY: the wire client marks this `unsafe` for its security risk, not for
                // memory safety; the caller asked for it and TlsConfig documents the risk.
                #[allow(unsafe_code, reason = "a security marker, not memory safety")]
                {
                    options = unsafe { options.with_no_hostname_verification() };
                }
            }
            connector = connector.with_tls(options);
        }
        if let Some(sasl) = &self.sasl {
            connector = connector.with_sasl(sasl_options(sasl));
        }
        connector
    }
}

fn sasl_options(sasl: &SaslConfig) -> zk::SaslOptions {
    match &sasl.kind {
        SaslKind::DigestMd5 { user, password } => {
            zk::SaslOptions::digest_md5(user.clone(), password.expose().to_owned()).into()
        }
        #[cfg(feature = "kerberos")]
        SaslKind::Kerberos { service, host, .. } => {
            let options = zk::SaslOptions::gssapi().with_username(service.clone());
            match host {
                Some(host) => options.with_hostname(host.clone()).into(),
                None => options.into(),
            }
        }
    }
}

/// The state of one wire session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireState {
    Connected,
    ConnectedReadOnly,
    Disconnected,
    Expired,
    AuthFailed,
    Closed,
}

impl WireState {
    fn from_zk(state: zk::SessionState) -> WireState {
        match state {
            zk::SessionState::SyncConnected => WireState::Connected,
            zk::SessionState::ConnectedReadOnly => WireState::ConnectedReadOnly,
            zk::SessionState::Disconnected => WireState::Disconnected,
            zk::SessionState::Expired => WireState::Expired,
            zk::SessionState::AuthFailed => WireState::AuthFailed,
            zk::SessionState::Closed => WireState::Closed,
        }
    }

    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            WireState::Expired | WireState::AuthFailed | WireState::Closed
        )
    }
}

/// Follows one session's state.
#[derive(Debug)]
pub(crate) struct WireStateWatcher(zk::StateWatcher);

impl WireStateWatcher {
    /// The current state, marking it seen.
    pub(crate) fn state(&mut self) -> WireState {
        WireState::from_zk(self.0.state())
    }

    /// Waits for the next state change.
    pub(crate) async fn changed(&mut self) -> WireState {
        WireState::from_zk(self.0.changed().await)
    }
}

/// One ZooKeeper session.
#[derive(Debug)]
pub(crate) struct WireSession {
    client: zk::Client,
    /// The connect string this connection was made with (its servers are the only ones the wire
    /// client reconnects to).
    connect_string: String,
    /// Cancelled when the session moved to another wire client: watches set through this one
    /// end at once.
    retired: tokio_util::sync::CancellationToken,
    /// The client's close (see [`ConnectSettings::closed`]).
    closed: tokio_util::sync::CancellationToken,
    /// See `CuratorFrameworkBuilder::max_listing_bytes`.
    max_listing_bytes: Option<usize>,
}

impl WireSession {
    /// Opens a new session.
    pub(crate) async fn connect(
        settings: &ConnectSettings,
        connect_string: &str,
    ) -> Result<WireSession> {
        let connector = settings.connector();
        let client = if settings.tls.is_some() {
            connector.secure_connect(connect_string).await
        } else {
            connector.connect(connect_string).await
        }
        .map_err(convert_error)?;
        Ok(WireSession {
            client,
            connect_string: connect_string.to_owned(),
            retired: tokio_util::sync::CancellationToken::new(),
            closed: settings.closed.clone(),
            max_listing_bytes: settings.max_listing_bytes,
        })
    }

    /// Takes this session over on the servers of `connect_string`, through a new connection
    /// (the same session id and password): for a session whose servers all left the ensemble.
    pub(crate) async fn reattach(
        &self,
        settings: &ConnectSettings,
        connect_string: &str,
    ) -> Result<WireSession> {
        let connector = settings
            .connector()
            .with_session(self.client.session().clone());
        let client = if settings.tls.is_some() {
            connector.secure_connect(connect_string).await
        } else {
            connector.connect(connect_string).await
        }
        .map_err(convert_error)?;
        Ok(WireSession {
            client,
            connect_string: connect_string.to_owned(),
            retired: tokio_util::sync::CancellationToken::new(),
            closed: settings.closed.clone(),
            max_listing_bytes: settings.max_listing_bytes,
        })
    }

    /// The old wire client cannot take a new server list within a session: the session stays.
    pub(crate) fn update_server_list(&self, _connect_string: &str) -> Result<bool> {
        Ok(false)
    }

    /// The connect string this connection was made with.
    pub(crate) fn connect_string(&self) -> &str {
        &self.connect_string
    }

    /// The session moved to another connection: watches set through this one end now (one-shot
    /// watches with a `Disconnected` session event, persistent ones with `None`).
    pub(crate) fn retire(&self) {
        self.retired.cancel();
    }

    pub(crate) fn is_retired(&self) -> bool {
        self.retired.is_cancelled()
    }

    /// The identities the server gives this session (`whoAmI`, ZooKeeper 3.7+).
    pub(crate) async fn who_am_i(&self) -> Result<Vec<AuthIdentity>> {
        let users = self.client.list_auth_users().await.map_err(convert_error)?;
        Ok(users
            .iter()
            .map(|user| AuthIdentity {
                scheme: user.scheme().to_owned(),
                id: user.user().to_owned(),
            })
            .collect())
    }

    pub(crate) fn session_id(&self) -> i64 {
        self.client.session_id().0
    }

    /// The old wire client closes a session when its last handle goes: this waits (bounded) for
    /// that.
    pub(crate) async fn close(self: &Arc<Self>, wait: Duration) {
        let mut watcher = self.state_watcher();
        let _ = tokio::time::timeout(wait, async {
            while !watcher.changed().await.is_terminal() {}
        })
        .await;
    }

    /// The old wire client does not say which server it is connected to.
    pub(crate) fn server(&self) -> Option<String> {
        None
    }

    pub(crate) fn negotiated_timeout(&self) -> Duration {
        self.client.session_timeout()
    }

    pub(crate) fn state_watcher(&self) -> WireStateWatcher {
        WireStateWatcher(self.client.state_watcher())
    }

    pub(crate) fn state(&self) -> WireState {
        WireState::from_zk(self.client.state())
    }

    /// Creates a node; returns the path the server created (with its sequence number).
    pub(crate) async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        acl: &[Acl],
        ttl: Option<Duration>,
    ) -> Result<(String, Stat)> {
        let acl = to_zk_acl(acl);
        let options = create_options(mode, &acl, ttl);
        let (stat, sequence) = self
            .client
            .create(path, data, &options)
            .await
            .map_err(convert_error)?;
        let created = if mode.is_sequential() {
            format!("{path}{sequence}")
        } else {
            path.to_owned()
        };
        Ok((created, convert_stat(&stat)))
    }

    pub(crate) async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.client
            .delete(path, version)
            .await
            .map_err(convert_error)
    }

    pub(crate) async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let stat = self.client.check_stat(path).await.map_err(convert_error)?;
        Ok(stat.as_ref().map(convert_stat))
    }

    pub(crate) async fn exists_watched(&self, path: &str) -> Result<(Option<Stat>, WireWatcher)> {
        let (stat, watcher) = self
            .client
            .check_and_watch_stat(path)
            .await
            .map_err(convert_error)?;
        Ok((
            stat.as_ref().map(convert_stat),
            WireWatcher::new(watcher, self),
        ))
    }

    pub(crate) async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self.client.get_data(path).await.map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_data_watched(
        &self,
        path: &str,
    ) -> Result<(Vec<u8>, Stat, WireWatcher)> {
        let (data, stat, watcher) = self
            .client
            .get_and_watch_data(path)
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat), WireWatcher::new(watcher, self)))
    }

    pub(crate) async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat> {
        let stat = self
            .client
            .set_data(path, data, version)
            .await
            .map_err(convert_error)?;
        Ok(convert_stat(&stat))
    }

    pub(crate) async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let (children, stat) = self
            .client
            .get_children(path)
            .await
            .map_err(convert_error)?;
        self.check_listing(path, &children)?;
        Ok((children, convert_stat(&stat)))
    }

    pub(crate) async fn get_children_watched(
        &self,
        path: &str,
    ) -> Result<(Vec<String>, Stat, WireWatcher)> {
        let (children, stat, watcher) = self
            .client
            .get_and_watch_children(path)
            .await
            .map_err(convert_error)?;
        // Failing drops the wire watcher, which removes the watch.
        self.check_listing(path, &children)?;
        Ok((
            children,
            convert_stat(&stat),
            WireWatcher::new(watcher, self),
        ))
    }

    /// Fails a listing of `path` whose names take more than the client's `max_listing_bytes`.
    fn check_listing(&self, path: &str, children: &[String]) -> Result<()> {
        let Some(limit) = self.max_listing_bytes else {
            return Ok(());
        };
        let bytes = listing_bytes(children);
        if bytes > limit {
            return Err(Error::ResponseTooLarge {
                path: path.to_owned(),
                children: children.len(),
                bytes,
                limit,
            });
        }
        Ok(())
    }

    /// The ephemeral nodes of this session whose paths start with `prefix` (a string prefix,
    /// as ZooKeeper matches it).
    pub(crate) async fn get_ephemerals(&self, prefix: &str) -> Result<Vec<String>> {
        self.client
            .list_ephemerals(prefix)
            .await
            .map_err(convert_error)
    }

    /// The number of descendants of `path` (children, grandchildren, ...; not the node itself).
    pub(crate) async fn get_all_children_number(&self, path: &str) -> Result<usize> {
        self.client
            .count_descendants_number(path)
            .await
            .map_err(convert_error)
    }

    pub(crate) async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        let (acl, stat) = self.client.get_acl(path).await.map_err(convert_error)?;
        Ok((acl.iter().map(from_zk_acl).collect(), convert_stat(&stat)))
    }

    pub(crate) async fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> Result<Stat> {
        let acl = to_zk_acl(acl);
        let stat = self
            .client
            .set_acl(path, &acl, version)
            .await
            .map_err(convert_error)?;
        Ok(convert_stat(&stat))
    }

    pub(crate) async fn sync(&self, path: &str) -> Result<()> {
        self.client.sync(path).await.map_err(convert_error)
    }

    pub(crate) async fn add_watch(
        self: &Arc<Self>,
        path: &str,
        recursive: bool,
    ) -> Result<WirePersistentWatcher> {
        let mode = if recursive {
            zk::AddWatchMode::PersistentRecursive
        } else {
            zk::AddWatchMode::Persistent
        };
        let watcher = self.client.watch(path, mode).await.map_err(convert_error)?;
        Ok(WirePersistentWatcher {
            watcher: Some(watcher),
            session: Arc::downgrade(self),
            retired: self.retired.clone(),
            closed: self.closed.clone(),
            path: path.to_owned(),
            mode,
            rewatch: false,
            pending: None,
        })
    }

    /// Changes the ensemble: `joining` member specs and `leaving` ids (incremental), or a whole
    /// new member list; only if the configuration's version is `from` when given. Returns the
    /// new configuration's text.
    pub(crate) async fn reconfig(
        &self,
        joining: &[String],
        leaving: &[String],
        members: Option<&[String]>,
        from: Option<i64>,
    ) -> Result<(Vec<u8>, Stat)> {
        let result = match members {
            Some(members) => {
                self.client
                    .update_ensemble(
                        zk::EnsembleUpdate::New {
                            ensemble: members.iter().map(String::as_str),
                        },
                        from,
                    )
                    .await
            }
            None => {
                self.client
                    .update_ensemble(
                        zk::EnsembleUpdate::Incremental {
                            joinings: joining.iter().map(String::as_str),
                            leavings: leaving.iter().map(String::as_str),
                        },
                        from,
                    )
                    .await
            }
        };
        let (data, stat) = result.map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_config(&self) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self.client.get_config().await.map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_config_watched(&self) -> Result<(Vec<u8>, Stat, WireWatcher)> {
        let (data, stat, watcher) = self
            .client
            .get_and_watch_config()
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat), WireWatcher::new(watcher, self)))
    }

    /// Sends `reads` as one multi-read request.
    pub(crate) async fn multi_read(&self, reads: &[Read]) -> Result<Vec<ReadResult>> {
        let mut reader = self.client.new_multi_reader();
        for read in reads {
            match read {
                Read::Data(path) => reader.add_get_data(path),
                Read::Children(path) => reader.add_get_children(path),
            }
            .map_err(convert_error)?;
        }
        let results = reader.commit().await.map_err(convert_error)?;
        Ok(results
            .into_iter()
            .enumerate()
            .map(|(index, result)| match result {
                zk::MultiReadResult::Data { data, stat } => ReadResult::Data {
                    data,
                    stat: convert_stat(&stat),
                },
                zk::MultiReadResult::Children { children } => {
                    // (A result past the reads, which the caller notices by the count, has no path.)
                    let path = reads.get(index).map_or("", Read::path);
                    match self.check_listing(path, &children) {
                        Ok(()) => ReadResult::Children { children },
                        Err(error) => ReadResult::Error(error),
                    }
                }
                zk::MultiReadResult::Error { err } => ReadResult::Error(convert_error(err)),
                other => ReadResult::Error(Error::UnexpectedReply(format!(
                    "a read result the framework does not know: {other:?}"
                ))),
            })
            .collect())
    }

    /// Commits `steps` atomically; created paths are the server's (namespace included).
    pub(crate) async fn multi(&self, steps: &[Step]) -> Result<Vec<TransactionResult>> {
        let mut writer = self.client.new_multi_writer();
        let mut acls = Vec::with_capacity(steps.len());
        for step in steps {
            if let Step::Create { acl, .. } = step {
                acls.push(to_zk_acl(acl));
            }
        }
        let mut acl_iter = acls.iter();
        for step in steps {
            let added = match step {
                Step::Create {
                    path,
                    data,
                    mode,
                    ttl,
                    ..
                } => {
                    let acl = acl_iter.next().map(Vec::as_slice).unwrap_or_default();
                    writer.add_create(path, data, &create_options(*mode, acl, *ttl))
                }
                Step::SetData {
                    path,
                    data,
                    version,
                } => writer.add_set_data(path, data, *version),
                Step::Delete { path, version } => writer.add_delete(path, *version),
                Step::Check { path, version } => writer.add_check_version(path, *version),
            };
            added.map_err(convert_error)?;
        }
        let results = writer.commit().await.map_err(|error| match error {
            zk::MultiWriteError::OperationFailed { index, source } => Error::Transaction {
                index,
                cause: Box::new(convert_error(source)),
            },
            zk::MultiWriteError::RequestFailed { source } => convert_error(source),
        })?;
        results
            .into_iter()
            .map(|result| match result {
                zk::MultiWriteResult::Create { path, stat } => Ok(TransactionResult::Create {
                    path,
                    stat: (!stat.is_invalid()).then(|| convert_stat(&stat)),
                }),
                zk::MultiWriteResult::SetData { stat } => Ok(TransactionResult::SetData {
                    stat: convert_stat(&stat),
                }),
                zk::MultiWriteResult::Delete => Ok(TransactionResult::Delete),
                zk::MultiWriteResult::Check => Ok(TransactionResult::Check),
                other => Err(Error::UnexpectedReply(format!(
                    "a transaction result the framework does not know: {other:?}"
                ))),
            })
            .collect()
    }
}

/// A one-shot watch.
#[derive(Debug)]
pub(crate) struct WireWatcher {
    watcher: zk::OneshotWatcher,
    /// The session's connection was retired (the session moved).
    retired: tokio_util::sync::CancellationToken,
    /// The client closed.
    closed: tokio_util::sync::CancellationToken,
}

impl WireWatcher {
    fn new(watcher: zk::OneshotWatcher, session: &WireSession) -> Self {
        Self {
            watcher,
            retired: session.retired.clone(),
            closed: session.closed.clone(),
        }
    }

    /// The event; a `Closed` session event as soon as the client closes, even while the
    /// connection is down (the wire client would hold the watch until it gives the session up).
    pub(crate) async fn changed(self) -> WatchedEvent {
        let session_event = |session_state| WatchedEvent {
            event_type: EventType::Session,
            session_state,
            path: String::new(),
            zxid: None,
        };
        tokio::select! {
            biased;
            event = self.watcher.changed() => convert_event(event),
            () = self.closed.cancelled() => session_event(KeeperState::Closed),
            () = self.retired.cancelled() => session_event(KeeperState::Disconnected),
        }
    }

    #[allow(deprecated)] // The wire client prefers Drop; this variant reports the server's answer.
    pub(crate) async fn remove(self) -> Result<()> {
        self.watcher.remove().await.map_err(convert_error)
    }
}

/// A persistent (optionally recursive) watch.
///
/// The wire client (0.11.2) does not register persistent watches with the server again after a
/// reconnect within the session (its `resend_watches` skips them). So after a `Disconnected`
/// session event, the `SyncConnected` (or `ConnectedReadOnly`) that follows adds the watch again
/// on the same session before it is handed out. The extra wire watcher is dropped at once: the
/// wire client keeps one registration per path, dispatches the server's events to every local
/// watcher on the path (so to this one), and removes nothing at the server while this one lives.
#[derive(Debug)]
pub(crate) struct WirePersistentWatcher {
    /// `None` once a terminal session event was delivered (the wire client panics if asked for
    /// more after that).
    watcher: Option<zk::PersistentWatcher>,
    /// Weak, so a watcher does not keep a closed client's session open.
    session: Weak<WireSession>,
    /// The session's connection was retired (the session moved): the watch ends.
    retired: tokio_util::sync::CancellationToken,
    /// The client closed: the watch ends.
    closed: tokio_util::sync::CancellationToken,
    path: String,
    mode: zk::AddWatchMode,
    /// The connection was lost since the watch was last registered.
    rewatch: bool,
    /// An event received but not yet handed out (kept across cancellation of `next`).
    pending: Option<WatchedEvent>,
}

impl WirePersistentWatcher {
    /// The next event, or `None` after the session ended.
    ///
    /// Cancellation safe: an event taken from the wire is kept until it is returned.
    pub(crate) async fn next(&mut self) -> Option<WatchedEvent> {
        let event = match self.pending.take() {
            Some(event) => event,
            None => {
                let (retired, closed) = (self.retired.clone(), self.closed.clone());
                let watcher = self.watcher.as_mut()?;
                tokio::select! {
                    biased;
                    event = watcher.changed() => convert_event(event),
                    // Its registration lives on a connection the session left, or the client
                    // closed (the session ends with it, even while the connection is down).
                    () = retired.cancelled() => {
                        self.watcher = None;
                        return None;
                    }
                    () = closed.cancelled() => {
                        self.watcher = None;
                        return None;
                    }
                }
            }
        };
        if event.event_type == EventType::Session {
            match event.session_state {
                KeeperState::Disconnected => self.rewatch = true,
                KeeperState::SyncConnected | KeeperState::ConnectedReadOnly if self.rewatch => {
                    self.pending = Some(event.clone());
                    self.register_again().await;
                    self.pending = None;
                    self.rewatch = false;
                }
                KeeperState::Expired | KeeperState::Closed | KeeperState::AuthFailed => {
                    self.watcher = None;
                }
                _ => {}
            }
        }
        Some(event)
    }

    /// Adds the watch at the server again (best effort: if the connection is lost again, the
    /// next reconnect tries again).
    async fn register_again(&self) {
        let Some(session) = self.session.upgrade() else {
            return;
        };
        match session.client.watch(&self.path, self.mode).await {
            // Dropping the extra watcher removes only its local registration (see above).
            Ok(extra) => drop(extra),
            Err(error) => {
                tracing::warn!(%error, path = self.path, "could not add a persistent watch again after a reconnect");
            }
        }
    }

    #[allow(deprecated)] // As for one-shot watches: the explicit form reports the server's answer.
    pub(crate) async fn remove(mut self) -> Result<()> {
        match self.watcher.take() {
            Some(watcher) => watcher.remove().await.map_err(convert_error),
            None => Ok(()),
        }
    }
}

fn create_options<'a>(
    mode: CreateMode,
    acl: &'a [zk::Acl],
    ttl: Option<Duration>,
) -> zk::CreateOptions<'a> {
    let zk_mode = match mode {
        CreateMode::Persistent | CreateMode::PersistentWithTtl => zk::CreateMode::Persistent,
        CreateMode::PersistentSequential | CreateMode::PersistentSequentialWithTtl => {
            zk::CreateMode::PersistentSequential
        }
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
        CreateMode::Container => zk::CreateMode::Container,
    };
    let options = zk_mode.with_acls(zk::Acls::new(acl));
    match ttl {
        Some(ttl) if mode.is_ttl() => options.with_ttl(ttl),
        _ => options,
    }
}

/// Our permission bits and the wire client's, side by side.
const PERMISSIONS: [(Perms, zk::Permission); 5] = [
    (Perms::READ, zk::Permission::READ),
    (Perms::WRITE, zk::Permission::WRITE),
    (Perms::CREATE, zk::Permission::CREATE),
    (Perms::DELETE, zk::Permission::DELETE),
    (Perms::ADMIN, zk::Permission::ADMIN),
];

fn to_zk_acl(acl: &[Acl]) -> Vec<zk::Acl> {
    acl.iter()
        .map(|entry| {
            let permission = PERMISSIONS
                .iter()
                .filter(|(ours, _)| entry.perms.contains(*ours))
                .fold(zk::Permission::NONE, |all, (_, theirs)| all | *theirs);
            zk::Acl::new(permission, zk::AuthId::new(&entry.scheme, &entry.id))
        })
        .collect()
}

fn from_zk_acl(acl: &zk::Acl) -> Acl {
    let perms = PERMISSIONS
        .iter()
        .filter(|(_, theirs)| acl.permission().has(*theirs))
        .fold(Perms::NONE, |all, (ours, _)| all | *ours);
    Acl::new(perms, acl.scheme(), acl.id())
}

fn convert_stat(stat: &zk::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        ctime: stat.ctime,
        mtime: stat.mtime,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
}

fn convert_event(event: zk::WatchedEvent) -> WatchedEvent {
    let event_type = match event.event_type {
        zk::EventType::NodeCreated => EventType::NodeCreated,
        zk::EventType::NodeDeleted => EventType::NodeDeleted,
        zk::EventType::NodeDataChanged => EventType::NodeDataChanged,
        zk::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
        zk::EventType::Session => EventType::Session,
    };
    let session_state = match event.session_state {
        zk::SessionState::SyncConnected => KeeperState::SyncConnected,
        zk::SessionState::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
        zk::SessionState::Disconnected => KeeperState::Disconnected,
        zk::SessionState::Expired => KeeperState::Expired,
        zk::SessionState::Closed => KeeperState::Closed,
        zk::SessionState::AuthFailed => KeeperState::AuthFailed,
    };
    let zxid = (event.zxid >= 0 && event_type != EventType::Session).then_some(event.zxid);
    WatchedEvent {
        event_type,
        session_state,
        path: event.path,
        zxid,
    }
}

/// What a list of names takes in ZooKeeper's encoding: a count, then per name a length and
/// the name's bytes.
pub(crate) fn listing_bytes(children: &[String]) -> usize {
    children.iter().fold(4, |sum, name| sum + 4 + name.len())
}

pub(crate) fn convert_error(error: zk::Error) -> Error {
    match error {
        zk::Error::NoNode => Error::NoNode,
        zk::Error::NodeExists => Error::NodeExists,
        zk::Error::BadVersion => Error::BadVersion,
        zk::Error::NotEmpty => Error::NotEmpty,
        zk::Error::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
        zk::Error::NoAuth => Error::NoAuth,
        zk::Error::InvalidAcl => Error::InvalidAcl,
        zk::Error::AuthFailed => Error::AuthFailed,
        zk::Error::ConnectionLoss => Error::ConnectionLoss,
        zk::Error::Timeout => Error::OperationTimeout,
        zk::Error::SessionExpired => Error::SessionExpired,
        zk::Error::SessionMoved => Error::SessionMoved,
        zk::Error::NotReadOnly => Error::NotReadOnly,
        zk::Error::NoWatcher => Error::NoWatcher,
        zk::Error::QuotaExceeded => Error::QuotaExceeded,
        zk::Error::Throttled => Error::Throttled,
        zk::Error::ReconfigDisabled => Error::ReconfigDisabled,
        zk::Error::Unimplemented => Error::Unimplemented,
        zk::Error::ClientClosed => Error::Closed,
        zk::Error::NoHosts => Error::ConnectionLoss,
        // The wire client fails requests in flight with the error that broke their connection
        // (an I/O error, a silent server): for the caller that is a connection loss.
        zk::Error::Custom(error) => {
            tracing::debug!(%error, "request failed with its connection");
            Error::ConnectionLoss
        }
        // The wire client reports the server's BADARGUMENTS code with this text; its other
        // BadArguments are checks of the request that the framework makes first.
        zk::Error::BadArguments(reason) if *reason == "server error" => Error::BadArguments,
        zk::Error::BadArguments(reason) => Error::InvalidArgument((*reason).to_owned()),
        zk::Error::UnexpectedErrorCode(-13) => Error::NewConfigNoQuorum,
        zk::Error::UnexpectedErrorCode(-14) => Error::ReconfigInProgress,
        zk::Error::UnexpectedErrorCode(code) => Error::Other {
            code,
            message: format!("unexpected error code {code}"),
        },
        other => Error::UnexpectedReply(other.to_string()),
    }
}
