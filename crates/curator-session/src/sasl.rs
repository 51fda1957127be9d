//! SASL logins: run on every new connection, right after the handshake and before any other
//! request (ZooKeeper's `sasl` requests, opcode 102: the client sends a token, the server
//! answers with its challenge, until the mechanism is done).
//!
//! Two mechanisms, as ZooKeeper servers offer them:
//! - **DIGEST-MD5** (RFC 2831) with `qop=auth`, written here on the `md-5` crate: no maintained
//!   Rust SASL crate ships it (`rsasl` has none). The server's answer to our response
//!   (`rspauth`) is checked, so a server that does not know the password cannot pass for one
//!   that does.
//! - **GSSAPI** (Kerberos, feature `gssapi`) through MIT Kerberos with `libgssapi` (RFC 4752;
//!   see `gssapi.rs`). Its steps may block on the KDC, so they run on Tokio's blocking pool.
//!
//! A server that refuses the login answers with `AuthFailed` (`SessionClosedRequireSaslAuth`
//! when it requires SASL), and a mechanism that cannot go on (a wrong `rspauth`, no Kerberos
//! credentials, a service the KDC does not know) fails it here: either way the session ends with
//! [`SessionState::AuthFailed`](crate::SessionState::AuthFailed) and
//! [`Error::AuthFailed`] naming why.

use std::fmt;

use bytes::BytesMut;
use curator_wire::codec::{ClientCodec, ServerFrame};
use curator_wire::proto::{ErrorCode, GetSaslRequest, OpCode, Request, Response};
use futures::StreamExt;
use md5::{Digest, Md5};
use tokio::io::{AsyncWriteExt, ReadHalf, WriteHalf};
use tokio_util::codec::FramedRead;

use crate::config::ServerAddress;
use crate::error::Error;
use crate::session::{ConnectError, SessionState, Shared, put_request};
use crate::transport::BoxTransport;

/// A SASL login.
///
/// ```
/// use curator_session::Sasl;
///
/// let login = Sasl::digest_md5("bob", "secret");
/// assert!(format!("{login:?}").contains("bob"));
/// assert!(!format!("{login:?}").contains("secret"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Sasl {
    /// DIGEST-MD5 with a user name and password (the server's JAAS `user_<name>` entries).
    DigestMd5 {
        /// The user.
        user: String,
        /// The password.
        password: String,
        /// The service name in the digest URI (ZooKeeper's `zookeeper`).
        service: String,
        /// The server name in the digest URI (ZooKeeper's `zk-sasl-md5`).
        host: String,
    },
    /// GSSAPI (Kerberos) with the credentials in the process's ticket cache or keytab.
    #[cfg(feature = "gssapi")]
    Gssapi {
        /// The server's service name (ZooKeeper's `zookeeper`).
        service: String,
        /// The server's host name in its principal; the connected server's host when `None`.
        host: Option<String>,
    },
}

impl fmt::Debug for Sasl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sasl::DigestMd5 {
                user,
                service,
                host,
                ..
            } => f
                .debug_struct("DigestMd5")
                .field("user", user)
                .field("service", service)
                .field("host", host)
                .finish_non_exhaustive(),
            #[cfg(feature = "gssapi")]
            Sasl::Gssapi { service, host } => f
                .debug_struct("Gssapi")
                .field("service", service)
                .field("host", host)
                .finish(),
        }
    }
}

impl Sasl {
    /// The mechanism's SASL name.
    pub fn mechanism_name(&self) -> &'static str {
        match self {
            Sasl::DigestMd5 { .. } => "DIGEST-MD5",
            #[cfg(feature = "gssapi")]
            Sasl::Gssapi { .. } => "GSSAPI",
        }
    }

    /// DIGEST-MD5 as ZooKeeper servers expect it (digest URI `zookeeper/zk-sasl-md5`).
    pub fn digest_md5(user: impl Into<String>, password: impl Into<String>) -> Self {
        Sasl::DigestMd5 {
            user: user.into(),
            password: password.into(),
            service: "zookeeper".into(),
            host: "zk-sasl-md5".into(),
        }
    }

    /// GSSAPI with service `service` (ZooKeeper's `zookeeper`) at `host` (the connected
    /// server's host name when `None`).
    #[cfg(feature = "gssapi")]
    pub fn gssapi(service: impl Into<String>, host: Option<String>) -> Self {
        Sasl::Gssapi {
            service: service.into(),
            host,
        }
    }

    fn mechanism(&self, server: &ServerAddress) -> Result<Box<dyn Mechanism>, String> {
        let mechanism: Box<dyn Mechanism> = match self {
            Sasl::DigestMd5 {
                user,
                password,
                service,
                host,
            } => Box::new(DigestMd5::new(
                user.clone(),
                password.clone(),
                format!("{service}/{host}"),
            )),
            #[cfg(feature = "gssapi")]
            Sasl::Gssapi { service, host } => {
                let host = host.clone().unwrap_or_else(|| server.host.clone());
                Box::new(crate::gssapi::Gssapi::new(service, &host)?)
            }
        };
        let _ = server;
        Ok(mechanism)
    }
}

/// What a mechanism does with a challenge.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send this token and wait for the next challenge.
    Send(Vec<u8>),
    /// The login is done on this side; nothing more is sent.
    Done,
}

/// A client-side SASL mechanism.
pub(crate) trait Mechanism: Send {
    /// The first token (empty for mechanisms without an initial response).
    fn start(&mut self) -> Result<Vec<u8>, String>;
    /// The answer to the server's `challenge`.
    fn step(&mut self, challenge: &[u8]) -> Result<Step, String>;
    /// Whether `start` and `step` may block (GSSAPI asks a KDC for tickets): they then run on
    /// Tokio's blocking pool, so neither the runtime nor the connection's timeout waits on them.
    fn blocks(&self) -> bool {
        false
    }
}

/// Runs `call` on `mechanism`, on the blocking pool when the mechanism blocks.
async fn run<T: Send + 'static>(
    mechanism: &mut Option<Box<dyn Mechanism>>,
    call: impl FnOnce(&mut dyn Mechanism) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let mut owned = mechanism.take().ok_or("the login ended")?;
    if !owned.blocks() {
        let result = call(owned.as_mut());
        *mechanism = Some(owned);
        return result;
    }
    let (owned, result) = tokio::task::spawn_blocking(move || {
        let result = call(owned.as_mut());
        (owned, result)
    })
    .await
    .map_err(|error| format!("the mechanism's task failed: {error}"))?;
    *mechanism = Some(owned);
    result
}

/// Runs the login on a fresh connection.
pub(crate) async fn exchange(
    shared: &Shared,
    sasl: &Sasl,
    server: &ServerAddress,
    reader: &mut FramedRead<ReadHalf<BoxTransport>, ClientCodec>,
    writer: &mut WriteHalf<BoxTransport>,
) -> Result<(), ConnectError> {
    let failed = |why: String| {
        ConnectError::Terminal(
            SessionState::AuthFailed,
            Error::AuthFailed(format!("SASL: {why}")),
        )
    };
    let retry = |why: String| ConnectError::Retry(format!("SASL: {why}"));
    let mut mechanism = Some(sasl.mechanism(server).map_err(failed)?);
    let mut token = run(&mut mechanism, |m| m.start()).await.map_err(failed)?;
    let mut first = true;
    loop {
        let xid = shared.core.lock().next_xid();
        let mut out = BytesMut::new();
        put_request(&mut out, xid, &Request::Sasl(GetSaslRequest { token }));
        // Flushed: a transport may hold written bytes until then (`AsyncWrite`'s contract),
        // and the server's answer is awaited next.
        let sent = async {
            writer.write_all(&out).await?;
            writer.flush().await
        };
        sent.await.map_err(|error| retry(error.to_string()))?;
        let reply = match reader.next().await {
            Some(Ok(ServerFrame::Reply(reply))) if reply.header.xid == xid => reply,
            Some(Ok(_)) => return Err(retry("an unexpected frame during the login".into())),
            Some(Err(error)) => return Err(retry(error.to_string())),
            None => {
                return Err(retry(
                    "the server closed the connection during the login".into(),
                ));
            }
        };
        let challenge = match reply.decode(OpCode::Sasl) {
            Ok(Ok(Response::Sasl(response))) => response.token,
            Ok(Ok(_)) => return Err(retry("not a SASL answer".into())),
            // A server that requires SASL (`enforceAuth`, `requireClientAuthScheme=sasl`) says
            // so instead of AuthFailed, and closes the session.
            Ok(Err(ErrorCode::AuthFailed | ErrorCode::SessionClosedRequireSaslAuth)) => {
                return Err(failed("the server refused the login".into()));
            }
            Ok(Err(code)) => return Err(retry(format!("the server answered {code}"))),
            Err(error) => return Err(retry(error.to_string())),
        };
        if std::mem::take(&mut first) && challenge.is_empty() {
            // A server without SASL answers the login with nothing (its SASL server is
            // missing) and would go on with an anonymous session.
            return Err(ConnectError::Terminal(
                SessionState::AuthFailed,
                Error::SaslUnavailable(format!(
                    "{server} answered the {} login with nothing: SASL is not enabled on it, or on that port",
                    sasl.mechanism_name()
                )),
            ));
        }
        match run(&mut mechanism, move |m| m.step(&challenge))
            .await
            .map_err(failed)?
        {
            Step::Send(next) => token = next,
            Step::Done => return Ok(()),
        }
    }
}

/// DIGEST-MD5 (RFC 2831), `qop=auth`, client side.
struct DigestMd5 {
    user: String,
    password: String,
    digest_uri: String,
    cnonce: String,
    /// The value `rspauth` must have, once the response was sent.
    expected: Option<String>,
}

impl DigestMd5 {
    fn new(user: String, password: String, digest_uri: String) -> Self {
        use rand::Rng as _;
        let cnonce: [u8; 16] = rand::rng().random();
        Self {
            user,
            password,
            digest_uri,
            cnonce: hex::encode(cnonce),
            expected: None,
        }
    }
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut hasher = Md5::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

impl Mechanism for DigestMd5 {
    fn start(&mut self) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Step, String> {
        let text = std::str::from_utf8(challenge)
            .map_err(|_| "the server's challenge is not UTF-8".to_owned())?;
        let fields = parse_directives(text)?;
        let field = |name: &str| {
            fields
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.as_str())
        };
        if let Some(expected) = &self.expected {
            // The server's proof that it knows the password.
            let rspauth = field("rspauth").ok_or("the server's last answer has no rspauth")?;
            if rspauth != expected {
                return Err("the server's rspauth is wrong (it does not know the password)".into());
            }
            return Ok(Step::Done);
        }
        let nonce = field("nonce").ok_or("the challenge has no nonce")?;
        let realm = field("realm").unwrap_or_default();
        if let Some(qop) = field("qop") {
            if !qop.split(',').any(|q| q.trim() == "auth") {
                return Err(format!("the server offers qop {qop:?}, not auth"));
            }
        }
        if let Some(algorithm) = field("algorithm") {
            if algorithm != "md5-sess" {
                return Err(format!("unknown algorithm {algorithm:?}"));
            }
        }
        let nc = "00000001";
        let secret = md5(&[
            self.user.as_bytes(),
            b":",
            realm.as_bytes(),
            b":",
            self.password.as_bytes(),
        ]);
        let a1 = md5(&[
            &secret,
            b":",
            nonce.as_bytes(),
            b":",
            self.cnonce.as_bytes(),
        ]);
        let ha1 = hex::encode(a1);
        let proof = |a2: &str| {
            let ha2 = hex::encode(md5(&[a2.as_bytes()]));
            hex::encode(md5(&[
                ha1.as_bytes(),
                b":",
                nonce.as_bytes(),
                b":",
                nc.as_bytes(),
                b":",
                self.cnonce.as_bytes(),
                b":auth:",
                ha2.as_bytes(),
            ]))
        };
        let response = proof(&format!("AUTHENTICATE:{}", self.digest_uri));
        self.expected = Some(proof(&format!(":{}", self.digest_uri)));
        let quote = |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"");
        let answer = format!(
            "charset=utf-8,username=\"{}\",realm=\"{}\",nonce=\"{}\",nc={nc},cnonce=\"{}\",\
             digest-uri=\"{}\",maxbuf=65536,response={response},qop=auth",
            quote(&self.user),
            quote(realm),
            quote(nonce),
            self.cnonce,
            quote(&self.digest_uri),
        );
        Ok(Step::Send(answer.into_bytes()))
    }
}

/// `key=value` or `key="quoted value"` pairs, comma separated (RFC 2831's directives).
fn parse_directives(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut fields = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("a directive without '=' in {text:?}"))?;
        let key = key.trim().trim_start_matches(',').trim().to_owned();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((at, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = Some(at + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let end = end.ok_or_else(|| format!("an unclosed quote in {text:?}"))?;
            (value, &quoted[end..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_owned(), &after[end..])
        };
        fields.push((key, value));
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_with_quotes_and_escapes() {
        let fields = parse_directives(
            r#"realm="zk-sasl-md5",nonce="a\"b,c",charset=utf-8,algorithm=md5-sess"#,
        )
        .unwrap();
        assert_eq!(
            fields,
            [
                ("realm".into(), "zk-sasl-md5".into()),
                ("nonce".into(), "a\"b,c".into()),
                ("charset".into(), "utf-8".into()),
                ("algorithm".into(), "md5-sess".into()),
            ]
        );
        assert!(parse_directives(r#"nonce="open"#).is_err());
        assert!(parse_directives("novalue").is_err());
    }

    /// RFC 2831's example (section 4): user chris, password secret, realm elwood.innosoft.com,
    /// digest-uri imap/elwood.innosoft.com. (The RFC prints rspauth as ...dbabcdfca3; its
    /// errata and every implementation compute ...dbabcdfffd.)
    #[test]
    fn the_rfc_example() {
        let mut mechanism = DigestMd5::new(
            "chris".into(),
            "secret".into(),
            "imap/elwood.innosoft.com".into(),
        );
        mechanism.cnonce = "OA6MHXh6VqTrRk".into();
        assert_eq!(mechanism.start().unwrap(), b"");
        let challenge = br#"realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8"#;
        let Step::Send(response) = mechanism.step(challenge).unwrap() else {
            panic!("a response is sent");
        };
        let response = String::from_utf8(response).unwrap();
        assert!(
            response.contains("response=d388dad90d4bbd760a152321f2143af7"),
            "{response}"
        );
        assert_eq!(
            mechanism
                .step(b"rspauth=ea40f60335c427b5527b84dbabcdfffd")
                .unwrap(),
            Step::Done
        );
    }

    #[test]
    fn a_wrong_rspauth_is_refused() {
        let mut mechanism = DigestMd5::new("u".into(), "p".into(), "zookeeper/zk-sasl-md5".into());
        let _ = mechanism.step(br#"realm="r",nonce="n""#).unwrap();
        assert!(mechanism.step(b"rspauth=00").is_err());
        let mut fresh = DigestMd5::new("u".into(), "p".into(), "x/y".into());
        assert!(
            fresh
                .step(br#"realm="r",nonce="n",qop="auth-conf""#)
                .is_err()
        );
        assert!(fresh.step(br#"realm="r""#).is_err());
    }
}
