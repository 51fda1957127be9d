//! Without the `compression` feature: data is sent and read as it is.

use crate::error::Result;

/// No compression settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings;

impl Settings {
    /// Never.
    pub(crate) fn enabled(&self) -> bool {
        false
    }

    /// The data, as it is.
    pub(crate) fn outgoing(
        &self,
        _path: &str,
        data: Vec<u8>,
        _ask: Option<bool>,
    ) -> Result<Vec<u8>> {
        Ok(data)
    }

    /// Never decompresses.
    pub(crate) fn inflate(&self, _path: &str, _ask: Option<bool>) -> Option<Inflate> {
        None
    }
}

/// Never made.
#[derive(Debug)]
pub(crate) enum Inflate {}

impl Inflate {
    pub(crate) fn apply(self, _data: &[u8]) -> Result<Vec<u8>> {
        match self {}
    }
}
