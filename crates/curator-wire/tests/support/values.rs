//! Random values of every record, from a seeded generator (so a failure replays from its seed).
#![allow(dead_code, reason = "each test file uses part of it")]

use curator_wire::codec::{ReplyFrame, RequestFrame};
use curator_wire::proto::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A seeded source of record values.
pub(crate) struct Values {
    rng: StdRng,
}

impl Values {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    pub(crate) fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    pub(crate) fn rng_byte(&mut self) -> u8 {
        self.rng.random()
    }

    pub(crate) fn flip(&mut self) -> bool {
        self.rng.random_bool(0.5)
    }

    pub(crate) fn i32(&mut self) -> i32 {
        match self.below(6) {
            0 => [0, -1, 1, i32::MAX, i32::MIN][self.below(5)],
            1 => self.rng.random_range(-3..100),
            _ => self.rng.random(),
        }
    }

    pub(crate) fn i64(&mut self) -> i64 {
        match self.below(6) {
            0 => [0, -1, 1, i64::MAX, i64::MIN][self.below(5)],
            1 => self.rng.random_range(-3..100),
            _ => self.rng.random(),
        }
    }

    pub(crate) fn bytes(&mut self) -> Vec<u8> {
        let len = self.below(17);
        (0..len).map(|_| self.rng.random()).collect()
    }

    pub(crate) fn string(&mut self) -> String {
        const PIECES: [&str; 8] = ["/", "a", "zk", "-", "0000000001", "é", "节点", "🦀"];
        let parts = self.below(6);
        (0..parts)
            .map(|_| PIECES[self.below(PIECES.len())])
            .collect()
    }

    pub(crate) fn opt_string(&mut self) -> Option<String> {
        self.flip().then(|| self.string())
    }

    pub(crate) fn strings(&mut self) -> Vec<String> {
        let len = self.below(5);
        (0..len).map(|_| self.string()).collect()
    }

    fn pick<T: Copy>(&mut self, all: &[T]) -> T {
        all[self.below(all.len())]
    }

    pub(crate) fn op_code(&mut self) -> OpCode {
        self.pick(OpCode::ALL)
    }

    pub(crate) fn error_code(&mut self) -> ErrorCode {
        if self.below(8) == 0 {
            ErrorCode::from_code(-self.rng.random_range(0..=i32::MAX)).unwrap()
        } else {
            self.pick(ErrorCode::NAMED)
        }
    }

    pub(crate) fn failure(&mut self) -> ErrorCode {
        loop {
            let code = self.error_code();
            if !code.is_ok() {
                return code;
            }
        }
    }

    pub(crate) fn create_mode(&mut self) -> CreateMode {
        self.pick(CreateMode::ALL)
    }

    pub(crate) fn stat(&mut self) -> Stat {
        Stat {
            czxid: self.i64(),
            mzxid: self.i64(),
            ctime: self.i64(),
            mtime: self.i64(),
            version: self.i32(),
            cversion: self.i32(),
            aversion: self.i32(),
            ephemeral_owner: self.i64(),
            data_length: self.i32(),
            num_children: self.i32(),
            pzxid: self.i64(),
        }
    }

    pub(crate) fn id(&mut self) -> Id {
        Id::new(self.string(), self.string())
    }

    pub(crate) fn acl(&mut self) -> Vec<Acl> {
        let len = self.below(3);
        (0..len)
            .map(|_| Acl {
                perms: Perms::from_bits(self.i32()),
                id: self.id(),
            })
            .collect()
    }

    pub(crate) fn client_info(&mut self) -> ClientInfo {
        ClientInfo {
            auth_scheme: self.string(),
            user: self.string(),
        }
    }

    pub(crate) fn connect_request(&mut self) -> ConnectRequest {
        ConnectRequest {
            protocol_version: self.i32(),
            last_zxid_seen: self.i64(),
            timeout: self.i32(),
            session_id: self.i64(),
            passwd: self.bytes(),
            read_only: self.flip().then(|| self.flip()),
        }
    }

    pub(crate) fn connect_response(&mut self) -> ConnectResponse {
        ConnectResponse {
            protocol_version: self.i32(),
            timeout: self.i32(),
            session_id: self.i64(),
            passwd: self.bytes(),
            read_only: self.flip().then(|| self.flip()),
        }
    }

    pub(crate) fn request_header(&mut self) -> RequestHeader {
        RequestHeader {
            xid: self.i32(),
            op_code: self.op_code(),
        }
    }

    pub(crate) fn reply_header(&mut self) -> ReplyHeader {
        ReplyHeader {
            xid: self.i32(),
            zxid: self.i64(),
            err: self.error_code(),
        }
    }

    pub(crate) fn create_request(&mut self) -> CreateRequest {
        CreateRequest {
            path: self.string(),
            data: self.bytes(),
            acl: self.acl(),
            mode: self.create_mode(),
        }
    }

    pub(crate) fn create_ttl_request(&mut self) -> CreateTtlRequest {
        CreateTtlRequest {
            path: self.string(),
            data: self.bytes(),
            acl: self.acl(),
            mode: self.create_mode(),
            ttl: self.i64(),
        }
    }

    pub(crate) fn delete_request(&mut self) -> DeleteRequest {
        DeleteRequest {
            path: self.string(),
            version: self.i32(),
        }
    }

    pub(crate) fn exists_request(&mut self) -> ExistsRequest {
        ExistsRequest {
            path: self.string(),
            watch: self.flip(),
        }
    }

    pub(crate) fn get_data_request(&mut self) -> GetDataRequest {
        GetDataRequest {
            path: self.string(),
            watch: self.flip(),
        }
    }

    pub(crate) fn get_children_request(&mut self) -> GetChildrenRequest {
        GetChildrenRequest {
            path: self.string(),
            watch: self.flip(),
        }
    }

    pub(crate) fn check_version_request(&mut self) -> CheckVersionRequest {
        CheckVersionRequest {
            path: self.string(),
            version: self.i32(),
        }
    }

    pub(crate) fn set_data_request(&mut self) -> SetDataRequest {
        SetDataRequest {
            path: self.string(),
            data: self.bytes(),
            version: self.i32(),
        }
    }

    pub(crate) fn set_acl_request(&mut self) -> SetAclRequest {
        SetAclRequest {
            path: self.string(),
            acl: self.acl(),
            version: self.i32(),
        }
    }

    pub(crate) fn reconfig_request(&mut self) -> ReconfigRequest {
        ReconfigRequest {
            joining_servers: self.opt_string(),
            leaving_servers: self.opt_string(),
            new_members: self.opt_string(),
            cur_config_id: self.i64(),
        }
    }

    pub(crate) fn remove_watches_request(&mut self) -> RemoveWatchesRequest {
        RemoveWatchesRequest {
            path: self.string(),
            watcher_type: self.pick(WatcherType::ALL),
        }
    }

    pub(crate) fn add_watch_request(&mut self) -> AddWatchRequest {
        AddWatchRequest {
            path: self.string(),
            mode: self.pick(AddWatchMode::ALL),
        }
    }

    pub(crate) fn auth_packet(&mut self) -> AuthPacket {
        AuthPacket {
            auth_type: self.i32(),
            scheme: self.string(),
            auth: self.bytes(),
        }
    }

    pub(crate) fn set_watches(&mut self) -> SetWatches {
        SetWatches {
            relative_zxid: self.i64(),
            data_watches: self.strings(),
            exist_watches: self.strings(),
            child_watches: self.strings(),
        }
    }

    pub(crate) fn set_watches2(&mut self) -> SetWatches2 {
        SetWatches2 {
            relative_zxid: self.i64(),
            data_watches: self.strings(),
            exist_watches: self.strings(),
            child_watches: self.strings(),
            persistent_watches: self.strings(),
            persistent_recursive_watches: self.strings(),
        }
    }

    pub(crate) fn multi_request(&mut self) -> MultiRequest {
        let len = self.below(5);
        let ops = (0..len)
            .map(|_| match self.below(7) {
                0 => MultiOp::Create(self.create_request()),
                1 => MultiOp::Create2(self.create_request()),
                2 => MultiOp::CreateContainer(self.create_request()),
                3 => MultiOp::CreateTtl(self.create_ttl_request()),
                4 => MultiOp::Delete(self.delete_request()),
                5 => MultiOp::SetData(self.set_data_request()),
                _ => MultiOp::Check(self.check_version_request()),
            })
            .collect();
        MultiRequest { ops }
    }

    pub(crate) fn multi_read_request(&mut self) -> MultiReadRequest {
        let len = self.below(5);
        let ops = (0..len)
            .map(|_| {
                if self.flip() {
                    MultiReadOp::GetData(self.get_data_request())
                } else {
                    MultiReadOp::GetChildren(self.get_children_request())
                }
            })
            .collect();
        MultiReadRequest { ops }
    }

    pub(crate) fn request(&mut self) -> Request {
        match self.below(28) {
            0 => Request::Create(self.create_request()),
            1 => Request::Create2(self.create_request()),
            2 => Request::CreateContainer(self.create_request()),
            3 => Request::CreateTtl(self.create_ttl_request()),
            4 => Request::Delete(self.delete_request()),
            5 => Request::Exists(self.exists_request()),
            6 => Request::GetData(self.get_data_request()),
            7 => Request::SetData(self.set_data_request()),
            8 => Request::GetAcl(GetAclRequest {
                path: self.string(),
            }),
            9 => Request::SetAcl(self.set_acl_request()),
            10 => Request::GetChildren(self.get_children_request()),
            11 => Request::GetChildren2(self.get_children_request()),
            12 => Request::Sync(SyncRequest {
                path: self.string(),
            }),
            13 => Request::Ping,
            14 => Request::Multi(self.multi_request()),
            15 => Request::MultiRead(self.multi_read_request()),
            16 => Request::Reconfig(self.reconfig_request()),
            17 => Request::CheckWatches(self.remove_watches_request()),
            18 => Request::RemoveWatches(self.remove_watches_request()),
            19 => Request::Auth(self.auth_packet()),
            20 => Request::SetWatches(self.set_watches()),
            21 => Request::SetWatches2(self.set_watches2()),
            22 => Request::Sasl(GetSaslRequest {
                token: self.bytes(),
            }),
            23 => Request::GetEphemerals(GetEphemeralsRequest {
                path: self.string(),
            }),
            24 => Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
                path: self.string(),
            }),
            25 => Request::AddWatch(self.add_watch_request()),
            26 => Request::WhoAmI,
            _ => Request::CloseSession,
        }
    }

    pub(crate) fn get_data_response(&mut self) -> GetDataResponse {
        GetDataResponse {
            data: self.bytes(),
            stat: self.stat(),
        }
    }

    pub(crate) fn create2_response(&mut self) -> Create2Response {
        Create2Response {
            path: self.string(),
            stat: self.stat(),
        }
    }

    pub(crate) fn multi_response(&mut self) -> MultiResponse {
        let len = self.below(5);
        let results = (0..len)
            .map(|_| match self.below(6) {
                0 => MultiResult::Create(CreateResponse {
                    path: self.string(),
                }),
                1 => MultiResult::Create2(self.create2_response()),
                2 => MultiResult::Delete,
                3 => MultiResult::SetData(self.stat()),
                4 => MultiResult::Check,
                _ => MultiResult::Error(self.error_code()),
            })
            .collect();
        MultiResponse { results }
    }

    pub(crate) fn multi_read_response(&mut self) -> MultiReadResponse {
        let len = self.below(5);
        let results = (0..len)
            .map(|_| match self.below(3) {
                0 => MultiReadResult::GetData(self.get_data_response()),
                1 => MultiReadResult::GetChildren(GetChildrenResponse {
                    children: self.strings(),
                }),
                _ => MultiReadResult::Error(self.error_code()),
            })
            .collect();
        MultiReadResponse { results }
    }

    pub(crate) fn watcher_event(&mut self) -> WatcherEvent {
        WatcherEvent {
            event_type: self.pick(EventType::ALL),
            state: self.pick(KeeperState::ALL),
            path: self.string(),
        }
    }

    /// A request and a successful reply of the kind its opcode is answered with.
    pub(crate) fn exchange(&mut self) -> (Request, Response) {
        let request = self.request();
        let response = self.response_to(request.op_code());
        (request, response)
    }

    /// A successful reply to a request with `op`.
    pub(crate) fn response_to(&mut self, op: OpCode) -> Response {
        match op {
            OpCode::Create => Response::Create(CreateResponse {
                path: self.string(),
            }),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => {
                Response::Create2(self.create2_response())
            }
            OpCode::Exists | OpCode::SetData | OpCode::SetAcl => Response::Stat(self.stat()),
            OpCode::GetData | OpCode::Reconfig => Response::GetData(self.get_data_response()),
            OpCode::GetAcl => Response::GetAcl(GetAclResponse {
                acl: self.acl(),
                stat: self.stat(),
            }),
            OpCode::GetChildren => Response::GetChildren(GetChildrenResponse {
                children: self.strings(),
            }),
            OpCode::GetChildren2 => Response::GetChildren2(GetChildren2Response {
                children: self.strings(),
                stat: self.stat(),
            }),
            OpCode::Sync => Response::Sync(SyncResponse {
                path: self.string(),
            }),
            OpCode::Multi => Response::Multi(self.multi_response()),
            OpCode::MultiRead => Response::MultiRead(self.multi_read_response()),
            OpCode::AddWatch => Response::AddWatch(ErrorResponse {
                err: self.error_code(),
            }),
            OpCode::Sasl => Response::Sasl(SetSaslResponse {
                token: self.bytes(),
            }),
            OpCode::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse {
                ephemerals: self.strings(),
            }),
            OpCode::GetAllChildrenNumber => {
                Response::GetAllChildrenNumber(GetAllChildrenNumberResponse {
                    total_number: self.i32(),
                })
            }
            OpCode::WhoAmI => Response::WhoAmI(WhoAmIResponse {
                client_info: (0..self.below(3)).map(|_| self.client_info()).collect(),
            }),
            _ => Response::Empty,
        }
    }

    /// A frame a server may send after the handshake: a reply, an error or a notification.
    pub(crate) fn reply_frame(&mut self) -> ReplyFrame {
        let (xid, zxid) = (self.i32(), self.i64());
        match self.below(4) {
            0 => ReplyFrame::error(xid, zxid, self.failure()),
            1 => ReplyFrame::notification(zxid, &self.watcher_event()),
            _ => {
                let op = self.op_code();
                ReplyFrame::ok(xid, zxid, &self.response_to(op))
            }
        }
    }

    pub(crate) fn request_frame(&mut self) -> RequestFrame {
        let xid = self.i32();
        RequestFrame::new(xid, &self.request())
    }

    /// Damages `bytes` a few times.
    pub(crate) fn mutate(&mut self, mut bytes: Vec<u8>) -> Vec<u8> {
        const EDGES: [i32; 9] = [-1, -2, 0, 1, 4, 0xfffff, 0x10_0000, i32::MAX, i32::MIN];
        for _ in 0..self.below(5) {
            let len = bytes.len();
            match self.below(6) {
                0 if len > 0 => {
                    let at = self.below(len);
                    bytes[at] ^= 1 << self.below(8);
                }
                1 if len > 0 => bytes.truncate(self.below(len)),
                2 => {
                    let at = self.below(len + 1);
                    let extra: Vec<u8> = (0..1 + self.below(8)).map(|_| self.rng_byte()).collect();
                    bytes.splice(at..at, extra);
                }
                3 if len >= 4 => {
                    let at = self.below(len - 3);
                    let edge = EDGES[self.below(EDGES.len())];
                    bytes[at..at + 4].copy_from_slice(&edge.to_be_bytes());
                }
                4 if len > 0 => {
                    let from = self.below(len);
                    let to = from + self.below(len - from + 1);
                    bytes.drain(from..to);
                }
                _ if len > 0 => {
                    let at = self.below(len);
                    bytes[at] = self.rng_byte();
                }
                _ => bytes.push(self.rng_byte()),
            }
        }
        bytes
    }
}
