//! The deterministic core with explicit times: stats and zxids, sequential names, the error
//! order, multi, watches and their order, sessions, setWatches, containers, TTLs and ACLs.

use curator_wire::proto::{
    Acl, AddWatchMode, AddWatchRequest, AuthPacket, CheckVersionRequest, ConnectRequest,
    CreateMode, CreateRequest, CreateTtlRequest, DeleteRequest, ErrorCode, EventType,
    ExistsRequest, GetAclRequest, GetChildrenRequest, GetDataRequest, Id, MultiOp, MultiRequest,
    MultiResult, Perms, Request, Response, SetDataRequest, SetWatches2, Stat, WatcherEvent,
};
use curator_zkmodel::{Connect, ConnectionId, Message, Model, ModelConfig, Outcome, acl};

/// A model and its clock.
struct Sim {
    model: Model,
    now: i64,
    xid: i32,
}

/// A connected client.
#[derive(Debug, Clone)]
struct Client {
    connection: ConnectionId,
    session: i64,
    password: Vec<u8>,
}

impl Sim {
    fn new() -> Sim {
        Sim::with(ModelConfig::default())
    }

    fn with(config: ModelConfig) -> Sim {
        Sim {
            model: Model::new(config, 1_000_000),
            now: 1_000_000,
            xid: 0,
        }
    }

    fn at(&mut self, now: i64) -> &mut Sim {
        self.now = now;
        self
    }

    fn connect(&mut self, timeout: i32) -> Client {
        let request = ConnectRequest::new_session(timeout, false);
        match self.model.connect(self.now, &request, "127.0.0.1") {
            Connect::Accepted {
                connection,
                response,
                ..
            } => Client {
                connection,
                session: response.session_id,
                password: response.passwd,
            },
            other => panic!("not accepted: {other:?}"),
        }
    }

    fn send(&mut self, client: &Client, request: Request) -> Outcome {
        self.xid += 1;
        self.model
            .handle(self.now, client.connection, self.xid, request)
    }

    fn call(&mut self, client: &Client, request: Request) -> Result<Response, ErrorCode> {
        let outcome = self.send(client, request);
        outcome
            .reply_to(client.connection)
            .expect("a reply")
            .result
            .clone()
    }

    fn create(
        &mut self,
        client: &Client,
        path: &str,
        mode: CreateMode,
    ) -> Result<String, ErrorCode> {
        self.call(client, create(path, mode))
            .map(|response| match response {
                Response::Create(created) => created.path,
                other => panic!("{other:?}"),
            })
    }

    fn stat(&self, path: &str) -> Stat {
        self.model.node(path).expect("the node exists").1
    }
}

fn create(path: &str, mode: CreateMode) -> Request {
    Request::Create(create_request(path, mode))
}

fn create_request(path: &str, mode: CreateMode) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: b"data".to_vec(),
        acl: Acl::open_unsafe(),
        mode,
    }
}

fn delete(path: &str, version: i32) -> Request {
    Request::Delete(DeleteRequest {
        path: path.into(),
        version,
    })
}

fn set_data(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData(SetDataRequest {
        path: path.into(),
        data: data.to_vec(),
        version,
    })
}

fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData(GetDataRequest {
        path: path.into(),
        watch,
    })
}

fn event(event_type: EventType, path: &str) -> WatcherEvent {
    WatcherEvent {
        event_type,
        state: curator_wire::proto::KeeperState::SyncConnected,
        path: path.into(),
    }
}

fn events(outcome: &Outcome, client: &Client) -> Vec<(EventType, String)> {
    outcome
        .events_to(client.connection)
        .into_iter()
        .map(|event| (event.event_type, event.path.clone()))
        .collect()
}

#[test]
fn stats_and_zxids_follow_the_server() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    assert_eq!(sim.model.last_zxid(), 1, "createSession is a transaction");

    sim.at(1_000_010);
    assert_eq!(
        sim.create(&client, "/a", CreateMode::Persistent),
        Ok("/a".into())
    );
    let stat = sim.stat("/a");
    assert_eq!(
        (stat.czxid, stat.mzxid, stat.pzxid, stat.ctime, stat.mtime),
        (2, 2, 2, 1_000_010, 1_000_010)
    );
    assert_eq!(
        (stat.version, stat.cversion, stat.aversion, stat.data_length),
        (0, 0, 0, 4)
    );
    assert_eq!((stat.ephemeral_owner, stat.num_children), (0, 0));
    let root = sim.stat("/");
    assert_eq!((root.pzxid, root.num_children, root.cversion), (2, 2, 0));

    // A failed write is a transaction too: its zxid is spent and the reply carries it.
    let outcome = sim.send(&client, create("/a", CreateMode::Persistent));
    let reply = outcome.reply_to(client.connection).unwrap();
    assert_eq!(
        (reply.zxid, reply.result.clone()),
        (3, Err(ErrorCode::NodeExists))
    );
    // Reads answer with the last zxid and spend none.
    let outcome = sim.send(&client, get_data("/a", false));
    assert_eq!(outcome.reply_to(client.connection).unwrap().zxid, 3);

    sim.at(1_000_020);
    let Ok(Response::Stat(stat)) = sim.call(&client, set_data("/a", b"xy", 0)) else {
        panic!()
    };
    assert_eq!(
        (stat.version, stat.mzxid, stat.mtime, stat.czxid),
        (1, 4, 1_000_020, 2)
    );
    assert_eq!(stat.data_length, 2);

    sim.create(&client, "/a/b", CreateMode::Persistent).unwrap();
    sim.call(&client, delete("/a/b", -1)).unwrap();
    let parent = sim.stat("/a");
    // cversion counts creates and deletes; pzxid is the delete's zxid; mzxid is untouched.
    assert_eq!(
        (
            parent.cversion,
            parent.pzxid,
            parent.mzxid,
            parent.num_children
        ),
        (2, 6, 4, 0)
    );

    let Ok(Response::Create2(created)) = sim.call(
        &client,
        Request::Create2(create_request("/e", CreateMode::Ephemeral)),
    ) else {
        panic!()
    };
    assert_eq!(created.stat.ephemeral_owner, client.session);
    assert_eq!(created.stat, sim.stat("/e"));
}

#[test]
fn sequential_names_count_the_parents_creates() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/q", CreateMode::Persistent).unwrap();
    assert_eq!(
        sim.create(&client, "/q/item-", CreateMode::PersistentSequential),
        Ok("/q/item-0000000000".into())
    );
    sim.create(&client, "/q/other", CreateMode::Persistent)
        .unwrap();
    sim.call(&client, delete("/q/other", -1)).unwrap();
    assert_eq!(
        sim.create(&client, "/q/item-", CreateMode::EphemeralSequential),
        Ok("/q/item-0000000002".into()),
        "deletes do not count"
    );
    // A failed create spends no sequence number.
    sim.create(&client, "/q/x", CreateMode::Persistent).unwrap();
    assert_eq!(
        sim.create(&client, "/q/x", CreateMode::Persistent),
        Err(ErrorCode::NodeExists)
    );
    assert_eq!(
        sim.create(&client, "/q/", CreateMode::PersistentSequential),
        Ok("/q/0000000004".into())
    );
    assert_eq!(
        sim.stat("/q").cversion,
        2 * 5 - 4,
        "five creates, four children"
    );
}

#[test]
fn errors_come_in_the_servers_order() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/e", CreateMode::Ephemeral).unwrap();
    sim.create(&client, "/p", CreateMode::Persistent).unwrap();
    sim.create(&client, "/p/c", CreateMode::Persistent).unwrap();

    let cases: Vec<(Request, ErrorCode)> = vec![
        (
            create("relative", CreateMode::Persistent),
            ErrorCode::BadArguments,
        ),
        (
            create("/missing/x", CreateMode::Persistent),
            ErrorCode::NoNode,
        ),
        (
            create("/p/", CreateMode::Persistent),
            ErrorCode::BadArguments,
        ),
        (
            create("/missing/", CreateMode::Persistent),
            ErrorCode::NoNode,
        ),
        (create("/", CreateMode::Persistent), ErrorCode::NodeExists),
        (
            create("/e/x", CreateMode::Persistent),
            ErrorCode::NoChildrenForEphemerals,
        ),
        (
            Request::Create(CreateRequest {
                acl: Vec::new(),
                ..create_request("/missing/x", CreateMode::Persistent)
            }),
            ErrorCode::InvalidAcl,
        ),
        (
            create("/ttl", CreateMode::PersistentWithTtl),
            ErrorCode::BadArguments,
        ),
        (
            Request::CreateTtl(CreateTtlRequest {
                path: "/ttl".into(),
                data: Vec::new(),
                acl: Acl::open_unsafe(),
                mode: CreateMode::Persistent,
                ttl: 100,
            }),
            ErrorCode::BadArguments,
        ),
        (delete("/zookeeper", -1), ErrorCode::BadArguments),
        (delete("/", -1), ErrorCode::BadArguments),
        (delete("/p", 5), ErrorCode::BadVersion),
        (delete("/p", -1), ErrorCode::NotEmpty),
        (delete("/p/missing", -1), ErrorCode::NoNode),
        (set_data("/p/", b"", -1), ErrorCode::BadArguments),
        (set_data("/missing", b"", -1), ErrorCode::NoNode),
        (set_data("/p", b"", 3), ErrorCode::BadVersion),
        (set_data("/zookeeper/config", b"", -1), ErrorCode::NoAuth),
        (get_data("/missing", true), ErrorCode::NoNode),
        (
            Request::Reconfig(curator_wire::proto::ReconfigRequest::default()),
            ErrorCode::ReconfigDisabled,
        ),
    ];
    for (request, expected) in cases {
        let described = format!("{request:?}");
        assert_eq!(sim.call(&client, request), Err(expected), "{described}");
    }
    // /e exists, so NodeExists comes before the ephemeral parent's refusal.
    sim.create(&client, "/p/d", CreateMode::Persistent).unwrap();
    assert_eq!(
        sim.create(&client, "/e", CreateMode::Persistent),
        Err(ErrorCode::NodeExists)
    );
    let with_ttl = sim.model.config().clone().extended_types(false);
    let mut off = Sim::with(with_ttl);
    let client = off.connect(10_000);
    let ttl = Request::CreateTtl(CreateTtlRequest {
        path: "/t".into(),
        data: Vec::new(),
        acl: Acl::open_unsafe(),
        mode: CreateMode::PersistentWithTtl,
        ttl: 100,
    });
    assert_eq!(off.call(&client, ttl), Err(ErrorCode::Unimplemented));
}

#[test]
fn a_multi_is_one_transaction_all_or_nothing() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/m", CreateMode::Persistent).unwrap();
    let before = sim.model.last_zxid();

    let ok = Request::Multi(MultiRequest {
        ops: vec![
            MultiOp::Create(create_request("/m/s-", CreateMode::PersistentSequential)),
            MultiOp::Create2(create_request("/m/s-", CreateMode::PersistentSequential)),
            MultiOp::SetData(SetDataRequest {
                path: "/m".into(),
                data: b"v".to_vec(),
                version: 0,
            }),
            MultiOp::Check(CheckVersionRequest {
                path: "/m".into(),
                version: 1,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/m/s-0000000000".into(),
                version: -1,
            }),
        ],
    });
    let Ok(Response::Multi(response)) = sim.call(&client, ok) else {
        panic!()
    };
    assert_eq!(
        sim.model.last_zxid(),
        before + 1,
        "one zxid for the whole multi"
    );
    let zxid = sim.model.last_zxid();
    assert!(matches!(&response.results[0], MultiResult::Create(c) if c.path == "/m/s-0000000000"));
    assert!(
        matches!(&response.results[1], MultiResult::Create2(c) if c.path == "/m/s-0000000001" && c.stat.czxid == zxid)
    );
    assert!(matches!(&response.results[2], MultiResult::SetData(stat) if stat.version == 1));
    assert_eq!(
        response.results[3..],
        [MultiResult::Check, MultiResult::Delete]
    );
    assert_eq!(sim.model.children("/m").unwrap(), ["s-0000000001"]);

    let snapshot = (sim.stat("/m"), sim.model.children("/m"));
    let failing = Request::Multi(MultiRequest {
        ops: vec![
            MultiOp::Create(create_request("/m/new", CreateMode::Persistent)),
            MultiOp::SetData(SetDataRequest {
                path: "/m".into(),
                data: b"w".to_vec(),
                version: -1,
            }),
            MultiOp::Check(CheckVersionRequest {
                path: "/m".into(),
                version: 99,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/m/s-0000000001".into(),
                version: -1,
            }),
        ],
    });
    let outcome = sim.send(&client, failing);
    let reply = outcome.reply_to(client.connection).unwrap();
    assert_eq!(reply.zxid, zxid + 1, "a failed multi spends one zxid");
    let Ok(Response::Multi(response)) = &reply.result else {
        panic!("a failed multi is a successful reply of error results: {reply:?}")
    };
    assert_eq!(
        response.results,
        [
            MultiResult::Error(ErrorCode::Ok),
            MultiResult::Error(ErrorCode::Ok),
            MultiResult::Error(ErrorCode::BadVersion),
            MultiResult::Error(ErrorCode::RuntimeInconsistency),
        ]
    );
    assert_eq!(
        (sim.stat("/m"), sim.model.children("/m")),
        snapshot,
        "nothing applied"
    );
    assert!(outcome.events_to(client.connection).is_empty());
    // The sequence counter was taken back too.
    assert_eq!(
        sim.create(&client, "/m/s-", CreateMode::PersistentSequential),
        Ok("/m/s-0000000002".into())
    );
}

#[test]
fn watch_events_precede_the_reply_and_fire_once() {
    let mut sim = Sim::new();
    let watcher = sim.connect(10_000);
    let writer = sim.connect(10_000);
    sim.create(&writer, "/w", CreateMode::Persistent).unwrap();

    sim.call(&watcher, get_data("/w", true)).unwrap();
    sim.call(
        &watcher,
        Request::GetChildren(GetChildrenRequest {
            path: "/w".into(),
            watch: true,
        }),
    )
    .unwrap();
    assert_eq!(
        sim.call(
            &watcher,
            Request::Exists(ExistsRequest {
                path: "/w/c".into(),
                watch: true
            })
        ),
        Err(ErrorCode::NoNode),
        "an exists watch is set on a missing node"
    );

    // The watcher's own write: its events come before its reply.
    let outcome = sim.send(&watcher, create("/w/c", CreateMode::Persistent));
    let mine: Vec<&Message> = outcome
        .deliveries
        .iter()
        .filter(|delivery| delivery.connection == watcher.connection)
        .map(|delivery| &delivery.message)
        .collect();
    assert_eq!(mine.len(), 3);
    let zxid = sim.model.last_zxid();
    assert_eq!(
        mine[0],
        &Message::Notification {
            zxid,
            event: event(EventType::NodeCreated, "/w/c")
        }
    );
    assert_eq!(
        mine[1],
        &Message::Notification {
            zxid,
            event: event(EventType::NodeChildrenChanged, "/w")
        }
    );
    assert!(matches!(mine[2], Message::Reply(reply) if reply.result.is_ok()));

    // Used up: a second change fires nothing.
    let outcome = sim.send(&writer, delete("/w/c", -1));
    assert!(events(&outcome, &watcher).is_empty());
    let outcome = sim.send(&writer, set_data("/w", b"1", -1));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeDataChanged, "/w".into())]
    );
    assert!(events(&sim.send(&writer, set_data("/w", b"2", -1)), &watcher).is_empty());

    // A data and a child watch on a deleted node: one NodeDeleted for the connection.
    sim.create(&writer, "/w/d", CreateMode::Persistent).unwrap();
    sim.call(&watcher, get_data("/w/d", true)).unwrap();
    sim.call(
        &watcher,
        Request::GetChildren(GetChildrenRequest {
            path: "/w/d".into(),
            watch: true,
        }),
    )
    .unwrap();
    let outcome = sim.send(&writer, delete("/w/d", -1));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeDeleted, "/w/d".into())]
    );
}

#[test]
fn persistent_recursive_watches_see_the_subtree_but_not_child_lists() {
    let mut sim = Sim::new();
    let watcher = sim.connect(10_000);
    let writer = sim.connect(10_000);
    let add = |path: &str, mode| {
        Request::AddWatch(AddWatchRequest {
            path: path.into(),
            mode,
        })
    };
    assert!(
        sim.call(&watcher, add("/r", AddWatchMode::PersistentRecursive))
            .is_ok()
    );
    assert!(
        sim.call(&watcher, add("/p", AddWatchMode::Persistent))
            .is_ok()
    );

    let outcome = sim.send(&writer, create("/r", CreateMode::Persistent));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeCreated, "/r".into())]
    );
    let outcome = sim.send(&writer, create("/r/a", CreateMode::Persistent));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeCreated, "/r/a".into())]
    );
    let outcome = sim.send(&writer, set_data("/r/a", b"x", -1));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeDataChanged, "/r/a".into())]
    );
    let outcome = sim.send(&writer, set_data("/r/a", b"y", -1));
    assert_eq!(events(&outcome, &watcher).len(), 1, "still there");

    // A persistent (not recursive) watch sees its node and its child list.
    sim.create(&writer, "/p", CreateMode::Persistent).unwrap();
    let outcome = sim.send(&writer, create("/p/c", CreateMode::Persistent));
    assert_eq!(
        events(&outcome, &watcher),
        [(EventType::NodeChildrenChanged, "/p".into())]
    );
    let outcome = sim.send(&writer, create("/p/c/d", CreateMode::Persistent));
    assert!(events(&outcome, &watcher).is_empty());

    // removeWatches by type removes one mode at a time.
    let remove = |path: &str, watcher_type| {
        Request::RemoveWatches(curator_wire::proto::RemoveWatchesRequest {
            path: path.into(),
            watcher_type,
        })
    };
    use curator_wire::proto::WatcherType;
    assert_eq!(
        sim.call(&watcher, remove("/r", WatcherType::Persistent)),
        Err(ErrorCode::NoWatcher)
    );
    assert!(
        sim.call(&watcher, remove("/r", WatcherType::PersistentRecursive))
            .is_ok()
    );
    let outcome = sim.send(&writer, set_data("/r/a", b"z", -1));
    assert!(events(&outcome, &watcher).is_empty());
}

#[test]
fn sessions_expire_on_the_tick_and_take_their_ephemerals() {
    let mut sim = Sim::with(ModelConfig::default().tick_time(1_000));
    let owner = sim.connect(5_000);
    let other = sim.connect(5_000);
    assert_eq!(
        sim.model.session_deadline(owner.session),
        Some((5_000, 1_006_000))
    );
    sim.create(&owner, "/eph", CreateMode::Ephemeral).unwrap();
    sim.call(&other, get_data("/eph", true)).unwrap();

    // A request touches the session: the deadline moves to the tick after now + timeout.
    sim.at(1_002_500);
    sim.call(&owner, Request::Ping).unwrap();
    assert_eq!(
        sim.model.session_deadline(owner.session),
        Some((5_000, 1_008_000))
    );
    sim.at(1_006_000);
    sim.call(&other, Request::Ping).unwrap();
    let outcome = sim.model.tick(1_007_999);
    assert!(outcome.deliveries.is_empty());
    let outcome = sim.model.tick(1_008_000);
    assert!(outcome.closes(owner.connection));
    assert_eq!(
        events(&outcome, &other),
        [(EventType::NodeDeleted, "/eph".into())]
    );
    assert!(sim.model.node("/eph").is_none());
    assert_eq!(sim.model.session_ids(), [other.session]);

    // The expired session cannot be resumed.
    let mut resume = ConnectRequest::new_session(5_000, false);
    resume.session_id = owner.session;
    resume.passwd = owner.password.clone();
    let Connect::Refused { response, .. } = sim.model.connect(1_008_001, &resume, "127.0.0.1")
    else {
        panic!()
    };
    assert_eq!((response.timeout, response.session_id), (0, 0));
}

#[test]
fn resuming_checks_the_password_and_closes_the_old_connection() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    assert_eq!(client.password.len(), 16);
    let mut resume = ConnectRequest::new_session(10_000, false);
    resume.session_id = client.session;
    resume.passwd = vec![0; 16];
    let Connect::Refused { others, .. } = sim.model.connect(sim.now, &resume, "127.0.0.1") else {
        panic!()
    };
    assert!(
        others.closes(client.connection),
        "even a wrong password takes the connection"
    );
    resume.passwd = client.password.clone();
    let Connect::Accepted { response, .. } = sim.model.connect(sim.now, &resume, "127.0.0.1")
    else {
        panic!()
    };
    assert_eq!(response.session_id, client.session);
    // A client that has seen more than the server is dropped without an answer.
    resume.last_zxid_seen = 1_000;
    assert_eq!(
        sim.model.connect(sim.now, &resume, "127.0.0.1"),
        Connect::Dropped
    );
    // Timeouts are negotiated within 2 and 20 ticks.
    let short = sim.connect(1);
    let long = sim.connect(1_000_000);
    assert_eq!(sim.model.session_deadline(short.session).unwrap().0, 4_000);
    assert_eq!(sim.model.session_deadline(long.session).unwrap().0, 40_000);
}

#[test]
fn set_watches_fires_what_changed_after_the_clients_zxid() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/same", CreateMode::Persistent)
        .unwrap();
    sim.create(&client, "/changed", CreateMode::Persistent)
        .unwrap();
    sim.create(&client, "/parent", CreateMode::Persistent)
        .unwrap();
    let seen = sim.model.last_zxid();
    sim.call(&client, set_data("/changed", b"new", -1)).unwrap();
    sim.create(&client, "/parent/kid", CreateMode::Persistent)
        .unwrap();
    sim.create(&client, "/born", CreateMode::Persistent)
        .unwrap();

    // The client reconnects on a new connection and sets its watches again.
    sim.model.disconnect(client.connection);
    let mut resume = ConnectRequest::new_session(10_000, false);
    resume.session_id = client.session;
    resume.passwd = client.password.clone();
    resume.last_zxid_seen = seen;
    let Connect::Accepted { connection, .. } = sim.model.connect(sim.now, &resume, "127.0.0.1")
    else {
        panic!()
    };
    let client = Client {
        connection,
        ..client
    };
    let outcome = sim.send(
        &client,
        Request::SetWatches2(SetWatches2 {
            relative_zxid: seen,
            data_watches: vec!["/same".into(), "/changed".into(), "/gone".into()],
            exist_watches: vec!["/born".into(), "/unborn".into()],
            child_watches: vec!["/parent".into()],
            ..SetWatches2::default()
        }),
    );
    assert_eq!(
        events(&outcome, &client),
        [
            (EventType::NodeDataChanged, "/changed".into()),
            (EventType::NodeDeleted, "/gone".into()),
            (EventType::NodeCreated, "/born".into()),
            (EventType::NodeChildrenChanged, "/parent".into()),
        ]
    );
    assert!(
        outcome
            .deliveries
            .iter()
            .all(|d| !matches!(d.message, Message::Notification { zxid, .. } if zxid != -1)),
        "setWatches' events carry no zxid"
    );
    // The watches that did not fire are set.
    let outcome = sim.send(&client, set_data("/same", b"x", -1));
    assert_eq!(
        events(&outcome, &client),
        [(EventType::NodeDataChanged, "/same".into())]
    );
    let outcome = sim.send(&client, create("/unborn", CreateMode::Persistent));
    assert_eq!(
        events(&outcome, &client),
        [(EventType::NodeCreated, "/unborn".into())]
    );
}

#[test]
fn containers_and_ttl_nodes_are_reaped_by_the_servers_rules() {
    let mut sim = Sim::new();
    let client = sim.connect(30_000);
    sim.call(
        &client,
        Request::CreateContainer(create_request("/used", CreateMode::Container)),
    )
    .unwrap();
    sim.call(
        &client,
        Request::CreateContainer(create_request("/unused", CreateMode::Container)),
    )
    .unwrap();
    sim.create(&client, "/used/child", CreateMode::Persistent)
        .unwrap();
    assert!(
        sim.model.reap(sim.now).deliveries.is_empty(),
        "not empty yet"
    );
    sim.call(&client, delete("/used/child", -1)).unwrap();
    sim.call(&client, get_data("/used", true)).unwrap();
    let zxid = sim.model.last_zxid();
    let outcome = sim.model.reap(sim.now);
    assert_eq!(
        events(&outcome, &client),
        [(EventType::NodeDeleted, "/used".into())]
    );
    assert_eq!(
        sim.model.last_zxid(),
        zxid + 1,
        "deleteContainer is a transaction"
    );
    assert!(sim.model.node("/unused").is_some(), "never used: kept");

    let ttl = |path: &str| {
        Request::CreateTtl(CreateTtlRequest {
            path: path.into(),
            data: Vec::new(),
            acl: Acl::open_unsafe(),
            mode: CreateMode::PersistentWithTtl,
            ttl: 1_000,
        })
    };
    let Ok(Response::Create2(created)) = sim.call(&client, ttl("/ttl")) else {
        panic!()
    };
    assert_eq!(created.stat.ephemeral_owner, 0, "a TTL node shows no owner");
    sim.model.reap(sim.now + 1_000);
    assert!(sim.model.node("/ttl").is_some(), "not past its TTL");
    sim.at(sim.now + 500);
    sim.call(&client, set_data("/ttl", b"x", -1)).unwrap();
    sim.model.reap(sim.now + 1_000);
    assert!(sim.model.node("/ttl").is_some(), "a change renews it");
    sim.model.reap(sim.now + 1_001);
    assert!(sim.model.node("/ttl").is_none());
}

#[test]
fn acls_guard_nodes_and_notifications() {
    let mut sim = Sim::new();
    let alice = sim.connect(10_000);
    let stranger = sim.connect(10_000);
    let auth = Request::Auth(AuthPacket::new("digest", b"alice:secret".to_vec()));
    let outcome = sim.send(&alice, auth);
    let reply = outcome.reply_to(alice.connection).unwrap();
    assert_eq!(
        (reply.xid, reply.zxid, reply.result.clone()),
        (1, 0, Ok(Response::Empty))
    );

    let private = Acl {
        perms: Perms::ALL,
        id: Id::new("auth", ""),
    };
    let mut request = create_request("/private", CreateMode::Persistent);
    request.acl = vec![private];
    assert_eq!(
        sim.call(&stranger, Request::Create(request.clone())),
        Err(ErrorCode::InvalidAcl),
        "auth without an authenticated identity"
    );
    sim.call(&alice, Request::Create(request)).unwrap();
    let Ok(Response::GetAcl(read)) = sim.call(
        &alice,
        Request::GetAcl(GetAclRequest {
            path: "/private".into(),
        }),
    ) else {
        panic!()
    };
    assert_eq!(
        read.acl[0].id,
        Id::new("digest", acl::digest("alice:secret"))
    );
    assert_eq!(
        sim.call(&stranger, get_data("/private", true)),
        Err(ErrorCode::NoAuth)
    );
    assert_eq!(
        sim.call(&stranger, set_data("/private", b"", -1)),
        Err(ErrorCode::NoAuth)
    );

    // Notifications go only to connections that may read the node (3.9).
    sim.call(
        &stranger,
        Request::Exists(ExistsRequest {
            path: "/private/kid".into(),
            watch: true,
        }),
    )
    .unwrap_err();
    sim.call(
        &alice,
        Request::Exists(ExistsRequest {
            path: "/private/kid".into(),
            watch: true,
        }),
    )
    .unwrap_err();
    let mut kid = create_request("/private/kid", CreateMode::Persistent);
    kid.acl = vec![Acl {
        perms: Perms::ALL,
        id: Id::new("digest", acl::digest("alice:secret")),
    }];
    let outcome = sim.send(&alice, Request::Create(kid));
    assert!(events(&outcome, &stranger).is_empty());
    assert_eq!(
        events(&outcome, &alice),
        [(EventType::NodeCreated, "/private/kid".into())]
    );

    // whoAmI lists the connection's identities (in the server's hash-set order); an unknown
    // scheme closes the connection.
    let Ok(Response::WhoAmI(who)) = sim.call(&alice, Request::WhoAmI) else {
        panic!()
    };
    let users: Vec<(&str, &str)> = who
        .client_info
        .iter()
        .map(|info| (info.auth_scheme.as_str(), info.user.as_str()))
        .collect();
    assert_eq!(users, [("digest", "alice"), ("ip", "127.0.0.1")]);
    let outcome = sim.send(
        &stranger,
        Request::Auth(AuthPacket::new("kerberos", b"x".to_vec())),
    );
    assert_eq!(
        outcome.reply_to(stranger.connection).unwrap().result,
        Err(ErrorCode::AuthFailed)
    );
    assert!(outcome.closes(stranger.connection));
}

#[test]
fn close_session_deletes_ephemerals_then_replies_then_closes() {
    let mut sim = Sim::new();
    let owner = sim.connect(10_000);
    sim.create(&owner, "/a", CreateMode::Ephemeral).unwrap();
    sim.call(&owner, get_data("/a", true)).unwrap();
    let outcome = sim.send(&owner, Request::CloseSession);
    let kinds: Vec<&str> = outcome
        .deliveries
        .iter()
        .map(|delivery| match delivery.message {
            Message::Notification { .. } => "event",
            Message::Reply(_) => "reply",
            Message::Close => "close",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["event", "reply", "close"]);
    assert!(sim.model.session_ids().is_empty());
    assert!(sim.model.node("/a").is_none());
}

// What the conformance test (tests/conformance) found the model answering differently from a
// real server, one test per difference fixed.

#[test]
fn multi_read_sets_no_watches() {
    // The server reads a multiRead's steps back without their watch flags.
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/a", CreateMode::Persistent).unwrap();
    let read = Request::MultiRead(curator_wire::proto::MultiReadRequest {
        ops: vec![
            curator_wire::proto::MultiReadOp::GetData(GetDataRequest {
                path: "/a".into(),
                watch: true,
            }),
            curator_wire::proto::MultiReadOp::GetChildren(GetChildrenRequest {
                path: "/a".into(),
                watch: true,
            }),
        ],
    });
    assert!(sim.call(&client, read).is_ok());
    let outcome = sim.send(&client, set_data("/a", b"new", -1));
    assert!(outcome.events_to(client.connection).is_empty());
    let outcome = sim.send(&client, create("/a/b", CreateMode::Persistent));
    assert!(outcome.events_to(client.connection).is_empty());
}

#[test]
fn who_am_i_lists_identities_in_the_servers_order() {
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    for user in ["u2:p2", "u1:p1"] {
        let auth = Request::Auth(AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: user.as_bytes().to_vec(),
        });
        assert!(sim.call(&client, auth).is_ok());
    }
    let Ok(Response::WhoAmI(who)) = sim.call(&client, Request::WhoAmI) else {
        panic!("whoAmI")
    };
    let users: Vec<(String, String)> = who
        .client_info
        .into_iter()
        .map(|info| (info.auth_scheme, info.user))
        .collect();
    // As a ZooKeeper 3.9.3 server answers a connection from 127.0.0.1 (a hash set's order).
    let expected = [("digest", "u2"), ("digest", "u1"), ("ip", "127.0.0.1")]
        .map(|(scheme, user)| (scheme.to_owned(), user.to_owned()));
    assert_eq!(users, expected);
}

#[test]
fn the_empty_path_reads_as_the_root() {
    // ZooKeeper's DataTree keeps the root under "" too: reads of "" answer with the root,
    // writes refuse the path.
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    sim.create(&client, "/a", CreateMode::Persistent).unwrap();
    let root = sim.stat("/");
    assert_eq!(
        sim.call(
            &client,
            Request::Exists(ExistsRequest {
                path: String::new(),
                watch: false
            })
        ),
        Ok(Response::Stat(root))
    );
    let Ok(Response::GetChildren(children)) = sim.call(
        &client,
        Request::GetChildren(GetChildrenRequest {
            path: String::new(),
            watch: false,
        }),
    ) else {
        panic!("getChildren")
    };
    assert_eq!(children.children, ["a", "zookeeper"]);
    // getAllChildrenNumber counts the nodes whose path starts with "" + "/": the root too.
    let count = |sim: &mut Sim, path: &str| match sim.call(
        &client,
        Request::GetAllChildrenNumber(curator_wire::proto::GetAllChildrenNumberRequest {
            path: path.into(),
        }),
    ) {
        Ok(Response::GetAllChildrenNumber(count)) => count.total_number,
        other => panic!("{other:?}"),
    };
    assert_eq!((count(&mut sim, "/"), count(&mut sim, "")), (4, 5));
    assert_eq!(
        sim.call(&client, set_data("", b"x", -1)),
        Err(ErrorCode::BadArguments)
    );
    assert_eq!(
        sim.call(&client, create("", CreateMode::Persistent)),
        Err(ErrorCode::BadArguments)
    );
}

#[test]
fn create_ttl_without_a_ttl_mode_is_refused() {
    // With a TTL of 0 or more as a real server does; with a negative one a real server
    // accepts the request and then stops, failing to apply it: the model refuses it too.
    let mut sim = Sim::new();
    let client = sim.connect(10_000);
    for ttl in [-1, 0, 1_000] {
        let request = Request::CreateTtl(CreateTtlRequest {
            path: "/t".into(),
            data: Vec::new(),
            acl: Acl::open_unsafe(),
            mode: CreateMode::Persistent,
            ttl,
        });
        assert_eq!(
            sim.call(&client, request),
            Err(ErrorCode::BadArguments),
            "ttl {ttl}"
        );
    }
    assert!(sim.model.node("/t").is_none());
}
