//! The session holder: one task per client that makes sessions, follows their state, turns it
//! into [`ConnectionState`] transitions, and makes a new session after a loss.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::client::Inner;
use crate::error::Error;
use crate::state::ConnectionState;
use crate::wire::{WireSession, WireState};

/// How the monitoring of one session ended.
enum Ended {
    /// The session is gone (expired at the server, abandoned after a long suspension, or failed
    /// authentication).
    Lost,
    /// The client is closing.
    Closing,
    /// `inject_session_expiration` asked for the session to end.
    Injected,
}

/// Runs until the client closes. At most one session exists at a time: a session is dropped
/// (and so closed, or abandoned to expire) before the next one is made.
pub(crate) async fn run(inner: Arc<Inner>) {
    crate::metrics::describe();
    let cancel = inner.cancel.clone();
    let mut ever_connected = false;
    let mut failures = 0u32;
    loop {
        // The members of the followed configuration, when there is one to use; otherwise the
        // servers the client was given.
        let connect_string = inner
            .ensemble
            .connect_string()
            .unwrap_or_else(|| inner.settings.ensemble.connect_string());
        let attempt = tokio::select! {
            () = cancel.cancelled() => break,
            result = connect(&inner, &connect_string) => result,
        };
        let session = match attempt {
            Ok(session) => Arc::new(session),
            Err(definitive) => {
                failures = failures.saturating_add(1);
                if let Some(failure) = definitive {
                    inner.report_error("session", format!("cannot connect: {failure}"));
                    inner.connect_failed(failure);
                }
                // Back off a little between full connect attempts (each already waited for the
                // servers up to the session timeout).
                let pause = Duration::from_millis(100).saturating_mul(failures.min(10));
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep(pause) => continue,
                }
            }
        };
        failures = 0;
        crate::metrics::Counters::bump(&inner.counters.sessions);
        crate::metrics::session_established();
        let established = Instant::now();
        let mut watcher = session.state_watcher();
        let read_only = watcher.state() == WireState::ConnectedReadOnly;
        tracing::info!(
            session_id = format_args!("{:#x}", session.session_id()),
            "ZooKeeper session established"
        );
        inner.install_session(Arc::clone(&session));
        inner.publish_state(if read_only {
            ConnectionState::ReadOnly
        } else if ever_connected {
            ConnectionState::Reconnected
        } else {
            ConnectionState::Connected
        });
        ever_connected = true;
        follow_ensemble(&inner, &session);
        let ended = monitor(&inner, &session, &mut watcher).await;
        inner.remove_session();
        crate::metrics::session_ended(established.elapsed());
        match ended {
            Ended::Closing => {
                close_session(session, inner.settings.max_close_wait).await;
                break;
            }
            Ended::Injected => {
                tracing::info!(
                    session_id = format_args!("{:#x}", session.session_id()),
                    "ending the session on request"
                );
                close_session(session, inner.settings.max_close_wait).await;
                inner.publish_state(ConnectionState::Lost);
            }
            Ended::Lost => {
                tracing::warn!(
                    session_id = format_args!("{:#x}", session.session_id()),
                    "ZooKeeper session lost"
                );
                // Given up here: it must not come back on its own (a connection that returns
                // would otherwise take the session up again beside the next one).
                close_session(session, Duration::ZERO).await;
                inner.publish_state(ConnectionState::Lost);
            }
        }
    }
}

/// Follows the ensemble's configuration through `session` (a client task), when tracking is on:
/// reads it with a watch, hands each new one to the tracker, and reads again when the watch
/// fires. Ends with the session (lost or closed) or when the server has no configuration.
fn follow_ensemble(inner: &Arc<Inner>, session: &Arc<WireSession>) {
    if !inner.ensemble.follow {
        return;
    }
    let (inner_task, session) = (Arc::clone(inner), Arc::downgrade(session));
    let cancel = inner.cancel.clone();
    inner.tasks.spawn(async move {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {}
            () = follow_config(&inner_task, session) => {}
        }
    });
}

async fn follow_config(inner: &Inner, session: std::sync::Weak<WireSession>) {
    loop {
        // Weak between reads, so following never keeps a session open.
        let Some(current) = session.upgrade() else {
            return;
        };
        if current.state().is_terminal() {
            return;
        }
        match current.get_config_watched().await {
            Ok((data, _stat, watcher)) => {
                match crate::ensemble::EnsembleConfig::parse(&String::from_utf8_lossy(&data)) {
                    // A standalone server has no configuration to follow.
                    Ok(config) if config.members.is_empty() => return,
                    Ok(config) => {
                        // The session takes the members before anyone hears of them.
                        inner
                            .ensemble
                            .update_then(config, || use_members(inner, &current));
                    }
                    Err(error) => {
                        inner.report_error("ensemble tracking", error.to_string());
                        return;
                    }
                }
                drop(current);
                let event = watcher.changed().await;
                if event.event_type == crate::types::EventType::Session {
                    // The session ended; the next one follows anew.
                    return;
                }
            }
            Err(error) if error.is_retryable() => {
                // Wait for the connection to come back (or the session to end), then read again.
                let mut state = current.state_watcher();
                drop(current);
                loop {
                    match state.changed().await {
                        WireState::Connected | WireState::ConnectedReadOnly => break,
                        s if s.is_terminal() => return,
                        _ => {}
                    }
                }
            }
            Err(error) => {
                tracing::debug!(%error, "not following the ensemble configuration");
                return;
            }
        }
    }
}

/// Gives the session the members of the followed configuration as its server list (when the
/// client uses the configuration for connecting): it rebalances, and fails over among them.
fn use_members(inner: &Inner, session: &WireSession) {
    let Some(members) = inner.ensemble.connect_string() else {
        return;
    };
    match session.update_server_list(&members) {
        Ok(true) => tracing::info!(%members, "new ensemble members: this session moves"),
        Ok(false) => tracing::debug!(%members, "new ensemble members: this session stays"),
        Err(error) => tracing::warn!(%error, %members, "could not take the ensemble's members"),
    }
}

/// Follows one session until it is lost or the client closes.
async fn monitor(
    inner: &Inner,
    session: &WireSession,
    watcher: &mut crate::wire::WireStateWatcher,
) -> Ended {
    let cancel = &inner.cancel;
    let percent = u32::from(inner.settings.simulated_expiration_percent);
    let lost_after = (percent > 0).then(|| session.negotiated_timeout() * percent / 100);
    let mut suspended_at: Option<Instant> = None;
    // A configuration learned by an earlier session: this one takes it too.
    use_members(inner, session);
    loop {
        let deadline = suspended_at.zip(lost_after).map(|(at, after)| at + after);
        tokio::select! {
            () = cancel.cancelled() => return Ended::Closing,
            () = inner.inject_expiry.notified() => {
                if suspended_at.is_none() {
                    inner.set_connected(false);
                    inner.publish_state(ConnectionState::Suspended);
                }
                return Ended::Injected;
            }
            () = sleep_until(deadline) => {
                tracing::warn!("suspended for the session timeout; abandoning the session");
                return Ended::Lost;
            }
            state = watcher.changed() => match state {
                WireState::Connected | WireState::ConnectedReadOnly => {
                    let read_only = state == WireState::ConnectedReadOnly;
                    inner.set_connected(true);
                    if read_only {
                        inner.publish_state(ConnectionState::ReadOnly);
                    } else if suspended_at.take().is_some() || inner.last_state() == Some(ConnectionState::ReadOnly) {
                        inner.publish_state(ConnectionState::Reconnected);
                    }
                    suspended_at = None;
                }
                WireState::Disconnected => {
                    if suspended_at.is_none() {
                        suspended_at = Some(Instant::now());
                        inner.set_connected(false);
                        inner.publish_state(ConnectionState::Suspended);
                    }
                }
                WireState::Expired | WireState::Closed => {
                    if suspended_at.is_none() {
                        inner.set_connected(false);
                        inner.publish_state(ConnectionState::Suspended);
                    }
                    return Ended::Lost;
                }
                WireState::AuthFailed => {
                    inner.report_error("session", "authentication failed".into());
                    if suspended_at.is_none() {
                        inner.set_connected(false);
                        inner.publish_state(ConnectionState::Suspended);
                    }
                    return Ended::Lost;
                }
            },
        }
    }
}

/// One attempt at a new session: the session, or the error no retry can fix (`None` when a
/// retry may).
async fn connect(inner: &Inner, connect_string: &str) -> Result<WireSession, Option<Error>> {
    #[cfg(feature = "kerberos")]
    if let Some(crate::security::SaslConfig {
        kind:
            crate::security::SaslKind::Kerberos {
                principal: Some(principal),
                ..
            },
    }) = &inner.connect_settings.sasl
    {
        // Before the server is asked: a login as someone else must not happen at all.
        crate::security::check_kerberos_principal(principal.clone())
            .await
            .map_err(Some)?;
    }
    match WireSession::connect(&inner.connect_settings, connect_string).await {
        Ok(session) => match check_identity(inner, &session).await {
            Ok(()) => Ok(session),
            // Dropping the session closes it: nothing may run on a session that is not the
            // one asked for.
            Err(error) => Err(Some(error)),
        },
        Err(error) => {
            tracing::warn!(%error, connect_string, "could not establish a ZooKeeper session");
            Err(why_not(inner, connect_string, &error).await)
        }
    }
}

/// With SASL configured, the server must know the new session by a `sasl:` identity (the user's
/// name for DIGEST-MD5): a server without SASL makes an anonymous session instead, and the wire
/// client says nothing. Asked with `whoAmI`; a server too old for it (before 3.7) is trusted.
/// A connection error while asking is not a verdict: the session is kept, as without SASL.
async fn check_identity(inner: &Inner, session: &WireSession) -> Result<(), Error> {
    let Some(sasl) = &inner.connect_settings.sasl else {
        return Ok(());
    };
    let user = match &sasl.kind {
        crate::security::SaslKind::DigestMd5 { user, .. } => Some(user.as_str()),
        #[cfg(feature = "kerberos")]
        crate::security::SaslKind::Kerberos { .. } => None,
    };
    let identities = match session.who_am_i().await {
        Ok(identities) => identities,
        Err(Error::Unimplemented) => return Ok(()),
        Err(error) => {
            tracing::debug!(%error, "could not ask the server for this session's identities");
            return Ok(());
        }
    };
    let granted = identities
        .iter()
        .any(|identity| identity.scheme == "sasl" && user.is_none_or(|user| identity.id == user));
    if granted {
        return Ok(());
    }
    let error = Error::IdentityNotGranted {
        requested: format!("sasl:{}", user.unwrap_or_default()),
        granted: identities.iter().map(ToString::to_string).collect(),
    };
    tracing::warn!(%error, "closing a session without the requested identity");
    Err(error)
}

/// Why a connection attempt that ended in `error` failed, when retrying cannot fix it: a
/// refused login, a Kerberos login that cannot start, a TLS handshake that failed on a
/// certificate with every server that could be reached, or (without TLS settings) servers that
/// speak only TLS.
async fn why_not(inner: &Inner, connect_string: &str, error: &Error) -> Option<Error> {
    let servers = crate::ensemble::servers(connect_string);
    #[cfg(feature = "kerberos")]
    if let Some(crate::security::SaslConfig {
        kind: crate::security::SaslKind::Kerberos { service, host, .. },
    }) = &inner.connect_settings.sasl
    {
        let hosts = servers.iter().map(|(host, _)| host.clone()).collect();
        if let Some(failure) =
            crate::security::diagnose_kerberos(service.clone(), host.clone(), hosts).await
        {
            return Some(failure);
        }
    }
    // (After Kerberos, whose refusal the diagnosis above explains better.)
    if matches!(error, Error::AuthFailed | Error::IdentityNotGranted { .. }) {
        return Some(error.clone());
    }
    // A custom connector's transport is its own (an in-memory pipe, a simulated network): a
    // probe over real TCP would say nothing about it, and in a simulation it would read the
    // real network and the wall clock.
    if inner.connect_settings.connector.is_some() {
        return None;
    }
    let timeout = inner.settings.connection_timeout;
    match inner.connect_settings.tls.as_ref() {
        Some(tls) => crate::security::diagnose(tls.loaded(), servers, timeout).await,
        // Cheap and short: most failed passes of a plaintext client are servers that are down.
        None => {
            crate::security::diagnose_plaintext(servers, timeout.min(Duration::from_secs(1))).await
        }
    }
    .map(Error::Tls)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Closes the session (whoever else still holds it: an operation in flight fails with `Closed`),
/// waiting up to `wait` for the server's answer, so the session's ephemeral nodes are gone when
/// this returns; without a connection it returns at once and the session expires at the server.
async fn close_session(session: Arc<WireSession>, wait: Duration) {
    if session.state().is_terminal() {
        return;
    }
    session.close(wait).await;
}
