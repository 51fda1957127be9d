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
    let cancel = inner.cancel.clone();
    let mut ever_connected = false;
    let mut failures = 0u32;
    loop {
        let connect_string = inner.settings.ensemble.connect_string();
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

        let ended = monitor(&inner, &session, &mut watcher).await;
        inner.remove_session();
        match ended {
            Ended::Closing => {
                close_session(session, watcher, inner.settings.max_close_wait).await;
                break;
            }
            Ended::Injected => {
                tracing::info!(
                    session_id = format_args!("{:#x}", session.session_id()),
                    "ending the session on request"
                );
                close_session(session, watcher, inner.settings.max_close_wait).await;
                inner.publish_state(ConnectionState::Lost);
            }
            Ended::Lost => {
                tracing::warn!(
                    session_id = format_args!("{:#x}", session.session_id()),
                    "ZooKeeper session lost"
                );
                drop(session);
                inner.publish_state(ConnectionState::Lost);
            }
        }
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
        Ok(session) => Ok(session),
        Err(error) => {
            tracing::warn!(%error, connect_string, "could not establish a ZooKeeper session");
            Err(why_not(inner, connect_string, &error).await)
        }
    }
}

/// Why a connection attempt that ended in `error` failed, when retrying cannot fix it: a
/// refused login, a Kerberos login that cannot start, a TLS handshake that failed on a
/// certificate with every server that could be reached, or (without TLS settings) servers that
/// speak only TLS.
async fn why_not(inner: &Inner, connect_string: &str, error: &Error) -> Option<Error> {
    if *error == Error::AuthFailed {
        return Some(Error::AuthFailed);
    }
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

/// Drops the client's handle on the session, which closes it once no operation holds it any
/// more, and waits (bounded) until the wire client reports it closed, so the session's ephemeral
/// nodes are gone when `close()` returns.
async fn close_session(
    session: Arc<WireSession>,
    mut watcher: crate::wire::WireStateWatcher,
    wait: Duration,
) {
    let already_gone = session.state().is_terminal();
    drop(session);
    if already_gone {
        return;
    }
    let closed = async {
        loop {
            if watcher.state().is_terminal() {
                return;
            }
            watcher.changed().await;
        }
    };
    if tokio::time::timeout(wait, closed).await.is_err() {
        tracing::debug!(?wait, "session not confirmed closed within max_close_wait");
    }
}
