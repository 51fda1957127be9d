//! Custom connections: what a [`Connector`] given to
//! [`CuratorFrameworkBuilder::connector`](crate::CuratorFrameworkBuilder::connector) works with.
//! A connector makes a byte stream ([`Transport`]: any `AsyncRead + AsyncWrite`) to one server
//! ([`ServerAddress`]: a host name and a port from the connect string), at every connection
//! attempt.
//!
//! ```
//! use curator_framework::transport::ServerAddress;
//! fn describe(server: &ServerAddress) -> String {
//!     format!("{}:{}", server.host, server.port)
//! }
//! # let _ = describe;
//! ```

pub use crate::wire::{BoxTransport, Connector, ServerAddress, Transport};
