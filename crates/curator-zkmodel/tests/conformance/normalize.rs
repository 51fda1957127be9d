//! What two servers may legitimately answer differently, taken out: each side's observations
//! are rewritten into text in which
//!
//! - zxids are named by first appearance (`z7`), and the first appearance also says where the
//!   new zxid falls among those seen before (`z7<3`: the fourth smallest so far), so two
//!   servers agree only when their zxids are the same up to an order-preserving renaming;
//! - session ids (and ephemeral owners) are named by the slot and generation that opened them;
//! - times are not compared across servers (each has its own clock); each side's stats must
//!   keep `ctime <= mtime`, and `ctime == mtime` while the node is unchanged (`mzxid == czxid`);
//! - lists whose order is a real server's hash order (children, ephemerals) are sorted.

use std::collections::{BTreeMap, HashMap};

use curator_wire::proto::{
    Acl, ErrorCode, MultiReadResult, MultiResult, Response, Stat, WatcherEvent,
};

use crate::client::Item;

/// One side's names.
#[derive(Debug, Default)]
pub(crate) struct Names {
    zxids: BTreeMap<i64, usize>,
    /// zxids of transactions that changed nothing and that the other side does not have, each
    /// named as the zxid before it (see `alias`).
    aliases: BTreeMap<i64, i64>,
    sessions: HashMap<i64, String>,
}

impl Names {
    /// From now on `zxid` reads as `as_zxid`: a transaction of this side that changed nothing
    /// and is not the other side's (a real server's container reaper may delete a node twice:
    /// the second delete fails, and a failed write still takes a zxid). Such a zxid is seen
    /// only as a server's last zxid in the headers of later replies.
    pub(crate) fn alias(&mut self, zxid: i64, as_zxid: i64) {
        self.aliases.insert(zxid, as_zxid);
    }

    /// Names a session (when it is opened).
    pub(crate) fn session(&mut self, id: i64, name: String) {
        self.sessions.insert(id, name);
    }

    fn zxid(&mut self, zxid: i64) -> String {
        if zxid <= 0 {
            return zxid.to_string();
        }
        let zxid = self.aliases.get(&zxid).copied().unwrap_or(zxid);
        if let Some(name) = self.zxids.get(&zxid) {
            return format!("z{name}");
        }
        let rank = self.zxids.range(..zxid).count();
        let name = self.zxids.len();
        self.zxids.insert(zxid, name);
        format!("z{name}<{rank}")
    }

    fn owner(&self, owner: i64) -> String {
        match self.sessions.get(&owner) {
            Some(name) => name.clone(),
            None if owner == 0 => "0".into(),
            None => format!("{owner:#x}"),
        }
    }

    fn stat(&mut self, stat: &Stat) -> String {
        let times = if stat.ctime > stat.mtime {
            "TIMES-BACKWARDS"
        } else if stat.mzxid == stat.czxid && stat.ctime != stat.mtime {
            "UNCHANGED-BUT-MTIME-MOVED"
        } else {
            "t"
        };
        format!(
            "stat(c={} m={} p={} v={} cv={} av={} owner={} len={} kids={} {times})",
            self.zxid(stat.czxid),
            self.zxid(stat.mzxid),
            self.zxid(stat.pzxid),
            stat.version,
            stat.cversion,
            stat.aversion,
            self.owner(stat.ephemeral_owner),
            stat.data_length,
            stat.num_children,
        )
    }

    fn response(&mut self, response: &Response) -> String {
        match response {
            Response::Empty => "empty".into(),
            Response::Create(create) => format!("create {}", create.path),
            Response::Create2(create) => {
                format!("create2 {} {}", create.path, self.stat(&create.stat))
            }
            Response::Stat(stat) => self.stat(stat),
            Response::GetData(get) => {
                format!("data {:?} {}", bytes(&get.data), self.stat(&get.stat))
            }
            Response::GetAcl(get) => format!("acl {} {}", acls(&get.acl), self.stat(&get.stat)),
            Response::GetChildren(get) => format!("children {:?}", sorted(&get.children)),
            Response::GetChildren2(get) => format!(
                "children2 {:?} {}",
                sorted(&get.children),
                self.stat(&get.stat)
            ),
            Response::Sync(sync) => format!("sync {}", sync.path),
            Response::Multi(multi) => {
                let results: Vec<String> = multi
                    .results
                    .iter()
                    .map(|result| match result {
                        MultiResult::Create(create) => format!("create {}", create.path),
                        MultiResult::Create2(create) => {
                            format!("create2 {} {}", create.path, self.stat(&create.stat))
                        }
                        MultiResult::Delete => "delete".into(),
                        MultiResult::SetData(stat) => format!("set {}", self.stat(stat)),
                        MultiResult::Check => "check".into(),
                        MultiResult::Error(code) => format!("error {code:?}"),
                    })
                    .collect();
                format!("multi [{}]", results.join(", "))
            }
            Response::MultiRead(read) => {
                let results: Vec<String> = read
                    .results
                    .iter()
                    .map(|result| match result {
                        MultiReadResult::GetData(get) => {
                            format!("data {:?} {}", bytes(&get.data), self.stat(&get.stat))
                        }
                        MultiReadResult::GetChildren(get) => {
                            format!("children {:?}", sorted(&get.children))
                        }
                        MultiReadResult::Error(code) => format!("error {code:?}"),
                    })
                    .collect();
                format!("multiRead [{}]", results.join(", "))
            }
            Response::AddWatch(answer) => format!("addWatch {:?}", answer.err),
            Response::Sasl(_) => "sasl".into(),
            Response::GetEphemerals(get) => format!("ephemerals {:?}", sorted(&get.ephemerals)),
            Response::GetAllChildrenNumber(get) => format!("allChildren {}", get.total_number),
            Response::WhoAmI(who) => {
                let ids: Vec<String> = who
                    .client_info
                    .iter()
                    .map(|info| format!("{}:{}", info.auth_scheme, info.user))
                    .collect();
                format!("whoAmI {ids:?}")
            }
        }
    }

    fn result(&mut self, result: &Result<Response, ErrorCode>) -> String {
        match result {
            Ok(response) => self.response(response),
            Err(code) => format!("ERR {code:?}"),
        }
    }

    fn event(&mut self, zxid: i64, event: &WatcherEvent) -> String {
        format!(
            "event {:?} {:?} {} zxid={}",
            event.event_type,
            event.state,
            event.path,
            self.zxid(zxid)
        )
    }

    /// One received item as text. `connected` names the session a handshake opens.
    pub(crate) fn item(&mut self, item: &Item, connected: Option<&str>) -> String {
        match item {
            Item::Connected(response) => {
                if let Some(name) = connected {
                    self.session(response.session_id, name.to_owned());
                }
                format!(
                    "connected timeout={} session={} passwd={}B ro={:?} proto={}",
                    response.timeout,
                    self.owner(response.session_id),
                    response.passwd.len(),
                    response.read_only,
                    response.protocol_version
                )
            }
            Item::Reply { xid, zxid, result } => {
                let zxid = self.zxid(*zxid);
                format!("reply xid={xid} zxid={zxid} {}", self.result(result))
            }
            Item::Event { zxid, event } => self.event(*zxid, event),
            Item::Closed => "closed".into(),
            Item::Garbled(what) => format!("GARBLED {what}"),
        }
    }
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names
}

fn bytes(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

fn acls(acl: &[Acl]) -> String {
    let acl: Vec<String> = acl
        .iter()
        .map(|acl| format!("{}:{}={:#x}", acl.id.scheme, acl.id.id, acl.perms.bits()))
        .collect();
    format!("{acl:?}")
}
