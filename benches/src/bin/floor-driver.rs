//! The floors of the side-by-side benchmark: clients that speak ZooKeeper's protocol directly
//! (curator-wire's records and framing, `TCP_NODELAY`, a session of 30 s of its own for each
//! run, no pings: a run is far shorter than the session), with nothing else on top, so every
//! Rust row can be read as a distance to them.
//!
//! - `blocking`: a std `TcpStream`, no async runtime and no thread besides the main one. Each
//!   request is written and its reply read before the next; pipelined requests are written
//!   together, then their replies read. The physical limit of a client on this machine.
//! - `tokio`: a minimal Tokio client (the runtime `bench-driver` runs on: two workers): one
//!   connection, a reader task and a writer task, each caller awaiting its reply through a
//!   oneshot channel, replies matched to requests in order. The limit of any client shaped like
//!   curator-session.
//!
//! Usage: `floor-driver blocking|tokio <host:port>` (`--help` says more). It speaks
//! `bench-driver`'s line protocol and does the same work with the same measurement for
//! `get_data`, `create_delete` (create2, as curator-session sends it, then delete) and
//! `pipelined_get_data` (1,000 in flight, each latency from its own send); every other scenario
//! is answered `err unsupported`, which the harness shows as "n/a".

use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::BytesMut;
use curator_wire::codec::{ClientCodec, ClientFrame, ReplyFrame, RequestFrame, ServerFrame};
use curator_wire::proto::{
    Acl, ConnectRequest, ConnectResponse, CreateMode, CreateRequest, DeleteRequest, GetDataRequest,
    Id, NOTIFICATION_XID, OpCode, PING_XID, Perms, Request, Response,
};
use futures::future::join_all;
use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite};

/// What a floor's session asks for: longer than any one run, so no ping is needed (each run
/// has a session of its own).
const SESSION_TIMEOUT_MS: i32 = 30_000;
/// As `bench-driver`: the data of `create_delete`'s nodes and the requests in flight at a time
/// in `pipelined_get_data`.
const PAYLOAD: &[u8] = b"x";
const IN_FLIGHT: usize = 1000;

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// `world:anyone` with every permission, as the other drivers create their nodes.
fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

fn get_data(path: &str) -> Request {
    Request::GetData(GetDataRequest {
        path: path.to_owned(),
        watch: false,
    })
}

fn create(path: String) -> Request {
    Request::Create2(CreateRequest {
        path,
        data: PAYLOAD.to_vec(),
        acl: open_acl(),
        mode: CreateMode::Persistent,
    })
}

fn delete(path: String) -> Request {
    Request::Delete(DeleteRequest { path, version: -1 })
}

/// Reads a reply's body as the answer to `op`: the work every client does with a reply.
fn read_reply(reply: &ReplyFrame, op: OpCode) -> Result<Response, String> {
    match reply.decode(op) {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(code)) => Err(format!("{op:?}: {code}")),
        Err(error) => Err(format!("{op:?}: {error}")),
    }
}

/// Whether a reply answers no request (a notification or a ping's answer).
fn answers_nothing(reply: &ReplyFrame) -> bool {
    matches!(reply.header.xid, NOTIFICATION_XID | PING_XID)
}

/// The first server of a connect string (`host:port[,host:port...][/chroot]`): a floor talks
/// to one server and knows no chroot.
fn first_server(connect: &str) -> Result<std::net::SocketAddr, String> {
    if connect.contains('/') {
        return Err(format!("{connect}: a floor driver takes no chroot"));
    }
    let server = connect.split(',').next().unwrap_or(connect);
    server
        .to_socket_addrs()
        .map_err(|e| format!("{server}: {e}"))?
        .next()
        .ok_or_else(|| format!("{server}: no address"))
}

fn check_session(connected: &ConnectResponse) -> Result<(), String> {
    if connected.session_id == 0 || connected.timeout <= 0 {
        return Err(format!(
            "the server refused the session (timeout {} ms)",
            connected.timeout
        ));
    }
    Ok(())
}

/// The blocking floor: one `TcpStream`, the calling thread.
struct Blocking {
    stream: TcpStream,
    codec: ClientCodec,
    /// Bytes read and not decoded yet.
    input: BytesMut,
    /// Frames encoded and not written yet.
    output: BytesMut,
    /// What one `read` fills.
    chunk: Vec<u8>,
    next_xid: i32,
}

impl Blocking {
    fn connect(connect: &str) -> Result<Blocking, String> {
        let server = first_server(connect)?;
        let stream = TcpStream::connect(server).map_err(|e| format!("{server}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut floor = Blocking {
            stream,
            codec: ClientCodec::new(),
            input: BytesMut::with_capacity(64 * 1024),
            output: BytesMut::with_capacity(64 * 1024),
            chunk: vec![0; 64 * 1024],
            next_xid: 1,
        };
        let hello = ConnectRequest::new_session(SESSION_TIMEOUT_MS, false);
        floor
            .codec
            .encode(ClientFrame::Connect(hello), &mut floor.output)
            .map_err(|e| e.to_string())?;
        floor.flush()?;
        match floor.next_frame()? {
            ServerFrame::Connected(connected) => check_session(&connected)?,
            ServerFrame::Reply(reply) => {
                return Err(format!("a reply before the handshake: {:?}", reply.header));
            }
        }
        Ok(floor)
    }

    /// Encodes `request` for the next [`flush`](Self::flush); returns its xid.
    fn queue(&mut self, request: &Request) -> Result<i32, String> {
        let xid = self.next_xid;
        self.next_xid += 1;
        let frame = ClientFrame::Request(RequestFrame::new(xid, request));
        self.codec
            .encode(frame, &mut self.output)
            .map_err(|e| e.to_string())?;
        Ok(xid)
    }

    /// Writes every frame queued, in one `write_all`.
    fn flush(&mut self) -> Result<(), String> {
        self.stream
            .write_all(&self.output)
            .map_err(|e| format!("writing: {e}"))?;
        self.output.clear();
        Ok(())
    }

    fn next_frame(&mut self) -> Result<ServerFrame, String> {
        loop {
            if let Some(frame) = self
                .codec
                .decode(&mut self.input)
                .map_err(|e| e.to_string())?
            {
                return Ok(frame);
            }
            let n = self
                .stream
                .read(&mut self.chunk)
                .map_err(|e| format!("reading: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            self.input.extend_from_slice(&self.chunk[..n]);
        }
    }

    /// Reads the reply to the request `xid` (the oldest one waiting) as the answer to `op`.
    fn reply(&mut self, xid: i32, op: OpCode) -> Result<Response, String> {
        loop {
            let ServerFrame::Reply(reply) = self.next_frame()? else {
                return Err("a second handshake answer".into());
            };
            if answers_nothing(&reply) {
                continue;
            }
            if reply.header.xid != xid {
                return Err(format!(
                    "reply to xid {} while {xid} waits",
                    reply.header.xid
                ));
            }
            return read_reply(&reply, op);
        }
    }

    fn call(&mut self, request: &Request) -> Result<Response, String> {
        let xid = self.queue(request)?;
        self.flush()?;
        self.reply(xid, request.op_code())
    }

    fn run(&mut self, scenario: &str, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        match scenario {
            "get_data" => {
                let request = get_data(path);
                for slot in latencies.iter_mut() {
                    let t = Instant::now();
                    self.call(&request)?;
                    *slot = elapsed_ns(t);
                }
            }
            "create_delete" => {
                for (i, slot) in latencies.iter_mut().enumerate() {
                    let t = Instant::now();
                    let node = format!("{path}/n{i}");
                    self.call(&create(node.clone()))?;
                    self.call(&delete(node))?;
                    *slot = elapsed_ns(t);
                }
            }
            "pipelined_get_data" => {
                let request = get_data(path);
                for chunk in latencies.chunks_mut(IN_FLIGHT) {
                    // Each latency runs from its request's encoding to its reply's decoding.
                    let mut sent = Vec::with_capacity(chunk.len());
                    for _ in 0..chunk.len() {
                        let issued = Instant::now();
                        sent.push((self.queue(&request)?, issued));
                    }
                    self.flush()?;
                    for (slot, (xid, issued)) in chunk.iter_mut().zip(sent) {
                        self.reply(xid, OpCode::GetData)?;
                        *slot = elapsed_ns(issued);
                    }
                }
            }
            _ => return Err("unsupported".into()),
        }
        Ok(())
    }
}

/// The requests sent and not answered yet, oldest first, with their callers.
/// The callers waiting for replies, oldest first; `None` once the connection is gone.
type Pending = Option<VecDeque<(i32, oneshot::Sender<ReplyFrame>)>>;

/// The Tokio floor: a cheap handle on one connection served by a reader and a writer task.
#[derive(Clone)]
struct TokioFloor {
    shared: Arc<Mutex<Sending>>,
}

/// What a caller takes, under one lock, so that requests are written in the order they are
/// queued as pending.
struct Sending {
    next_xid: i32,
    pending: Arc<Mutex<Pending>>,
    writer: mpsc::UnboundedSender<RequestFrame>,
}

impl TokioFloor {
    async fn connect(connect: &str) -> Result<TokioFloor, String> {
        let server = first_server(connect)?;
        let stream = tokio::net::TcpStream::connect(server)
            .await
            .map_err(|e| format!("{server}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (read_half, write_half) = stream.into_split();
        let mut writer = FramedWrite::new(write_half, ClientCodec::new());
        let mut reader = FramedRead::new(read_half, ClientCodec::new());
        let hello = ConnectRequest::new_session(SESSION_TIMEOUT_MS, false);
        writer
            .send(ClientFrame::Connect(hello))
            .await
            .map_err(|e| e.to_string())?;
        match reader.next().await {
            Some(Ok(ServerFrame::Connected(connected))) => check_session(&connected)?,
            Some(Ok(ServerFrame::Reply(reply))) => {
                return Err(format!("a reply before the handshake: {:?}", reply.header));
            }
            Some(Err(error)) => return Err(error.to_string()),
            None => return Err("the server closed the connection".into()),
        }
        let pending: Arc<Mutex<Pending>> = Arc::new(Mutex::new(Some(VecDeque::new())));
        let (to_writer, mut requests) = mpsc::unbounded_channel::<RequestFrame>();
        tokio::spawn(async move {
            // Writes what is queued, several frames per write when several wait.
            while let Some(frame) = requests.recv().await {
                let mut result = writer.feed(ClientFrame::Request(frame)).await;
                while let (Ok(()), Ok(frame)) = (&result, requests.try_recv()) {
                    result = writer.feed(ClientFrame::Request(frame)).await;
                }
                if let Err(error) = result.and(writer.flush().await) {
                    eprintln!("floor-driver: writing: {error}");
                    break;
                }
            }
        });
        let answered = Arc::clone(&pending);
        tokio::spawn(async move {
            while let Some(frame) = reader.next().await {
                let reply = match frame {
                    Ok(ServerFrame::Reply(reply)) if answers_nothing(&reply) => continue,
                    Ok(ServerFrame::Reply(reply)) => reply,
                    Ok(ServerFrame::Connected(_)) => {
                        eprintln!("floor-driver: a second handshake answer");
                        break;
                    }
                    Err(error) => {
                        eprintln!("floor-driver: reading: {error}");
                        break;
                    }
                };
                let oldest = answered
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .as_mut()
                    .and_then(VecDeque::pop_front);
                match oldest {
                    Some((xid, caller)) if xid == reply.header.xid => {
                        let _ = caller.send(reply);
                    }
                    _ => {
                        eprintln!(
                            "floor-driver: reply to xid {} answers nothing waiting",
                            reply.header.xid
                        );
                        break;
                    }
                }
            }
            // Every caller still waiting, and every later one, hears that the connection is gone.
            answered
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
        });
        Ok(TokioFloor {
            shared: Arc::new(Mutex::new(Sending {
                next_xid: 1,
                pending,
                writer: to_writer,
            })),
        })
    }

    /// Sends `request` now; the future is its reply's body.
    fn call(
        &self,
        request: &Request,
    ) -> impl Future<Output = Result<Response, String>> + Send + 'static + use<> {
        let op = request.op_code();
        let mut frame = RequestFrame::new(0, request);
        let (caller, reply) = oneshot::channel();
        let mut return_gone = false;
        let sent = {
            let mut sending = self
                .shared
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let xid = sending.next_xid;
            sending.next_xid += 1;
            frame.header.xid = xid;
            match sending
                .pending
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_mut()
            {
                Some(pending) => pending.push_back((xid, caller)),
                None => return_gone = true,
            }
            !return_gone && sending.writer.send(frame).is_ok()
        };
        async move {
            if !sent {
                return Err("the connection is gone".to_owned());
            }
            let reply = reply
                .await
                .map_err(|_| "the connection is gone".to_owned())?;
            read_reply(&reply, op)
        }
    }

    async fn run(&self, scenario: &str, path: &str, latencies: &mut [u64]) -> Result<(), String> {
        match scenario {
            "get_data" => {
                let request = get_data(path);
                for slot in latencies.iter_mut() {
                    let t = Instant::now();
                    self.call(&request).await?;
                    *slot = elapsed_ns(t);
                }
            }
            "create_delete" => {
                for (i, slot) in latencies.iter_mut().enumerate() {
                    let t = Instant::now();
                    let node = format!("{path}/n{i}");
                    self.call(&create(node.clone())).await?;
                    self.call(&delete(node)).await?;
                    *slot = elapsed_ns(t);
                }
            }
            "pipelined_get_data" => {
                let request = get_data(path);
                for chunk in latencies.chunks_mut(IN_FLIGHT) {
                    let futures: Vec<_> = chunk
                        .iter()
                        .map(|_| {
                            let issued = Instant::now();
                            let reply = self.call(&request);
                            async move { reply.await.map(|_| elapsed_ns(issued)) }
                        })
                        .collect();
                    for (slot, result) in chunk.iter_mut().zip(join_all(futures).await) {
                        *slot = result?;
                    }
                }
            }
            _ => return Err("unsupported".into()),
        }
        Ok(())
    }
}

/// A floor of the side-by-side benchmark: a client that speaks ZooKeeper's protocol directly
/// (TCP_NODELAY, a 30 s session, no pings). Prints `ready`, then answers each line
/// `run <scenario> <ops> <path>` on stdin with `ok <elapsed-ns> <latency-ns,...>` (or
/// `err <message>`) for get_data, create_delete and pipelined_get_data (any other scenario:
/// `err unsupported`); `quit` ends it.
#[derive(Debug, clap::Parser)]
#[command(name = "floor-driver")]
struct Args {
    /// Which floor.
    #[arg(value_enum)]
    kind: Kind,
    /// The server (host:port; the first of a list).
    connect: String,
}

/// The floors.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Kind {
    /// std's TcpStream on the main thread: no runtime, no other thread.
    Blocking,
    /// A Tokio runtime of two workers, a reader and a writer task, oneshot replies.
    Tokio,
}

/// Answers the requests on stdin with `run` (scenario, path, ops → one value per op), timing
/// each whole request as `bench-driver` does. Each request runs on a session of its own, made
/// by `connect` before the clock starts: a floor sends no pings, so a session kept across the
/// other drivers' turns could expire while idle.
fn serve<F>(
    mut connect: impl FnMut() -> Result<F, String>,
    mut run: impl FnMut(&mut F, &str, &str, usize) -> Result<Vec<u64>, String>,
) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            ["quit"] | [] => break,
            ["run", scenario, ops, path] => match ops.parse::<usize>() {
                Ok(ops) => match connect() {
                    Err(error) => format!("err connecting: {error}"),
                    Ok(mut floor) => {
                        let start = Instant::now();
                        match run(&mut floor, scenario, path, ops) {
                            Ok(latencies) => {
                                let elapsed = elapsed_ns(start);
                                let list: Vec<String> =
                                    latencies.iter().map(u64::to_string).collect();
                                format!("ok {elapsed} {}", list.join(","))
                            }
                            Err(error) => format!("err {error}"),
                        }
                    }
                },
                Err(_) => format!("err bad op count {ops}"),
            },
            _ => format!("err unknown command {line:?}"),
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let failed = |error: String| -> ! {
        eprintln!("floor-driver: connecting to {}: {error}", args.connect);
        std::process::exit(1);
    };
    match args.kind {
        Kind::Blocking => {
            // The server must answer before `ready`.
            drop(Blocking::connect(&args.connect).unwrap_or_else(|e| failed(e)));
            serve(
                || Blocking::connect(&args.connect),
                |floor, scenario, path, ops| {
                    let mut latencies = vec![0u64; ops];
                    floor
                        .run(scenario, path, &mut latencies)
                        .map(|()| latencies)
                },
            );
        }
        Kind::Tokio => {
            // As bench-driver: two workers, each request run in a task of its own (as a
            // service's handlers run) rather than on the main thread inside `block_on`.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|e| failed(e.to_string()));
            // The server must answer before `ready`.
            drop(
                runtime
                    .block_on(TokioFloor::connect(&args.connect))
                    .unwrap_or_else(|e| failed(e)),
            );
            serve(
                || runtime.block_on(TokioFloor::connect(&args.connect)),
                |floor, scenario, path, ops| {
                    let (floor, scenario, path) =
                        (floor.clone(), scenario.to_owned(), path.to_owned());
                    runtime.block_on(async move {
                        tokio::spawn(async move {
                            let mut latencies = vec![0u64; ops];
                            floor
                                .run(&scenario, &path, &mut latencies)
                                .await
                                .map(|()| latencies)
                        })
                        .await
                        .unwrap_or_else(|e| Err(e.to_string()))
                    })
                },
            );
        }
    }
}
