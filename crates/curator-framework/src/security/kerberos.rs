//! Why a Kerberos login cannot start. The wire client reports a GSSAPI failure on its side (no
//! credentials, an unknown service principal, no KDC) only as a failed connection, so after a
//! failed pass the session holder asks GSSAPI here, the way the login would: default
//! credentials, then a first context step towards `<service>@<host>`.

use libgssapi::context::{ClientCtx, CtxFlags};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, OidSet};

use crate::error::Error;

/// [`Error::SaslLogin`] when GSSAPI cannot make a first token for any of `hosts` (the
/// connect string's hosts, or the configured one), `None` when it can for some host.
pub(crate) async fn diagnose(
    service: String,
    host: Option<String>,
    hosts: Vec<String>,
) -> Option<Error> {
    tokio::task::spawn_blocking(move || {
        let targets = match host {
            Some(host) => vec![host],
            None => hosts,
        };
        let mut failure = None;
        for target in targets {
            match first_token(&service, &target) {
                Ok(()) => return None,
                Err(reason) => {
                    failure.get_or_insert(reason);
                }
            }
        }
        failure.map(|reason| Error::SaslLogin {
            mechanism: "GSSAPI".into(),
            reason,
        })
    })
    .await
    .unwrap_or(None)
}

/// `Ok` when the process's default Kerberos credentials are `expected`'s (`name@REALM`, or a
/// bare `name` matching any realm).
pub(crate) async fn check_principal(expected: String) -> Result<(), Error> {
    tokio::task::spawn_blocking(move || {
        let failure = |reason: String| Error::SaslLogin {
            mechanism: "GSSAPI".into(),
            reason,
        };
        let mut mechanisms = OidSet::new().map_err(|e| failure(e.to_string()))?;
        mechanisms
            .add(&GSS_MECH_KRB5)
            .map_err(|e| failure(e.to_string()))?;
        let credentials = Cred::acquire(None, None, CredUsage::Initiate, Some(&mechanisms))
            .map_err(|e| failure(format!("no Kerberos credentials for this process: {e}")))?;
        let actual = credentials
            .name()
            .map_err(|e| failure(format!("the credentials' principal: {e}")))?
            .to_string();
        let matches = if expected.contains('@') {
            actual == expected
        } else {
            actual.split('@').next() == Some(expected.as_str())
        };
        if matches {
            Ok(())
        } else {
            Err(failure(format!(
                "this process's Kerberos credentials are {actual}'s, not {expected}'s"
            )))
        }
    })
    .await
    .unwrap_or_else(|e| {
        Err(Error::SaslLogin {
            mechanism: "GSSAPI".into(),
            reason: e.to_string(),
        })
    })
}

fn first_token(service: &str, host: &str) -> Result<(), String> {
    let mut mechanisms = OidSet::new().map_err(|e| e.to_string())?;
    mechanisms.add(&GSS_MECH_KRB5).map_err(|e| e.to_string())?;
    let credentials = Cred::acquire(None, None, CredUsage::Initiate, Some(&mechanisms))
        .map_err(|e| format!("no Kerberos credentials for this process: {e}"))?;
    let principal = format!("{service}@{host}");
    let target = Name::new(principal.as_bytes(), Some(&GSS_NT_HOSTBASED_SERVICE))
        .map_err(|e| format!("the service name {principal}: {e}"))?;
    let mut context = ClientCtx::new(
        Some(credentials),
        target,
        CtxFlags::GSS_C_MUTUAL_FLAG,
        Some(&GSS_MECH_KRB5),
    );
    context
        .step(None, None)
        .map(drop)
        .map_err(|e| format!("no ticket for the service {service}/{host}: {e}"))
}
