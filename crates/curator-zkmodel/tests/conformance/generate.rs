//! Seeded streams of operations over a small tree, so that collisions (NodeExists, NoNode,
//! NotEmpty, BadVersion, NoAuth) are frequent.

use curator_wire::proto::{
    Acl, AddWatchMode, AddWatchRequest, AuthPacket, CheckVersionRequest, CreateMode, CreateRequest,
    CreateTtlRequest, DeleteRequest, ExistsRequest, GetAclRequest, GetAllChildrenNumberRequest,
    GetChildrenRequest, GetDataRequest, GetEphemeralsRequest, Id, MultiOp, MultiReadOp,
    MultiReadRequest, MultiRequest, Perms, RemoveWatchesRequest, Request, SetAclRequest,
    SetDataRequest, SetWatches2, SyncRequest, WatcherType,
};
use curator_zkmodel::Model;

/// The two users sessions authenticate as (`digest` scheme).
pub(crate) const USERS: [(&str, &str); 2] = [("u1", "p1"), ("u2", "p2")];
/// TTL nodes live an hour: long enough never to be reaped during a run.
const LONG_TTL: i64 = 3_600_000;

/// One step of a stream.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A request on a session's connection.
    Call { session: usize, request: Request },
    /// closeSession, then a new session in the slot.
    Close { session: usize, reopen_timeout: i32 },
    /// The server expires the session (its connection dropped first), then a new session in
    /// the slot.
    Expire { session: usize, reopen_timeout: i32 },
    /// The session's connection drops; the session reconnects on a new one (its id, password
    /// and last zxid) and asks for `watches` again, relative to the zxid it had `back`
    /// operations before (so changes since then fire at once), as a client does after a
    /// connection loss.
    Reconnect {
        session: usize,
        back: usize,
        watches: SetWatches2,
    },
}

/// SplitMix64: small, seedable, and the same everywhere.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The generator of one seed's stream.
#[derive(Debug)]
pub(crate) struct Generator {
    rng: Rng,
    base: String,
    sessions: usize,
}

impl Generator {
    pub(crate) fn new(seed: u64, base: String) -> Generator {
        let mut rng = Rng::new(seed);
        let sessions = 2 + rng.below(3);
        Generator {
            rng,
            base,
            sessions,
        }
    }

    /// How many sessions the stream uses.
    pub(crate) fn sessions(&self) -> usize {
        self.sessions
    }

    /// The timeout a new session asks for.
    pub(crate) fn session_timeout(&mut self) -> i32 {
        *self.rng.pick(&[5_000, 30_000, 100_000])
    }

    /// The first operation: the base node everything lives under.
    pub(crate) fn first(&self) -> Op {
        Op::Call {
            session: 0,
            request: Request::Create(CreateRequest {
                path: self.base.clone(),
                data: b"base".to_vec(),
                acl: Acl::open_unsafe(),
                mode: CreateMode::Persistent,
            }),
        }
    }

    /// The next operation, given the model's tree (for versions that are right, and for the
    /// names of sequential nodes).
    pub(crate) fn next(&mut self, model: &Model) -> Op {
        let session = self.rng.below(self.sessions);
        let call = |request| Op::Call { session, request };
        let roll = self.rng.below(100);
        match roll {
            0..=21 => call(self.create(model)),
            22..=31 => {
                let path = self.path(model);
                let version = self.version(model, &path);
                call(Request::Delete(DeleteRequest { path, version }))
            }
            32..=41 => {
                let path = self.path(model);
                let version = self.version(model, &path);
                let data = self.data();
                call(Request::SetData(SetDataRequest {
                    path,
                    data,
                    version,
                }))
            }
            42..=47 => {
                let path = self.path(model);
                let watch = self.rng.chance(50);
                call(Request::Exists(ExistsRequest { path, watch }))
            }
            48..=53 => {
                let path = self.path(model);
                let watch = self.rng.chance(50);
                call(Request::GetData(GetDataRequest { path, watch }))
            }
            54..=59 => {
                let request = GetChildrenRequest {
                    path: self.path(model),
                    watch: self.rng.chance(50),
                };
                call(if self.rng.chance(50) {
                    Request::GetChildren(request)
                } else {
                    Request::GetChildren2(request)
                })
            }
            60..=64 => {
                let path = self.path(model);
                let mode = if self.rng.chance(50) {
                    AddWatchMode::Persistent
                } else {
                    AddWatchMode::PersistentRecursive
                };
                call(Request::AddWatch(AddWatchRequest { path, mode }))
            }
            65..=69 => {
                let request = RemoveWatchesRequest {
                    path: self.path(model),
                    watcher_type: *self.rng.pick(&[
                        WatcherType::Children,
                        WatcherType::Data,
                        WatcherType::Any,
                        WatcherType::Persistent,
                        WatcherType::PersistentRecursive,
                    ]),
                };
                call(if self.rng.chance(30) {
                    Request::CheckWatches(request)
                } else {
                    Request::RemoveWatches(request)
                })
            }
            70..=77 => call(self.multi(model)),
            78..=80 => {
                let steps = 1 + self.rng.below(3);
                let ops = (0..steps)
                    .map(|_| {
                        let path = self.path(model);
                        let watch = self.rng.chance(25);
                        if self.rng.chance(50) {
                            MultiReadOp::GetData(GetDataRequest { path, watch })
                        } else {
                            MultiReadOp::GetChildren(GetChildrenRequest { path, watch })
                        }
                    })
                    .collect();
                call(Request::MultiRead(MultiReadRequest { ops }))
            }
            81..=82 => call(Request::Sync(SyncRequest {
                path: self.path(model),
            })),
            83..=84 => {
                let path = match self.rng.below(3) {
                    0 => String::new(),
                    1 => "/".into(),
                    _ => self.path(model),
                };
                call(Request::GetEphemerals(GetEphemeralsRequest { path }))
            }
            85..=86 => call(Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
                path: self.path(model),
            })),
            87..=88 => call(Request::GetAcl(GetAclRequest {
                path: self.path(model),
            })),
            89..=91 => {
                let path = self.path(model);
                let version = match model.node(&path) {
                    Some((_, stat)) => self.pick_version(stat.aversion),
                    None => -1,
                };
                call(Request::SetAcl(SetAclRequest {
                    path,
                    acl: self.acl(),
                    version,
                }))
            }
            92..=93 => {
                let (user, password) = *self.rng.pick(&USERS);
                call(Request::Auth(AuthPacket {
                    auth_type: 0,
                    scheme: "digest".into(),
                    auth: format!("{user}:{password}").into_bytes(),
                }))
            }
            94..=95 => call(Request::WhoAmI),
            96 => Op::Close {
                session,
                reopen_timeout: self.session_timeout(),
            },
            97..=98 => {
                let mut paths = |most: usize| -> Vec<String> {
                    let n = self.rng.below(most + 1);
                    (0..n).map(|_| self.path(model)).collect()
                };
                let watches = SetWatches2 {
                    relative_zxid: 0,
                    data_watches: paths(3),
                    exist_watches: paths(3),
                    child_watches: paths(3),
                    persistent_watches: paths(1),
                    persistent_recursive_watches: paths(1),
                };
                Op::Reconnect {
                    session,
                    back: 1 + self.rng.below(12),
                    watches,
                }
            }
            _ => Op::Expire {
                session,
                reopen_timeout: self.session_timeout(),
            },
        }
    }

    fn create(&mut self, model: &Model) -> Request {
        let path = self.path(model);
        let data = self.data();
        let acl = self.acl();
        match self.rng.below(10) {
            0..=4 => {
                let mode = *self.rng.pick(&[
                    CreateMode::Persistent,
                    CreateMode::Persistent,
                    CreateMode::Ephemeral,
                    CreateMode::PersistentSequential,
                    CreateMode::EphemeralSequential,
                    CreateMode::Container,
                    CreateMode::PersistentWithTtl,
                ]);
                let create = CreateRequest {
                    path,
                    data,
                    acl,
                    mode,
                };
                if self.rng.chance(50) {
                    Request::Create(create)
                } else {
                    Request::Create2(create)
                }
            }
            5..=6 => Request::CreateContainer(CreateRequest {
                path,
                data,
                acl,
                mode: if self.rng.chance(90) {
                    CreateMode::Container
                } else {
                    CreateMode::Persistent
                },
            }),
            _ => {
                let mode = *self.rng.pick(&[
                    CreateMode::PersistentWithTtl,
                    CreateMode::PersistentSequentialWithTtl,
                    CreateMode::PersistentWithTtl,
                    CreateMode::Persistent,
                ]);
                let ttl_mode = mode != CreateMode::Persistent;
                let ttl = match self.rng.below(10) {
                    0 => 0,
                    // Not with a mode without a TTL: a real server accepts that request and
                    // then stops, failing to apply it (see the model's README).
                    1 if ttl_mode => -1,
                    2 => i64::MAX,
                    _ => LONG_TTL,
                };
                Request::CreateTtl(CreateTtlRequest {
                    path,
                    data,
                    acl,
                    mode,
                    ttl,
                })
            }
        }
    }

    fn multi(&mut self, model: &Model) -> Request {
        let steps = 1 + self.rng.below(4);
        let ops = (0..steps)
            .map(|_| {
                let path = self.path(model);
                match self.rng.below(10) {
                    0..=3 => {
                        let create = CreateRequest {
                            path,
                            data: self.data(),
                            acl: if self.rng.chance(80) {
                                Acl::open_unsafe()
                            } else {
                                self.acl()
                            },
                            mode: *self.rng.pick(&[
                                CreateMode::Persistent,
                                CreateMode::Ephemeral,
                                CreateMode::PersistentSequential,
                                CreateMode::EphemeralSequential,
                            ]),
                        };
                        match self.rng.below(4) {
                            0 => MultiOp::Create(create),
                            1 => MultiOp::Create2(create),
                            2 => MultiOp::CreateContainer(CreateRequest {
                                mode: CreateMode::Container,
                                ..create
                            }),
                            _ => MultiOp::CreateTtl(CreateTtlRequest {
                                path: create.path,
                                data: create.data,
                                acl: create.acl,
                                mode: CreateMode::PersistentWithTtl,
                                ttl: LONG_TTL,
                            }),
                        }
                    }
                    4..=5 => {
                        let version = self.version(model, &path);
                        MultiOp::Delete(DeleteRequest { path, version })
                    }
                    6..=7 => {
                        let version = self.version(model, &path);
                        MultiOp::SetData(SetDataRequest {
                            path,
                            data: self.data(),
                            version,
                        })
                    }
                    _ => {
                        let version = self.version(model, &path);
                        MultiOp::Check(CheckVersionRequest { path, version })
                    }
                }
            })
            .collect();
        Request::Multi(MultiRequest { ops })
    }

    /// A path: mostly from a fixed small tree under the base, sometimes an existing node (so
    /// sequential ones are hit), rarely a special or invalid one.
    fn path(&mut self, model: &Model) -> String {
        let roll = self.rng.below(100);
        if roll < 3 {
            let odd = [
                "/zookeeper".to_owned(),
                "/zookeeper/quota".to_owned(),
                "/zookeeper/x".to_owned(),
                format!("{}/a/", self.base),
                format!("{}//a", self.base),
                format!("{}/a/.", self.base),
                "".to_owned(),
            ];
            return self.rng.pick(&odd).clone();
        }
        if roll < 25 {
            let existing = existing(model, &self.base);
            if !existing.is_empty() {
                return self.rng.pick(&existing).clone();
            }
        }
        let depth = self.rng.below(4);
        let mut path = self.base.clone();
        for _ in 0..depth {
            path.push('/');
            let name: &&str = self.rng.pick(&["a", "b"]);
            path.push_str(name);
        }
        path
    }

    fn data(&mut self) -> Vec<u8> {
        match self.rng.below(4) {
            0 => Vec::new(),
            1 => b"x".to_vec(),
            2 => b"hello".to_vec(),
            _ => format!("d{}", self.rng.below(1000)).into_bytes(),
        }
    }

    fn version(&mut self, model: &Model, path: &str) -> i32 {
        match model.node(path) {
            Some((_, stat)) => self.pick_version(stat.version),
            None => *self.rng.pick(&[-1, 0, 3]),
        }
    }

    fn pick_version(&mut self, current: i32) -> i32 {
        match self.rng.below(10) {
            0..=3 => -1,
            4..=7 => current,
            8 => current + 1,
            _ => -2,
        }
    }

    fn acl(&mut self) -> Vec<Acl> {
        let digest = |user: &str, password: &str| {
            Id::new(
                "digest",
                curator_zkmodel::acl::digest(&format!("{user}:{password}")),
            )
        };
        let roll = self.rng.below(100);
        match roll {
            0..=69 => Acl::open_unsafe(),
            70..=74 => vec![Acl {
                perms: Perms::READ,
                id: Id::new("world", "anyone"),
            }],
            75..=79 => vec![
                Acl {
                    perms: Perms::ALL,
                    id: digest(USERS[0].0, USERS[0].1),
                },
                Acl {
                    perms: Perms::READ,
                    id: Id::new("world", "anyone"),
                },
            ],
            80..=84 => vec![Acl {
                perms: Perms::ALL,
                id: digest(USERS[1].0, USERS[1].1),
            }],
            85..=89 => vec![Acl {
                perms: Perms::ALL,
                id: Id::new("auth", ""),
            }],
            90..=92 => vec![Acl {
                perms: Perms::READ | Perms::WRITE | Perms::CREATE | Perms::DELETE,
                id: Id::new("ip", "127.0.0.1"),
            }],
            93..=95 => Vec::new(),
            96..=97 => vec![Acl {
                perms: Perms::ALL,
                id: Id::new("nosuchscheme", "x"),
            }],
            _ => vec![Acl {
                perms: Perms::ALL,
                id: Id::new("world", "someone"),
            }],
        }
    }
}

/// Every node under `base` (the base too), in the model's tree.
pub(crate) fn existing(model: &Model, base: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![base.to_owned()];
    while let Some(path) = stack.pop() {
        if let Some(children) = model.children(&path) {
            for child in children {
                stack.push(format!("{path}/{child}"));
            }
            found.push(path);
        }
    }
    found.sort();
    found
}
