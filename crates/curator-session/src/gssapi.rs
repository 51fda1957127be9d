//! SASL GSSAPI (Kerberos V5, RFC 4752), client side, as ZooKeeper's server (Java's GSSAPI
//! `SaslServer`) runs it.
//!
//! # The exchange
//! 1. **Context establishment.** The client names the server `service@host` as a host-based
//!    service (`GSS_C_NT_HOSTBASED_SERVICE`; Kerberos makes it `service/host@REALM`), asks for
//!    mutual authentication and sends the first context token (the Kerberos AP-REQ, built from a
//!    service ticket the library gets from the KDC with the process's ticket-granting ticket).
//!    The server answers with its token (the AP-REP), which proves it holds the service's key;
//!    the context is then complete here, and, having no token left, the client sends an empty
//!    one (as Java's client does) to ask for the next step.
//! 2. **Security-layer negotiation.** The server sends a wrapped 4-byte message: the layers it
//!    offers (a bit mask; 1 = none) and the largest message it takes. The client unwraps it,
//!    checks that "no security layer" is offered, and answers with a wrapped (integrity only,
//!    not encrypted) 4-byte message: layer 1 and a maximum size of 0 (RFC 4752 requires 0 when
//!    no layer is chosen), with no authorization id, so the server authorizes the authenticated
//!    principal itself (ZooKeeper makes it the session's `sasl` identity).
//! 3. **Done.** The server's last answer is empty; the login is over.
//!
//! ZooKeeper only ever authenticates with SASL: the connection stays plain after the login
//! (TLS, when wanted, comes from the connector), so no security layer is ever chosen.
//!
//! # Why `libgssapi`
//! Kerberos belongs to the system: the realm's configuration (`/etc/krb5.conf` or
//! `KRB5_CONFIG`), the ticket cache `kinit` fills (`KRB5CCNAME`), client keytabs
//! (`KRB5_CLIENT_KTNAME`), DNS canonicalization rules, and the administrator's tools all belong
//! to the installed Kerberos library. A Kerberos client written in Rust would have to read all
//! of those the same way and still talk to the KDC; `libgssapi` is a thin safe binding to the
//! system's GSS-API (MIT Kerberos here), so a login behaves exactly as `kinit`, `kvno` and
//! every other Kerberos program on the machine. It exposes exactly the calls RFC 4752 needs
//! (`init_sec_context`, `wrap`, `unwrap`, the context's flags), and the workspace already
//! uses it (curator-framework's diagnosis of failed logins). `rsasl`'s GSSAPI mechanism is
//! itself built on `libgssapi`, behind a SASL framework (mechanism registry, callbacks,
//! negotiation) that one fixed exchange does not need.
//!
//! # Blocking
//! GSS-API calls block: the first step may ask the KDC for a service ticket over the network,
//! and naming a host may resolve it. The login therefore runs the mechanism on Tokio's blocking
//! pool ([`Mechanism::blocks`]), so a slow KDC holds neither the runtime nor the session's
//! timers: the connection attempt's timeout still ends a login that does not finish.

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, OidSet};

use crate::sasl::{Mechanism, Step};

/// The security-layer bit for "no security layer" (RFC 4752, section 3.3).
const NO_SECURITY_LAYER: u8 = 1;

/// Where the exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// Context tokens are being exchanged.
    Establishing,
    /// The context is complete; the server's wrapped security-layer offer comes next.
    Negotiating,
    /// Our choice was sent; the server's (empty) last answer comes next.
    Finishing,
    /// The login is over (or failed): nothing more may happen.
    Over,
}

/// The GSSAPI mechanism for one login (one connection).
pub(crate) struct Gssapi {
    /// `service@host`, for messages.
    target: String,
    name: Option<Name>,
    context: Option<ClientCtx>,
    phase: Phase,
}

impl std::fmt::Debug for Gssapi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gssapi")
            .field("target", &self.target)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl Gssapi {
    /// A login to the service `service` on `host` (`zookeeper` and the server's host name: the
    /// server's principal is then `zookeeper/<host>@REALM`).
    ///
    /// # Errors
    /// A message when the name cannot be a GSS-API host-based service name.
    pub(crate) fn new(service: &str, host: &str) -> Result<Self, String> {
        if service.is_empty() || host.is_empty() {
            return Err(format!(
                "the service {service:?} on host {host:?}: neither may be empty"
            ));
        }
        let target = format!("{service}@{host}");
        let name = Name::new(target.as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE))
            .map_err(|error| format!("the service name {target}: {error}"))?;
        Ok(Self {
            target,
            name: Some(name),
            context: None,
            phase: Phase::Start,
        })
    }

    fn fail(&mut self, why: String) -> String {
        self.phase = Phase::Over;
        self.context = None;
        why
    }

    /// The next context step; `Send(token)` for the server (empty when the context completed
    /// with no token left, as Java's client sends).
    fn establish(&mut self, challenge: Option<&[u8]>) -> Result<Step, String> {
        let context = self.context.as_mut().ok_or("no GSS-API context")?;
        let token = context.step(challenge, None).map_err(|error| {
            format!("the Kerberos context with {} failed: {error}", self.target)
        })?;
        if context.is_complete() {
            // The server must have proved who it is: the point of asking for mutual
            // authentication.
            let flags = context
                .flags()
                .map_err(|error| format!("the context's flags: {error}"))?;
            if !flags.contains(CtxFlags::GSS_C_MUTUAL_FLAG) {
                return Err(format!(
                    "{} did not authenticate itself (no mutual authentication)",
                    self.target
                ));
            }
            self.phase = Phase::Negotiating;
        } else {
            self.phase = Phase::Establishing;
            if token.is_none() {
                return Err("the context needs another step but gave no token".into());
            }
        }
        Ok(Step::Send(token.map(|t| t.to_vec()).unwrap_or_default()))
    }

    /// Answers the server's security-layer offer: no layer, no maximum size, no authorization
    /// id.
    fn negotiate(&mut self, challenge: &[u8]) -> Result<Step, String> {
        let context = self.context.as_mut().ok_or("no GSS-API context")?;
        let offer = context
            .unwrap(challenge)
            .map_err(|error| format!("the server's security-layer offer: {error}"))?;
        let offer: &[u8] = &offer;
        if offer.len() != 4 {
            return Err(format!(
                "the server's security-layer offer has {} bytes, not 4",
                offer.len()
            ));
        }
        // The server's maximum size follows in the next three bytes; with no layer it does
        // not matter (Java's server sends its buffer size even when it offers no layer, so it
        // is not checked to be 0 as RFC 4752 would have it).
        if offer[0] & NO_SECURITY_LAYER == 0 {
            return Err(format!(
                "the server requires a security layer (offer {:#04x}); ZooKeeper clients use none",
                offer[0]
            ));
        }
        let choice = [NO_SECURITY_LAYER, 0, 0, 0];
        let wrapped = context
            .wrap(false, &choice)
            .map_err(|error| format!("wrapping the security-layer choice: {error}"))?;
        self.phase = Phase::Finishing;
        Ok(Step::Send(wrapped.to_vec()))
    }
}

impl Mechanism for Gssapi {
    fn start(&mut self) -> Result<Vec<u8>, String> {
        if self.phase != Phase::Start {
            return Err(self.fail("the login was already started".into()));
        }
        let name = self.name.take().ok_or("no service name")?;
        let credentials = (|| {
            let mut mechanisms = OidSet::new()?;
            mechanisms.add(&GSS_MECH_KRB5)?;
            Cred::acquire(None, None, CredUsage::Initiate, Some(&mechanisms))
        })()
        .map_err(|error| {
            self.fail(format!(
                "no Kerberos credentials for this process (kinit, KRB5CCNAME or \
                 KRB5_CLIENT_KTNAME): {error}"
            ))
        })?;
        self.context = Some(ClientCtx::new(
            Some(credentials),
            name,
            CtxFlags::GSS_C_MUTUAL_FLAG,
            Some(&GSS_MECH_KRB5),
        ));
        match self.establish(None) {
            Ok(Step::Send(token)) if !token.is_empty() => Ok(token),
            Ok(_) => Err(self.fail("the Kerberos context gave no first token".into())),
            Err(why) => Err(self.fail(why)),
        }
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Step, String> {
        let result = match self.phase {
            Phase::Establishing => self.establish(Some(challenge)),
            Phase::Negotiating => self.negotiate(challenge),
            Phase::Finishing if challenge.is_empty() => {
                self.phase = Phase::Over;
                Ok(Step::Done)
            }
            Phase::Finishing => Err(format!(
                "the server sent {} bytes after the negotiation ended",
                challenge.len()
            )),
            Phase::Start | Phase::Over => Err("a challenge outside the login".into()),
        };
        result.map_err(|why| self.fail(why))
    }

    fn blocks(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_host_based_services() {
        let login = Gssapi::new("zookeeper", "zk1.example.com").unwrap();
        assert_eq!(login.target, "zookeeper@zk1.example.com");
        assert!(format!("{login:?}").contains("zookeeper@zk1.example.com"));
        assert!(Gssapi::new("", "zk1").is_err());
        assert!(Gssapi::new("zookeeper", "").is_err());
    }

    #[test]
    fn challenges_outside_the_login_are_refused() {
        let mut login = Gssapi::new("zookeeper", "localhost").unwrap();
        assert!(login.step(b"").is_err(), "nothing was sent yet");
        assert!(login.start().is_err(), "a failed login cannot start again");
    }
}
