//! The only module that names a wire crate: the wire layer on curator-session, the workspace's
//! own Tokio-native session engine (on curator-wire's codec). Everything it hands out is in the
//! framework's own types, so nothing else in the framework speaks the protocol's.
//!
//! Each method sends its request when it is first polled, before its first suspension point, so
//! operations that are polled once when created (see `ops::future`) reach the server in the
//! order they were created.

use std::sync::{Arc, Weak};
use std::time::Duration;

use curator_session as zk;
use curator_session::proto;

/// The source of randomness (see `random`).
pub(crate) use curator_session::entropy;

/// What a custom connector works with (see `transport`).
pub use curator_session::{BoxTransport, Connector, ServerAddress, Transport};

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
    /// Makes the connections instead of TCP (see `CuratorFrameworkBuilder::connector`).
    pub(crate) connector: Option<Arc<dyn Connector>>,
    /// Cancelled when the client closes: watches end at once, whatever the connection does.
    pub(crate) closed: tokio_util::sync::CancellationToken,
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
            .field("connector", &self.connector)
            .finish()
    }
}

impl ConnectSettings {
    fn session_config(&self, connect_string: &str) -> Result<zk::SessionConfig> {
        let mut config = zk::SessionConfig::new(connect_string)
            .map_err(convert_error)?
            .session_timeout(self.session_timeout)
            .connection_timeout(self.connection_timeout)
            .can_be_read_only(self.can_be_read_only)
            // The session holder retries, and says why no server would take the session after
            // each round (a certificate, a login).
            .one_connect_round(true);
        for (scheme, auth) in &self.auth {
            config = config.auth(scheme.clone(), auth.clone());
        }
        if let Some(tls) = &self.tls {
            config = config.connector(Arc::new(tls.connector.clone()));
        }
        if let Some(connector) = &self.connector {
            config = config.connector(Arc::clone(connector));
        }
        if let Some(sasl) = &self.sasl {
            config = config.sasl(match &sasl.kind {
                SaslKind::DigestMd5 { user, password } => {
                    zk::Sasl::digest_md5(user.clone(), password.expose())
                }
                #[cfg(feature = "kerberos")]
                SaslKind::Kerberos { service, host, .. } => {
                    zk::Sasl::gssapi(service.clone(), host.clone())
                }
            });
        }
        Ok(config)
    }
}

/// The identity a SASL login asks for (`sasl:<user>`; `sasl:` for Kerberos, whose principal
/// the ticket names).
fn requested_identity(settings: &ConnectSettings) -> String {
    match settings.sasl.as_ref().map(|sasl| &sasl.kind) {
        Some(SaslKind::DigestMd5 { user, .. }) => format!("sasl:{user}"),
        _ => "sasl:".to_owned(),
    }
}

/// The client's TLS settings as connections use them: a connector every new connection goes
/// through, so a reload applies to the next connection.
#[derive(Clone)]
pub(crate) struct WireTls {
    config: TlsConfig,
    connector: zk::TlsConnector,
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
        let connector = zk::TlsConnector::new(rustls_config(&loaded)?);
        Ok(Self {
            config,
            connector,
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
        self.connector.reload(rustls_config(&loaded)?);
        *self.loaded.lock() = loaded;
        Ok(())
    }

    /// The PEM texts in use.
    pub(crate) fn loaded(&self) -> LoadedTls {
        self.loaded.lock().clone()
    }
}

fn rustls_config(loaded: &LoadedTls) -> Result<Arc<rustls::ClientConfig>> {
    let identity = loaded
        .identity
        .as_ref()
        .map(|(cert, key)| (cert.expose(), key.expose()));
    zk::TlsConnector::config_from_pem(
        loaded.ca.expose(),
        identity,
        !loaded.skip_hostname_verification,
    )
    .map_err(|error| match error {
        zk::Error::Tls(reason) => Error::Tls(TlsFailure::Config { reason }),
        other => convert_error(other),
    })
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
    fn from_session(state: zk::SessionState) -> WireState {
        match state {
            zk::SessionState::Connected => WireState::Connected,
            zk::SessionState::ConnectedReadOnly => WireState::ConnectedReadOnly,
            zk::SessionState::Expired => WireState::Expired,
            zk::SessionState::AuthFailed => WireState::AuthFailed,
            zk::SessionState::Closed => WireState::Closed,
            _ => WireState::Disconnected,
        }
    }

    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            WireState::Expired | WireState::AuthFailed | WireState::Closed
        )
    }
}

/// Follows one session's state: every transition, in order.
#[derive(Debug)]
pub(crate) struct WireStateWatcher {
    changes: zk::StateChanges,
    session: Weak<WireSessionInner>,
    last: WireState,
}

impl WireStateWatcher {
    /// The current state.
    pub(crate) fn state(&mut self) -> WireState {
        if let Some(inner) = self.session.upgrade() {
            self.last = WireState::from_session(inner.session.state());
        }
        self.last
    }

    /// Waits for the next state change (after a terminal state, returns it again).
    pub(crate) async fn changed(&mut self) -> WireState {
        match self.changes.next().await {
            Some(state) => {
                self.last = WireState::from_session(state);
                self.last
            }
            None => {
                if !self.last.is_terminal() {
                    self.last = WireState::Closed;
                    return self.last;
                }
                std::future::pending().await
            }
        }
    }
}

#[derive(Debug)]
struct WireSessionInner {
    session: zk::Session,
}

/// One ZooKeeper session.
#[derive(Debug)]
pub(crate) struct WireSession {
    inner: Arc<WireSessionInner>,
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
        let config = settings.session_config(connect_string)?;
        let session = zk::Session::connect(config)
            .await
            .map_err(|error| match error {
                zk::Error::SaslUnavailable(reason) => {
                    tracing::debug!(reason, "the server does not offer SASL");
                    Error::IdentityNotGranted {
                        requested: requested_identity(settings),
                        granted: Vec::new(),
                    }
                }
                other => convert_error(other),
            })?;
        Ok(WireSession {
            inner: Arc::new(WireSessionInner { session }),
            closed: settings.closed.clone(),
            max_listing_bytes: settings.max_listing_bytes,
        })
    }

    /// Gives the session the servers of `connect_string` as its list (its chroot is ignored):
    /// it fails over among them, and moves now (without a disconnection) when the new list
    /// says it should (its server left, or a fair share of clients go to new servers).
    pub(crate) fn update_server_list(&self, connect_string: &str) -> Result<bool> {
        let parsed: zk::ConnectString = connect_string.parse().map_err(convert_error)?;
        self.inner
            .session
            .update_server_list(parsed.servers)
            .map_err(convert_error)
    }

    /// The identities the server gives this session (`whoAmI`, ZooKeeper 3.7+).
    pub(crate) async fn who_am_i(&self) -> Result<Vec<AuthIdentity>> {
        let users = self.inner.session.who_am_i().await.map_err(convert_error)?;
        Ok(users
            .into_iter()
            .map(|user| AuthIdentity {
                scheme: user.auth_scheme,
                id: user.user,
            })
            .collect())
    }

    pub(crate) fn session_id(&self) -> i64 {
        self.inner.session.session_id()
    }

    /// The highest zxid of a reply header this session has seen (0 before its first reply).
    pub(crate) fn last_zxid(&self) -> i64 {
        self.inner.session.last_zxid()
    }

    /// Closes the session now, whoever else holds it (see `session::close_session`).
    pub(crate) async fn close(&self, wait: Duration) {
        if let Err(error) = self.inner.session.close_within(wait).await {
            tracing::debug!(%error, "closing the session");
        }
    }

    /// The server of the current connection.
    pub(crate) fn server(&self) -> Option<String> {
        self.inner.session.server().map(|server| server.to_string())
    }

    pub(crate) fn negotiated_timeout(&self) -> Duration {
        self.inner.session.negotiated_timeout()
    }

    /// See `curator_session::Session::last_renewed`.
    pub(crate) fn last_renewed(&self) -> Option<tokio::time::Instant> {
        self.inner.session.last_renewed()
    }

    pub(crate) fn state_watcher(&self) -> WireStateWatcher {
        let changes = self.inner.session.state_changes();
        WireStateWatcher {
            changes,
            session: Arc::downgrade(&self.inner),
            last: self.state(),
        }
    }

    pub(crate) fn state(&self) -> WireState {
        WireState::from_session(self.inner.session.state())
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
        let (created, stat) = self
            .inner
            .session
            .create(
                path,
                data,
                to_proto_acl(acl),
                proto_mode(mode),
                ttl_ms(mode, ttl),
            )
            .await
            .map_err(convert_error)?;
        Ok((created, convert_stat(&stat)))
    }

    pub(crate) async fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        self.inner
            .session
            .delete(path, version.unwrap_or(-1))
            .await
            .map_err(convert_error)
    }

    pub(crate) async fn exists(&self, path: &str) -> Result<Option<Stat>> {
        let stat = self
            .inner
            .session
            .exists(path)
            .await
            .map_err(convert_error)?;
        Ok(stat.as_ref().map(convert_stat))
    }

    pub(crate) async fn exists_watched(&self, path: &str) -> Result<(Option<Stat>, WireWatcher)> {
        let (stat, watch) = self
            .inner
            .session
            .exists_watched(path)
            .await
            .map_err(convert_error)?;
        Ok((
            stat.as_ref().map(convert_stat),
            WireWatcher::new(watch, self),
        ))
    }

    pub(crate) async fn get_data(&self, path: &str) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self
            .inner
            .session
            .get_data(path)
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_data_watched(
        &self,
        path: &str,
    ) -> Result<(Vec<u8>, Stat, WireWatcher)> {
        let ((data, stat), watch) = self
            .inner
            .session
            .get_data_watched(path)
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat), WireWatcher::new(watch, self)))
    }

    pub(crate) async fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: Option<i32>,
    ) -> Result<Stat> {
        let stat = self
            .inner
            .session
            .set_data(path, data, version.unwrap_or(-1))
            .await
            .map_err(convert_error)?;
        Ok(convert_stat(&stat))
    }

    pub(crate) async fn get_children(&self, path: &str) -> Result<(Vec<String>, Stat)> {
        let (children, stat) = self
            .inner
            .session
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
        let ((children, stat), watch) = self
            .inner
            .session
            .get_children_watched(path)
            .await
            .map_err(convert_error)?;
        // Failing drops the watch, which removes it.
        self.check_listing(path, &children)?;
        Ok((children, convert_stat(&stat), WireWatcher::new(watch, self)))
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
        self.inner
            .session
            .get_ephemerals(prefix)
            .await
            .map_err(convert_error)
    }

    /// The number of descendants of `path` (children, grandchildren, ...; not the node itself).
    pub(crate) async fn get_all_children_number(&self, path: &str) -> Result<usize> {
        let count = self
            .inner
            .session
            .get_all_children_number(path)
            .await
            .map_err(convert_error)?;
        usize::try_from(count)
            .map_err(|_| Error::UnexpectedReply(format!("a negative number of nodes: {count}")))
    }

    pub(crate) async fn get_acl(&self, path: &str) -> Result<(Vec<Acl>, Stat)> {
        let (acl, stat) = self
            .inner
            .session
            .get_acl(path)
            .await
            .map_err(convert_error)?;
        Ok((
            acl.iter().map(from_proto_acl).collect(),
            convert_stat(&stat),
        ))
    }

    pub(crate) async fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> Result<Stat> {
        let stat = self
            .inner
            .session
            .set_acl(path, to_proto_acl(acl), version.unwrap_or(-1))
            .await
            .map_err(convert_error)?;
        Ok(convert_stat(&stat))
    }

    pub(crate) async fn sync(&self, path: &str) -> Result<()> {
        self.inner.session.sync(path).await.map_err(convert_error)
    }

    pub(crate) async fn add_watch(
        self: &Arc<Self>,
        path: &str,
        recursive: bool,
    ) -> Result<WirePersistentWatcher> {
        let mode = if recursive {
            proto::AddWatchMode::PersistentRecursive
        } else {
            proto::AddWatchMode::Persistent
        };
        let watch = self
            .inner
            .session
            .add_watch(path, mode)
            .await
            .map_err(convert_error)?;
        Ok(WirePersistentWatcher {
            watch: Some(watch),
            closed: self.closed.clone(),
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
        let list = |items: &[String]| (!items.is_empty()).then(|| items.join(","));
        let (joining, leaving, members) = match members {
            Some(members) => (None, None, Some(members.join(","))),
            None => (list(joining), list(leaving), None),
        };
        let (data, stat) = self
            .inner
            .session
            .reconfig(joining, leaving, members, from.unwrap_or(-1))
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_config(&self) -> Result<(Vec<u8>, Stat)> {
        let (data, stat) = self
            .inner
            .session
            .get_config()
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat)))
    }

    pub(crate) async fn get_config_watched(&self) -> Result<(Vec<u8>, Stat, WireWatcher)> {
        let ((data, stat), watch) = self
            .inner
            .session
            .get_config_watched()
            .await
            .map_err(convert_error)?;
        Ok((data, convert_stat(&stat), WireWatcher::new(watch, self)))
    }

    /// Sends `reads` as one multi-read request.
    pub(crate) async fn multi_read(&self, reads: &[Read]) -> Result<Vec<ReadResult>> {
        let ops = reads
            .iter()
            .map(|read| match read {
                Read::Data(path) => proto::MultiReadOp::GetData(proto::GetDataRequest {
                    path: path.to_string(),
                    watch: false,
                }),
                Read::Children(path) => {
                    proto::MultiReadOp::GetChildren(proto::GetChildrenRequest {
                        path: path.to_string(),
                        watch: false,
                    })
                }
            })
            .collect();
        let results = self
            .inner
            .session
            .multi_read(ops)
            .await
            .map_err(convert_error)?;
        Ok(results
            .into_iter()
            .enumerate()
            .map(|(index, result)| match result {
                proto::MultiReadResult::GetData(response) => ReadResult::Data {
                    data: response.data,
                    stat: convert_stat(&response.stat),
                },
                proto::MultiReadResult::GetChildren(response) => {
                    // (A result past the reads, which the caller notices by the count, has no path.)
                    let path = reads.get(index).map_or("", Read::path);
                    match self.check_listing(path, &response.children) {
                        Ok(()) => ReadResult::Children {
                            children: response.children,
                        },
                        Err(error) => ReadResult::Error(error),
                    }
                }
                proto::MultiReadResult::Error(code) => ReadResult::Error(code_error(code)),
            })
            .collect())
    }

    /// Commits `steps` atomically; created paths are the server's (namespace included).
    pub(crate) async fn multi(&self, steps: &[Step]) -> Result<Vec<TransactionResult>> {
        let ops = steps
            .iter()
            .map(|step| match step {
                Step::Create {
                    path,
                    data,
                    mode,
                    acl,
                    ttl,
                } => {
                    let request = proto::CreateRequest {
                        path: path.clone(),
                        data: data.clone(),
                        acl: to_proto_acl(acl),
                        mode: proto_mode(*mode),
                    };
                    match (mode, ttl_ms(*mode, *ttl)) {
                        (CreateMode::Container, _) => proto::MultiOp::CreateContainer(request),
                        (_, Some(ttl)) => proto::MultiOp::CreateTtl(proto::CreateTtlRequest {
                            path: request.path,
                            data: request.data,
                            acl: request.acl,
                            mode: request.mode,
                            ttl,
                        }),
                        _ => proto::MultiOp::Create2(request),
                    }
                }
                Step::SetData {
                    path,
                    data,
                    version,
                } => proto::MultiOp::SetData(proto::SetDataRequest {
                    path: path.clone(),
                    data: data.clone(),
                    version: version.unwrap_or(-1),
                }),
                Step::Delete { path, version } => proto::MultiOp::Delete(proto::DeleteRequest {
                    path: path.clone(),
                    version: version.unwrap_or(-1),
                }),
                Step::Check { path, version } => {
                    proto::MultiOp::Check(proto::CheckVersionRequest {
                        path: path.clone(),
                        version: *version,
                    })
                }
            })
            .collect();
        let results = self.inner.session.multi(ops).await.map_err(convert_error)?;
        // A failed transaction: every result is an error, `Ok` before the failing step and
        // `RuntimeInconsistency` after it.
        if let Some((index, code)) =
            results
                .iter()
                .enumerate()
                .find_map(|(index, result)| match result {
                    proto::MultiResult::Error(code)
                        if !matches!(
                            code,
                            proto::ErrorCode::Ok | proto::ErrorCode::RuntimeInconsistency
                        ) =>
                    {
                        Some((index, *code))
                    }
                    _ => None,
                })
        {
            return Err(Error::Transaction {
                index,
                cause: Box::new(code_error(code)),
            });
        }
        results
            .into_iter()
            .map(|result| match result {
                proto::MultiResult::Create(created) => Ok(TransactionResult::Create {
                    path: created.path,
                    stat: None,
                }),
                proto::MultiResult::Create2(created) => Ok(TransactionResult::Create {
                    path: created.path,
                    stat: Some(convert_stat(&created.stat)),
                }),
                proto::MultiResult::SetData(stat) => Ok(TransactionResult::SetData {
                    stat: convert_stat(&stat),
                }),
                proto::MultiResult::Delete => Ok(TransactionResult::Delete),
                proto::MultiResult::Check => Ok(TransactionResult::Check),
                proto::MultiResult::Error(code) => Err(Error::UnexpectedReply(format!(
                    "a transaction step that failed with {code} in a transaction that did not"
                ))),
            })
            .collect()
    }
}

/// A one-shot watch.
#[derive(Debug)]
pub(crate) struct WireWatcher {
    watch: zk::OneshotWatch,
    /// The client closed.
    closed: tokio_util::sync::CancellationToken,
}

impl WireWatcher {
    fn new(watch: zk::OneshotWatch, session: &WireSession) -> Self {
        Self {
            watch,
            closed: session.closed.clone(),
        }
    }

    /// The event; a `Closed` session event as soon as the client closes, even while the
    /// connection is down.
    pub(crate) async fn changed(self) -> WatchedEvent {
        let session_event = |session_state| WatchedEvent {
            event_type: EventType::Session,
            session_state,
            path: String::new(),
            zxid: None,
        };
        tokio::select! {
            biased;
            event = self.watch.changed() => convert_event(event),
            () = self.closed.cancelled() => session_event(KeeperState::Closed),
        }
    }

    pub(crate) async fn remove(self) -> Result<()> {
        self.watch.remove().await.map_err(convert_error)
    }
}

/// A persistent (optionally recursive) watch. The session sets it again by itself on every new
/// connection (setWatches2), so the events go on after a reconnect; `Disconnected` and
/// `SyncConnected` session events mark the gap.
#[derive(Debug)]
pub(crate) struct WirePersistentWatcher {
    /// `None` once ended (a terminal session event was delivered, or the client closed).
    watch: Option<zk::PersistentWatch>,
    /// The client closed: the watch ends.
    closed: tokio_util::sync::CancellationToken,
}

impl WirePersistentWatcher {
    /// The next event, or `None` after the session ended.
    ///
    /// Cancellation safe: the session keeps an event until it is taken.
    pub(crate) async fn next(&mut self) -> Option<WatchedEvent> {
        let watch = self.watch.as_mut()?;
        // The client's close wins over whatever the session delivers as it closes (its own
        // `Closed` event included): after `client.close()` the watch ends, with nothing more.
        let event = tokio::select! {
            biased;
            () = self.closed.cancelled() => None,
            event = watch.next() => event,
        };
        match event {
            Some(event) => {
                let event = convert_event(event);
                if event.event_type == EventType::Session
                    && matches!(
                        event.session_state,
                        KeeperState::Expired | KeeperState::Closed | KeeperState::AuthFailed
                    )
                {
                    self.watch = None;
                }
                Some(event)
            }
            None => {
                self.watch = None;
                None
            }
        }
    }

    pub(crate) async fn remove(mut self) -> Result<()> {
        match self.watch.take() {
            Some(watch) => watch.remove().await.map_err(convert_error),
            None => Ok(()),
        }
    }
}

fn proto_mode(mode: CreateMode) -> proto::CreateMode {
    match mode {
        CreateMode::Persistent => proto::CreateMode::Persistent,
        CreateMode::PersistentSequential => proto::CreateMode::PersistentSequential,
        CreateMode::Ephemeral => proto::CreateMode::Ephemeral,
        CreateMode::EphemeralSequential => proto::CreateMode::EphemeralSequential,
        CreateMode::Container => proto::CreateMode::Container,
        CreateMode::PersistentWithTtl => proto::CreateMode::PersistentWithTtl,
        CreateMode::PersistentSequentialWithTtl => proto::CreateMode::PersistentSequentialWithTtl,
    }
}

/// The TTL in milliseconds, for the TTL modes.
fn ttl_ms(mode: CreateMode, ttl: Option<Duration>) -> Option<i64> {
    match ttl {
        Some(ttl) if mode.is_ttl() => Some(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)),
        _ if mode.is_ttl() => Some(0),
        _ => None,
    }
}

fn to_proto_acl(acl: &[Acl]) -> Vec<proto::Acl> {
    acl.iter()
        .map(|entry| proto::Acl {
            perms: proto::Perms::from_bits(entry.perms.bits()),
            id: proto::Id {
                scheme: entry.scheme.clone(),
                id: entry.id.clone(),
            },
        })
        .collect()
}

fn from_proto_acl(acl: &proto::Acl) -> Acl {
    Acl::new(
        Perms::from_bits(acl.perms.bits()),
        acl.id.scheme.as_str(),
        acl.id.id.as_str(),
    )
}

fn convert_stat(stat: &proto::Stat) -> Stat {
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
        proto::EventType::NodeCreated => EventType::NodeCreated,
        proto::EventType::NodeDeleted => EventType::NodeDeleted,
        proto::EventType::NodeDataChanged => EventType::NodeDataChanged,
        proto::EventType::NodeChildrenChanged => EventType::NodeChildrenChanged,
        _ => EventType::Session,
    };
    let session_state = match event.state {
        proto::KeeperState::ConnectedReadOnly => KeeperState::ConnectedReadOnly,
        proto::KeeperState::Disconnected => KeeperState::Disconnected,
        proto::KeeperState::Expired => KeeperState::Expired,
        proto::KeeperState::Closed => KeeperState::Closed,
        proto::KeeperState::AuthFailed => KeeperState::AuthFailed,
        _ => KeeperState::SyncConnected,
    };
    let zxid = event.zxid.filter(|_| event_type != EventType::Session);
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

fn code_error(code: proto::ErrorCode) -> Error {
    use proto::ErrorCode as C;
    match code {
        C::NoNode => Error::NoNode,
        C::NodeExists => Error::NodeExists,
        C::BadVersion => Error::BadVersion,
        C::NotEmpty => Error::NotEmpty,
        C::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
        C::NoAuth => Error::NoAuth,
        C::InvalidAcl => Error::InvalidAcl,
        C::AuthFailed => Error::AuthFailed,
        C::ConnectionLoss => Error::ConnectionLoss,
        C::OperationTimeout => Error::OperationTimeout,
        C::SessionExpired => Error::SessionExpired,
        C::SessionMoved => Error::SessionMoved,
        C::NotReadOnly => Error::NotReadOnly,
        C::NoWatcher => Error::NoWatcher,
        C::QuotaExceeded => Error::QuotaExceeded,
        C::Throttled => Error::Throttled,
        C::ReconfigDisabled => Error::ReconfigDisabled,
        C::Unimplemented => Error::Unimplemented,
        C::BadArguments => Error::BadArguments,
        C::NewConfigNoQuorum => Error::NewConfigNoQuorum,
        C::ReconfigInProgress => Error::ReconfigInProgress,
        other => Error::Other {
            code: other.code(),
            message: other.to_string(),
        },
    }
}

pub(crate) fn convert_error(error: zk::Error) -> Error {
    match error {
        zk::Error::Server(code) => code_error(code),
        zk::Error::ConnectionLoss => Error::ConnectionLoss,
        zk::Error::SessionExpired => Error::SessionExpired,
        zk::Error::AuthFailed(reason) => {
            tracing::debug!(reason, "authentication failed");
            Error::AuthFailed
        }
        zk::Error::Closed => Error::Closed,
        zk::Error::NoServer(reasons) => {
            tracing::debug!(reasons, "no server accepted the session");
            Error::ConnectionLoss
        }
        zk::Error::UnexpectedReply(reason) => Error::UnexpectedReply(reason),
        zk::Error::Tls(reason) => Error::Tls(TlsFailure::Config { reason }),
        zk::Error::InvalidArgument(reason) => Error::InvalidArgument(reason),
        other => Error::UnexpectedReply(other.to_string()),
    }
}
