#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod config;
pub mod entropy;
mod error;
#[cfg(feature = "gssapi")]
mod gssapi;
mod hosts;
mod ops;
mod sasl;
mod session;
mod transport;
mod watch;

pub use config::{ConnectString, DEFAULT_PORT, ServerAddress, SessionConfig};
pub use error::{Error, Result};
pub use ops::open_acl;
pub use sasl::Sasl;
pub use session::{Session, SessionState, StateChanges};
pub use transport::{BoxTransport, Connector, TcpConnector, TlsConnector, Transport};
pub use watch::{OneshotWatch, PersistentWatch, WatchedEvent};

/// The protocol's records and codes, as this crate takes and returns them.
pub use curator_wire::proto;
