//! The framework's connections on turmoil's simulated network.

use std::io;

use curator_framework::transport::{BoxTransport, Connector, ServerAddress};
use futures::future::BoxFuture;

/// Connects to servers over turmoil's simulated TCP: a host name of the connect string is a
/// simulated host's name. Give it to
/// [`CuratorFrameworkBuilder::connector`](curator_framework::CuratorFrameworkBuilder::connector)
/// of a client that runs inside a simulation ([`SimClient::builder`](crate::SimClient::builder)
/// does).
///
/// ```
/// use std::sync::Arc;
/// let client = curator_framework::CuratorFramework::builder()
///     .connect_string("zk:2181")
///     .connector(Arc::new(curator_sim::TurmoilConnector))
///     .build()
///     .unwrap();
/// # drop(client);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TurmoilConnector;

impl Connector for TurmoilConnector {
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let stream =
                turmoil::net::TcpStream::connect((server.host.as_str(), server.port)).await?;
            Ok(Box::new(stream) as BoxTransport)
        })
    }
}
