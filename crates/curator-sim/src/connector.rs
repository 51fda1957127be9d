//! The framework's connections on turmoil's simulated network.

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use curator_framework::transport::{BoxTransport, Connector, ServerAddress};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Connects to servers over turmoil's simulated TCP: a host name of the connect string is a
/// simulated host's name. Give it to
/// [`CuratorFrameworkBuilder::connector`](curator_framework::CuratorFrameworkBuilder::connector)
/// of a client that runs inside a simulation ([`SimClient::builder`](crate::SimClient::builder)
/// does, with connections that [`SimFaults::cut`](crate::SimFaults::cut) can break).
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

/// The cuts of one simulation: for each client host, how many times its connections were cut,
/// and the tasks waiting on those connections.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cuts {
    hosts: Arc<Mutex<BTreeMap<String, Arc<Mutex<Cut>>>>>,
}

#[derive(Debug, Default)]
struct Cut {
    generation: u64,
    waiting: Vec<Waker>,
}

impl Cuts {
    fn host(&self, host: &str) -> Arc<Mutex<Cut>> {
        Arc::clone(self.hosts.lock().entry(host.to_owned()).or_default())
    }

    /// Breaks every connection `host` has now: its reads and writes fail (the server sees the
    /// connection close); connections made later work.
    pub(crate) fn cut(&self, host: &str) {
        let cut = self.host(host);
        let waiting = {
            let mut cut = cut.lock();
            cut.generation += 1;
            std::mem::take(&mut cut.waiting)
        };
        for waker in waiting {
            waker.wake();
        }
    }
}

/// A [`TurmoilConnector`] whose connections of one host can be cut.
#[derive(Debug, Clone)]
pub(crate) struct CuttableConnector {
    pub(crate) host: String,
    pub(crate) cuts: Cuts,
}

impl Connector for CuttableConnector {
    fn connect<'a>(&'a self, server: &'a ServerAddress) -> BoxFuture<'a, io::Result<BoxTransport>> {
        Box::pin(async move {
            let cut = self.cuts.host(&self.host);
            let generation = cut.lock().generation;
            let stream =
                turmoil::net::TcpStream::connect((server.host.as_str(), server.port)).await?;
            Ok(Box::new(Cuttable {
                stream: Some(stream),
                generation,
                cut,
            }) as BoxTransport)
        })
    }
}

/// A simulated connection that fails once its host's connections are cut (and drops its
/// stream then, so the server sees it close).
struct Cuttable {
    stream: Option<turmoil::net::TcpStream>,
    generation: u64,
    cut: Arc<Mutex<Cut>>,
}

impl Cuttable {
    fn live(&mut self, cx: &Context<'_>) -> io::Result<Pin<&mut turmoil::net::TcpStream>> {
        if self.stream.is_some() {
            let mut cut = self.cut.lock();
            if cut.generation != self.generation {
                drop(cut);
                self.stream = None;
            } else if !cut.waiting.iter().any(|waker| waker.will_wake(cx.waker())) {
                cut.waiting.push(cx.waker().clone());
            }
        }
        match self.stream.as_mut() {
            Some(stream) => Ok(Pin::new(stream)),
            None => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the simulation cut this connection",
            )),
        }
    }
}

impl AsyncRead for Cuttable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.live(cx) {
            Ok(stream) => stream.poll_read(cx, buf),
            Err(error) => Poll::Ready(Err(error)),
        }
    }
}

impl AsyncWrite for Cuttable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.live(cx) {
            Ok(stream) => stream.poll_write(cx, buf),
            Err(error) => Poll::Ready(Err(error)),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.live(cx) {
            Ok(stream) => stream.poll_flush(cx),
            Err(error) => Poll::Ready(Err(error)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream.as_mut() {
            Some(stream) => Pin::new(stream).poll_shutdown(cx),
            None => Poll::Ready(Ok(())),
        }
    }
}
