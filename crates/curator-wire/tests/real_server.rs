//! The codec and records against a real ZooKeeper: a plain TCP connection, the client codec,
//! and requests written by hand (no session engine). Each reply is decoded and checked against
//! what the server must have done.

use std::collections::VecDeque;

use curator_test::{TestingServer, Timing, unique_root};
use curator_wire::codec::{ClientCodec, ClientFrame, ReplyFrame, RequestFrame, ServerFrame};
use curator_wire::proto::{
    Acl, AddWatchMode, AddWatchRequest, AuthPacket, CONFIG_NODE, CheckVersionRequest,
    ConnectRequest, ConnectResponse, CreateMode, CreateRequest, CreateTtlRequest, DeleteRequest,
    ErrorCode, EventType, ExistsRequest, GetAclRequest, GetAllChildrenNumberRequest,
    GetChildrenRequest, GetDataRequest, GetEphemeralsRequest, KeeperState, MultiOp, MultiReadOp,
    MultiReadRequest, MultiReadResult, MultiRequest, MultiResult, OpCode, PING_XID, Perms,
    ReconfigRequest, RemoveWatchesRequest, ReplyHeader, Request, Response, SetAclRequest,
    SetDataRequest, SetWatches, SetWatches2, Stat, SyncRequest, WatcherEvent, WatcherType,
};
use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

/// One connection, driven by hand.
struct Wire {
    framed: Framed<TcpStream, ClientCodec>,
    next_xid: i32,
    /// Notifications read while waiting for a reply, in arrival order.
    events: VecDeque<(ReplyHeader, WatcherEvent)>,
    session: ConnectResponse,
    timing: Timing,
}

impl Wire {
    async fn connect(server: &TestingServer) -> Wire {
        let timing = Timing::new();
        let stream = TcpStream::connect(server.connect_string()).await.unwrap();
        let mut framed = Framed::new(stream, ClientCodec::new());
        let timeout_ms = i32::try_from(timing.session_timeout().as_millis()).unwrap();
        framed
            .send(ClientFrame::Connect(ConnectRequest::new_session(
                timeout_ms, false,
            )))
            .await
            .unwrap();
        let frame = tokio::time::timeout(timing.wait(), framed.next())
            .await
            .expect("no ConnectResponse in time")
            .expect("the server closed the connection")
            .unwrap();
        let ServerFrame::Connected(session) = frame else {
            panic!("{frame:?}")
        };
        Wire {
            framed,
            next_xid: 0,
            events: VecDeque::new(),
            session,
            timing,
        }
    }

    async fn next_reply(&mut self) -> ReplyFrame {
        let frame = tokio::time::timeout(self.timing.wait(), self.framed.next())
            .await
            .expect("no frame in time")
            .expect("the server closed the connection")
            .unwrap();
        match frame {
            ServerFrame::Reply(reply) => reply,
            other => panic!("{other:?}"),
        }
    }

    /// Sends `request` with `xid` and returns the reply's header and outcome, keeping the
    /// notifications that arrive first.
    async fn call_with_xid(
        &mut self,
        xid: i32,
        request: Request,
    ) -> (ReplyHeader, Result<Response, ErrorCode>) {
        let op = request.op_code();
        self.framed
            .send(ClientFrame::Request(RequestFrame::new(xid, &request)))
            .await
            .unwrap();
        loop {
            let reply = self.next_reply().await;
            if reply.header.is_notification() {
                let event = reply.decode_event().unwrap();
                self.events.push_back((reply.header, event));
                continue;
            }
            assert_eq!(reply.header.xid, xid, "replies come back in order");
            return (reply.header, reply.decode(op).unwrap());
        }
    }

    async fn call(&mut self, request: Request) -> (ReplyHeader, Result<Response, ErrorCode>) {
        self.next_xid += 1;
        self.call_with_xid(self.next_xid, request).await
    }

    async fn ok(&mut self, request: Request) -> Response {
        let described = format!("{request:?}");
        match self.call(request).await {
            (_, Ok(response)) => response,
            (_, Err(code)) => panic!("{described} failed with {code}"),
        }
    }

    async fn fails(&mut self, request: Request) -> ErrorCode {
        let described = format!("{request:?}");
        match self.call(request).await {
            (_, Err(code)) => code,
            (_, Ok(response)) => panic!("{described} succeeded: {response:?}"),
        }
    }

    /// A unique root for one test (its parent made if missing); not yet created.
    async fn unique_root(&mut self, name: &str) -> String {
        let root = unique_root(name);
        let parent = root.rsplit_once('/').unwrap().0.to_owned();
        match self
            .call(Request::Create(create(
                &parent,
                b"",
                CreateMode::Persistent,
            )))
            .await
        {
            (_, Ok(_) | Err(ErrorCode::NodeExists)) => root,
            (_, Err(code)) => panic!("creating {parent}: {code}"),
        }
    }

    /// The notifications kept, without the NodeChildrenChanged of `parent` that servers before
    /// 3.9 also send to recursive watchers.
    fn take_events(&mut self, parent: &str) -> Vec<(ReplyHeader, WatcherEvent)> {
        self.events
            .drain(..)
            .filter(|(_, event)| {
                !(event.event_type == EventType::NodeChildrenChanged && event.path == parent)
            })
            .collect()
    }

    /// The next notification (read now if none is kept).
    async fn event(&mut self) -> (ReplyHeader, WatcherEvent) {
        if let Some(event) = self.events.pop_front() {
            return event;
        }
        let reply = self.next_reply().await;
        assert!(reply.header.is_notification(), "{reply:?}");
        (reply.header, reply.decode_event().unwrap())
    }
}

fn create(path: &str, data: &[u8], mode: CreateMode) -> CreateRequest {
    CreateRequest {
        path: path.to_owned(),
        data: data.to_vec(),
        acl: Acl::open_unsafe(),
        mode,
    }
}

fn stat_of(response: Response) -> Stat {
    match response {
        Response::Stat(stat) => stat,
        other => panic!("{other:?}"),
    }
}

fn create2_of(response: Response) -> (String, Stat) {
    match response {
        Response::Create2(created) => (created.path, created.stat),
        other => panic!("{other:?}"),
    }
}

/// A notification's zxid: -1 from servers before 3.9, the change's zxid from 3.9 on.
fn assert_notification_zxid(header: &ReplyHeader, change_zxid: i64) {
    assert_eq!(header.err, ErrorCode::Ok);
    match header.notification_zxid() {
        None => assert_eq!(header.zxid, -1),
        Some(zxid) => assert_eq!(zxid, change_zxid),
    }
}

#[tokio::test]
async fn requests_and_replies_of_every_kind_decode() {
    let server = TestingServer::start().await.unwrap();
    let mut wire = Wire::connect(&server).await;

    // The handshake.
    assert!(wire.session.timeout > 0);
    assert_ne!(wire.session.session_id, 0);
    assert_eq!(wire.session.passwd.len(), 16);
    assert_eq!(wire.session.read_only, Some(false));
    let session_id = wire.session.session_id;

    let root = wire.unique_root("wire-ops").await;

    // create2: path, stat, and the reply's zxid is the create's.
    let (header, created) = wire
        .call(Request::Create2(create(
            &root,
            b"root",
            CreateMode::Persistent,
        )))
        .await;
    let (path, stat) = create2_of(created.unwrap());
    assert_eq!(path, root);
    assert!(stat.czxid > 0);
    assert_eq!(header.zxid, stat.czxid);
    assert_eq!((stat.mzxid, stat.pzxid), (stat.czxid, stat.czxid));
    assert_eq!((stat.version, stat.cversion, stat.aversion), (0, 0, 0));
    assert_eq!((stat.data_length, stat.num_children), (4, 0));
    assert_eq!(stat.ephemeral_owner, 0);
    assert!(stat.ctime > 0 && stat.ctime == stat.mtime);

    // create (path only), and NodeExists.
    let a = format!("{root}/a");
    let created = wire
        .ok(Request::Create(create(&a, b"one", CreateMode::Persistent)))
        .await;
    assert_eq!(
        created,
        Response::Create(curator_wire::proto::CreateResponse { path: a.clone() })
    );
    let code = wire
        .fails(Request::Create2(create(&a, b"", CreateMode::Persistent)))
        .await;
    assert_eq!(code, ErrorCode::NodeExists);

    // An ephemeral sequential node: a 10-digit suffix and this session as owner.
    let (ephemeral, stat) = create2_of(
        wire.ok(Request::Create2(create(
            &format!("{root}/e-"),
            b"",
            CreateMode::EphemeralSequential,
        )))
        .await,
    );
    let suffix = ephemeral.strip_prefix(&format!("{root}/e-")).unwrap();
    assert_eq!(suffix.len(), 10);
    assert!(suffix.bytes().all(|b| b.is_ascii_digit()));
    assert_eq!(stat.ephemeral_owner, session_id);

    // getData and setData with versions.
    let Response::GetData(read) = wire
        .ok(Request::GetData(GetDataRequest {
            path: a.clone(),
            watch: false,
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(read.data, b"one");
    assert_eq!((read.stat.version, read.stat.data_length), (0, 3));
    let set = stat_of(
        wire.ok(Request::SetData(SetDataRequest {
            path: a.clone(),
            data: b"two!".to_vec(),
            version: 0,
        }))
        .await,
    );
    assert_eq!((set.version, set.data_length), (1, 4));
    assert!(set.mzxid > set.czxid);
    assert_eq!(set.czxid, read.stat.czxid);
    let code = wire
        .fails(Request::SetData(SetDataRequest {
            path: a.clone(),
            data: vec![],
            version: 0,
        }))
        .await;
    assert_eq!(code, ErrorCode::BadVersion);

    // getChildren2 and getChildren.
    let Response::GetChildren2(listing) = wire
        .ok(Request::GetChildren2(GetChildrenRequest {
            path: root.clone(),
            watch: false,
        }))
        .await
    else {
        panic!()
    };
    let mut names = listing.children.clone();
    names.sort();
    assert_eq!(names, vec!["a".to_owned(), format!("e-{suffix}")]);
    assert_eq!((listing.stat.num_children, listing.stat.cversion), (2, 2));
    let Response::GetChildren(plain) = wire
        .ok(Request::GetChildren(GetChildrenRequest {
            path: root.clone(),
            watch: false,
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(plain.children.len(), 2);

    // exists: a stat, or NoNode in the header.
    let stat = stat_of(
        wire.ok(Request::Exists(ExistsRequest {
            path: a.clone(),
            watch: false,
        }))
        .await,
    );
    assert_eq!(stat.version, 1);
    let missing = format!("{root}/missing");
    let code = wire
        .fails(Request::Exists(ExistsRequest {
            path: missing.clone(),
            watch: false,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoNode);
    let code = wire
        .fails(Request::GetData(GetDataRequest {
            path: missing.clone(),
            watch: false,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoNode);

    // A multi that succeeds: a result per step.
    let m1 = format!("{root}/m1");
    let Response::Multi(done) = wire
        .ok(Request::Multi(MultiRequest {
            ops: vec![
                MultiOp::Create2(create(&m1, b"m", CreateMode::Persistent)),
                MultiOp::SetData(SetDataRequest {
                    path: a.clone(),
                    data: b"three".to_vec(),
                    version: 1,
                }),
                MultiOp::Check(CheckVersionRequest {
                    path: root.clone(),
                    version: 0,
                }),
            ],
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(done.results.len(), 3);
    match &done.results[0] {
        // 3.8.2 and later send the stat (ZOOKEEPER-4026); 3.8.0 and 3.8.1 the path only.
        MultiResult::Create2(created) => {
            assert_eq!(created.path, m1);
            assert_eq!(created.stat.data_length, 1);
        }
        MultiResult::Create(created) => assert_eq!(created.path, m1),
        other => panic!("{other:?}"),
    }
    let MultiResult::SetData(stat) = &done.results[1] else {
        panic!("{:?}", done.results[1])
    };
    assert_eq!(stat.version, 2);
    assert_eq!(done.results[2], MultiResult::Check);

    // A multi that fails: the header says Ok, every step says why.
    let (header, failed) = wire
        .call(Request::Multi(MultiRequest {
            ops: vec![
                MultiOp::Create(create(&format!("{root}/m2"), b"", CreateMode::Persistent)),
                MultiOp::Check(CheckVersionRequest {
                    path: a.clone(),
                    version: 99,
                }),
                MultiOp::Delete(DeleteRequest {
                    path: m1.clone(),
                    version: -1,
                }),
            ],
        }))
        .await;
    assert_eq!(header.err, ErrorCode::Ok);
    let Ok(Response::Multi(failed)) = failed else {
        panic!("{failed:?}")
    };
    assert_eq!(
        failed.results,
        vec![
            MultiResult::Error(ErrorCode::Ok),
            MultiResult::Error(ErrorCode::BadVersion),
            MultiResult::Error(ErrorCode::RuntimeInconsistency),
        ]
    );
    let Response::Multi(failed) = wire
        .ok(Request::Multi(MultiRequest {
            ops: vec![MultiOp::Create2(create(&a, b"", CreateMode::Persistent))],
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(
        failed.results,
        vec![MultiResult::Error(ErrorCode::NodeExists)]
    );

    // multiRead: each read its own result.
    let Response::MultiRead(reads) = wire
        .ok(Request::MultiRead(MultiReadRequest {
            ops: vec![
                MultiReadOp::GetData(GetDataRequest {
                    path: a.clone(),
                    watch: false,
                }),
                MultiReadOp::GetChildren(GetChildrenRequest {
                    path: root.clone(),
                    watch: false,
                }),
                MultiReadOp::GetData(GetDataRequest {
                    path: missing.clone(),
                    watch: false,
                }),
            ],
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(reads.results.len(), 3);
    let MultiReadResult::GetData(data) = &reads.results[0] else {
        panic!("{:?}", reads.results[0])
    };
    assert_eq!(
        (data.data.as_slice(), data.stat.version),
        (&b"three"[..], 2)
    );
    let MultiReadResult::GetChildren(children) = &reads.results[1] else {
        panic!("{:?}", reads.results[1])
    };
    assert_eq!(children.children.len(), 3);
    assert_eq!(reads.results[2], MultiReadResult::Error(ErrorCode::NoNode));

    // getEphemerals, getAllChildrenNumber, whoAmI.
    let Response::GetEphemerals(ephemerals) = wire
        .ok(Request::GetEphemerals(GetEphemeralsRequest {
            path: root.clone(),
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(ephemerals.ephemerals, vec![ephemeral.clone()]);
    let (grandchild, _) = create2_of(
        wire.ok(Request::Create2(create(
            &format!("{m1}/g"),
            b"",
            CreateMode::Persistent,
        )))
        .await,
    );
    let Response::GetAllChildrenNumber(count) = wire
        .ok(Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
            path: root.clone(),
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(count.total_number, 4, "a, e-…, m1 and m1/g");
    let Response::WhoAmI(who) = wire.ok(Request::WhoAmI).await else {
        panic!()
    };
    assert!(
        who.client_info
            .iter()
            .any(|info| info.auth_scheme == "ip" && info.user == "127.0.0.1"),
        "{who:?}"
    );

    // getACL and setACL with the ACL version.
    let Response::GetAcl(acl) = wire
        .ok(Request::GetAcl(GetAclRequest { path: a.clone() }))
        .await
    else {
        panic!()
    };
    assert_eq!(acl.acl, Acl::open_unsafe());
    assert_eq!(acl.stat.aversion, 0);
    let mut read_only = Acl::open_unsafe();
    read_only[0].perms = Perms::READ | Perms::DELETE | Perms::ADMIN | Perms::WRITE;
    let stat = stat_of(
        wire.ok(Request::SetAcl(SetAclRequest {
            path: a.clone(),
            acl: read_only.clone(),
            version: 0,
        }))
        .await,
    );
    assert_eq!(stat.aversion, 1);
    let code = wire
        .fails(Request::SetAcl(SetAclRequest {
            path: a.clone(),
            acl: read_only,
            version: 0,
        }))
        .await;
    assert_eq!(code, ErrorCode::BadVersion);
    let code = wire
        .fails(Request::Create2(create(
            &format!("{a}/child"),
            b"",
            CreateMode::Persistent,
        )))
        .await;
    assert_eq!(code, ErrorCode::NoAuth, "the ACL left out CREATE");

    // sync.
    let synced = wire
        .ok(Request::Sync(SyncRequest { path: root.clone() }))
        .await;
    assert_eq!(
        synced,
        Response::Sync(curator_wire::proto::SyncResponse { path: root.clone() })
    );

    // A container and a TTL node: create2 replies; a TTL with a mode that takes none is refused.
    let (container, stat) = create2_of(
        wire.ok(Request::CreateContainer(create(
            &format!("{root}/c"),
            b"",
            CreateMode::Container,
        )))
        .await,
    );
    assert_eq!(container, format!("{root}/c"));
    assert!(stat.czxid > 0);
    let (ttl, _) = create2_of(
        wire.ok(Request::CreateTtl(CreateTtlRequest {
            path: format!("{root}/t-"),
            data: b"x".to_vec(),
            acl: Acl::open_unsafe(),
            mode: CreateMode::PersistentSequentialWithTtl,
            ttl: 60_000,
        }))
        .await,
    );
    assert!(ttl.starts_with(&format!("{root}/t-")) && ttl.len() == root.len() + 13);
    let code = wire
        .fails(Request::CreateTtl(CreateTtlRequest {
            path: format!("{root}/t2"),
            data: vec![],
            acl: Acl::open_unsafe(),
            mode: CreateMode::Persistent,
            ttl: 60_000,
        }))
        .await;
    assert_eq!(code, ErrorCode::BadArguments);

    // getConfig: a getData of the configuration node, which every server has.
    let Response::GetData(config) = wire
        .ok(Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        }))
        .await
    else {
        panic!()
    };
    assert_eq!(config.stat.data_length as usize, config.data.len());

    // Reconfiguration is off on this server: a typed error code.
    let code = wire
        .fails(Request::Reconfig(ReconfigRequest {
            joining_servers: None,
            leaving_servers: Some("9".into()),
            new_members: None,
            cur_config_id: -1,
        }))
        .await;
    assert_eq!(code, ErrorCode::ReconfigDisabled);

    // delete: BadVersion, NotEmpty, then gone.
    let code = wire
        .fails(Request::Delete(DeleteRequest {
            path: grandchild.clone(),
            version: 5,
        }))
        .await;
    assert_eq!(code, ErrorCode::BadVersion);
    let code = wire
        .fails(Request::Delete(DeleteRequest {
            path: m1.clone(),
            version: -1,
        }))
        .await;
    assert_eq!(code, ErrorCode::NotEmpty);
    let deleted = wire
        .ok(Request::Delete(DeleteRequest {
            path: grandchild,
            version: 0,
        }))
        .await;
    assert_eq!(deleted, Response::Empty);

    // ping: the reserved xid comes back, with the server's last zxid.
    let (header, pong) = wire.call_with_xid(PING_XID, Request::Ping).await;
    assert_eq!(pong, Ok(Response::Empty));
    assert_eq!(header.xid, PING_XID);
    assert!(header.zxid >= stat.czxid);

    // closeSession: an empty reply, then the server closes the connection, and the ephemeral
    // node went with the session.
    let closed = wire.ok(Request::CloseSession).await;
    assert_eq!(closed, Response::Empty);
    let end = tokio::time::timeout(wire.timing.wait(), wire.framed.next())
        .await
        .expect("the server did not close the connection");
    assert!(
        matches!(end, None | Some(Err(curator_wire::CodecError::Io(_)))),
        "{end:?}"
    );
    let mut other = Wire::connect(&server).await;
    let code = other
        .fails(Request::Exists(ExistsRequest {
            path: ephemeral,
            watch: false,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoNode);
}

#[tokio::test]
async fn watch_notifications_decode_before_the_replies_that_follow_them() {
    let server = TestingServer::start().await.unwrap();
    let mut wire = Wire::connect(&server).await;
    let root = wire.unique_root("wire-watch").await;
    wire.ok(Request::Create2(create(&root, b"", CreateMode::Persistent)))
        .await;
    let x = format!("{root}/x");
    wire.ok(Request::Create2(create(&x, b"0", CreateMode::Persistent)))
        .await;

    // A persistent recursive watch on the root, and a one-shot data watch on x.
    let added = wire
        .ok(Request::AddWatch(AddWatchRequest {
            path: root.clone(),
            mode: AddWatchMode::PersistentRecursive,
        }))
        .await;
    assert_eq!(
        added,
        Response::AddWatch(curator_wire::proto::ErrorResponse { err: ErrorCode::Ok })
    );
    wire.ok(Request::GetData(GetDataRequest {
        path: x.clone(),
        watch: true,
    }))
    .await;

    // A change on this connection: its notification arrives before its reply. (Servers before
    // 3.9 also send NodeChildrenChanged of the parent to recursive watchers: ZOOKEEPER-4475.)
    let y = format!("{x}/y");
    let (_, stat) = create2_of(
        wire.ok(Request::Create2(create(&y, b"", CreateMode::Persistent)))
            .await,
    );
    let events = wire.take_events(&x);
    assert_eq!(
        events.len(),
        1,
        "the notification came before the reply: {events:?}"
    );
    let (header, event) = &events[0];
    assert_eq!(
        event,
        &WatcherEvent {
            event_type: EventType::NodeCreated,
            state: KeeperState::SyncConnected,
            path: y.clone(),
        }
    );
    assert_notification_zxid(header, stat.czxid);

    let set = stat_of(
        wire.ok(Request::SetData(SetDataRequest {
            path: x.clone(),
            data: b"1".to_vec(),
            version: -1,
        }))
        .await,
    );
    // The one-shot and the recursive watch fire as one event or two.
    let events = wire.take_events(&x);
    assert!(!events.is_empty());
    for (header, event) in &events {
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NodeDataChanged, x.as_str())
        );
        assert_notification_zxid(header, set.mzxid);
    }

    // checkWatches and removeWatches on an exists watch of a missing node.
    let z = format!("{root}/z");
    let code = wire
        .fails(Request::Exists(ExistsRequest {
            path: z.clone(),
            watch: true,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoNode);
    let checked = wire
        .ok(Request::CheckWatches(RemoveWatchesRequest {
            path: z.clone(),
            watcher_type: WatcherType::Data,
        }))
        .await;
    assert_eq!(checked, Response::Empty);
    wire.ok(Request::RemoveWatches(RemoveWatchesRequest {
        path: z.clone(),
        watcher_type: WatcherType::Data,
    }))
    .await;
    let code = wire
        .fails(Request::CheckWatches(RemoveWatchesRequest {
            path: z.clone(),
            watcher_type: WatcherType::Data,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoWatcher);
    let code = wire
        .fails(Request::RemoveWatches(RemoveWatchesRequest {
            path: z.clone(),
            watcher_type: WatcherType::Children,
        }))
        .await;
    assert_eq!(code, ErrorCode::NoWatcher);

    // setWatches2 and setWatches, as after a reconnect: a watch on a node that changed after
    // the zxid given fires at once.
    let before = set.mzxid - 1;
    let (header, reply) = wire
        .call_with_xid(
            curator_wire::proto::SET_WATCHES_XID,
            Request::SetWatches2(SetWatches2 {
                relative_zxid: before,
                data_watches: vec![x.clone()],
                ..SetWatches2::default()
            }),
        )
        .await;
    assert_eq!(
        (header.xid, reply),
        (curator_wire::proto::SET_WATCHES_XID, Ok(Response::Empty))
    );
    let (_, event) = wire.event().await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeDataChanged, x.as_str())
    );
    let (_, reply) = wire
        .call_with_xid(
            curator_wire::proto::SET_WATCHES_XID,
            Request::SetWatches(SetWatches {
                relative_zxid: 0,
                child_watches: vec![x.clone()],
                ..SetWatches::default()
            }),
        )
        .await;
    assert_eq!(reply, Ok(Response::Empty));
    let (_, event) = wire.event().await;
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NodeChildrenChanged, x.as_str())
    );

    // Deleting fires the recursive watch; the reply follows the notification.
    let deleted = wire
        .ok(Request::Delete(DeleteRequest {
            path: y.clone(),
            version: -1,
        }))
        .await;
    assert_eq!(deleted, Response::Empty);
    let events = wire.take_events(&x);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0].1.event_type, events[0].1.path.as_str()),
        (EventType::NodeDeleted, y.as_str())
    );
}

#[tokio::test]
async fn auth_packets_are_answered_on_their_reserved_xid() {
    let server = TestingServer::start().await.unwrap();
    let mut wire = Wire::connect(&server).await;
    let (header, reply) = wire
        .call_with_xid(
            curator_wire::proto::AUTH_XID,
            Request::Auth(AuthPacket::new("digest", b"wire-user:secret".to_vec())),
        )
        .await;
    assert_eq!(
        (header.xid, header.err),
        (curator_wire::proto::AUTH_XID, ErrorCode::Ok)
    );
    assert_eq!(reply, Ok(Response::Empty));
    let Response::WhoAmI(who) = wire.ok(Request::WhoAmI).await else {
        panic!()
    };
    assert!(
        who.client_info
            .iter()
            .any(|info| info.auth_scheme == "digest" && info.user == "wire-user"),
        "{who:?}"
    );
    // The op codes the replies were read with are the requests' own.
    assert_eq!(Request::WhoAmI.op_code(), OpCode::WhoAmI);
}

#[tokio::test]
async fn sasl_tokens_are_exchanged_in_sasl_records() {
    let server = TestingServer::builder()
        .sasl(curator_test::ServerSasl::digest_md5().with_user("wire-user", "wire-secret"))
        .start()
        .await
        .unwrap();
    let mut wire = Wire::connect(&server).await;
    // DIGEST-MD5 starts with an empty response from the client; the server's first token is
    // its challenge.
    let reply = wire
        .ok(Request::Sasl(curator_wire::proto::GetSaslRequest {
            token: vec![],
        }))
        .await;
    let Response::Sasl(challenge) = reply else {
        panic!("{reply:?}")
    };
    let challenge = String::from_utf8(challenge.token).unwrap();
    assert!(challenge.contains("nonce=\""), "{challenge}");
    assert!(challenge.contains("algorithm=md5-sess"), "{challenge}");
}
