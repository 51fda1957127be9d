//! The only module that names a wire crate. Two layers stand behind it while the framework
//! moves to its own: `native` on curator-session (the default), and `legacy` on
//! `zookeeper-client` (built with `RUSTFLAGS="--cfg curator_legacy_wire"`). Both hand out the
//! framework's own types through the same items, so nothing else in the framework knows which
//! one runs.

#[cfg(curator_legacy_wire)]
#[allow(
    dead_code,
    reason = "the session holder no longer moves sessions this layer's way"
)]
mod legacy;
#[cfg(curator_legacy_wire)]
pub(crate) use legacy::*;

#[cfg(not(curator_legacy_wire))]
mod native;
#[cfg(not(curator_legacy_wire))]
pub(crate) use native::*;
