//! SASL GSSAPI (Kerberos): not built yet.

use crate::sasl::{Mechanism, Step};

pub(crate) struct Gssapi;

impl Gssapi {
    pub(crate) fn new(_service: &str, _host: &str) -> Result<Self, String> {
        Err("GSSAPI is not supported by this build".into())
    }
}

impl Mechanism for Gssapi {
    fn start(&mut self) -> Result<Vec<u8>, String> {
        Err("GSSAPI is not supported by this build".into())
    }

    fn step(&mut self, _challenge: &[u8]) -> Result<Step, String> {
        Err("GSSAPI is not supported by this build".into())
    }
}
