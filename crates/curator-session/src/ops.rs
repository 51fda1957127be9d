//! The operations: each sends its request when called and returns a future of the reply.
//!
//! Paths are the caller's; the session's chroot is put in front of them on the way out and
//! taken off the paths that come back (created nodes, events, ephemerals), except for
//! `/zookeeper/config`, which lives outside every chroot.

use std::future::Future;

use curator_wire::proto::{Acl, Id};
use curator_wire::proto::{
    AddWatchMode, AddWatchRequest, CONFIG_NODE, ClientInfo, CreateMode, CreateRequest,
    CreateTtlRequest, DeleteRequest, ErrorCode, ExistsRequest, GetAclRequest,
    GetAllChildrenNumberRequest, GetChildrenRequest, GetDataRequest, GetEphemeralsRequest, MultiOp,
    MultiReadOp, MultiReadRequest, MultiReadResult, MultiRequest, MultiResult, Perms,
    ReconfigRequest, Request, Response, SetAclRequest, SetDataRequest, Stat, SyncRequest,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::session::{Session, WatchSpec};
use crate::watch::{Intent, OneshotWatch, PersistentWatch, Sender};

/// `world:anyone` with every permission (ZooKeeper's `OPEN_ACL_UNSAFE`).
///
/// ```
/// assert_eq!(curator_session::open_acl()[0].id.scheme, "world");
/// ```
pub fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: "world".into(),
            id: "anyone".into(),
        },
    }]
}

/// `path` without the chroot in front (`/` for the chroot itself); unchanged when it is not
/// under the chroot.
pub(crate) fn strip_chroot(chroot: Option<&str>, path: String) -> String {
    let Some(chroot) = chroot else {
        return path;
    };
    match path.strip_prefix(chroot) {
        Some("") => "/".to_owned(),
        Some(rest) if rest.starts_with('/') => rest.to_owned(),
        _ => path,
    }
}

fn unexpected(what: &str) -> Error {
    Error::UnexpectedReply(format!("not {what}"))
}

impl Session {
    fn server_path(&self, path: &str) -> String {
        match self.chroot() {
            None => path.to_owned(),
            Some(chroot) if path == "/" => chroot.to_owned(),
            Some(chroot) => format!("{chroot}{path}"),
        }
    }

    /// Sends `request`; `decode` reads the reply.
    fn call<T, D>(
        &self,
        request: Request,
        decode: D,
    ) -> impl Future<Output = Result<T>> + Send + 'static + use<T, D>
    where
        T: Send + 'static,
        D: FnOnce(std::result::Result<Response, ErrorCode>) -> Result<T> + Send + 'static,
    {
        let op = request.op_code();
        let submitted = self.shared.submit(request, None);
        async move {
            let reply = submitted?.reply.await.map_err(|_| Error::Closed)??;
            let body = reply
                .decode(op)
                .map_err(|error| Error::UnexpectedReply(error.to_string()))?;
            decode(body)
        }
    }

    /// Sends a read that sets a one-shot watch; the watch is handed out with the reply.
    fn call_watched<T, D>(
        &self,
        request: Request,
        path: String,
        intent: Intent,
        decode: D,
    ) -> impl Future<Output = Result<(T, OneshotWatch)>> + Send + 'static + use<T, D>
    where
        T: Send + 'static,
        D: FnOnce(std::result::Result<Response, ErrorCode>) -> Result<T> + Send + 'static,
    {
        let op = request.op_code();
        let (sender, receiver) = oneshot::channel();
        let spec = WatchSpec {
            path,
            intent,
            sender: Sender::Once(sender),
        };
        let submitted = self.shared.submit(request, Some(spec));
        let session = self.shared.weak();
        async move {
            let submitted = submitted?;
            // Made before the reply is read: if the caller gives up, the watch is removed.
            let watch = OneshotWatch::new(receiver, submitted.watch_id.unwrap_or(0), session);
            let reply = submitted.reply.await.map_err(|_| Error::Closed)??;
            let body = reply
                .decode(op)
                .map_err(|error| Error::UnexpectedReply(error.to_string()))?;
            Ok((decode(body)?, watch))
        }
    }

    /// Creates a node (create2, createContainer or createTTL by `mode`); returns its path
    /// (with the sequence number for sequential modes) and its stat. `ttl` (milliseconds) is
    /// for the TTL modes only.
    ///
    /// # Errors
    /// [`Error::Server`] with `NodeExists`, `NoNode` (no parent), `NoAuth`, ...
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        acl: Vec<Acl>,
        mode: CreateMode,
        ttl: Option<i64>,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static + use<> {
        let path = self.server_path(path);
        let data = data.to_vec();
        let request = match mode {
            CreateMode::Container => Request::CreateContainer(CreateRequest {
                path,
                data,
                acl,
                mode,
            }),
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl => {
                Request::CreateTtl(CreateTtlRequest {
                    path,
                    data,
                    acl,
                    mode,
                    ttl: ttl.unwrap_or(0),
                })
            }
            _ => Request::Create2(CreateRequest {
                path,
                data,
                acl,
                mode,
            }),
        };
        let chroot = self.chroot().map(str::to_owned);
        self.call(request, move |body| {
            match body.map_err(Error::from_code)? {
                Response::Create2(created) => {
                    Ok((strip_chroot(chroot.as_deref(), created.path), created.stat))
                }
                Response::Create(created) => Ok((
                    strip_chroot(chroot.as_deref(), created.path),
                    Stat::default(),
                )),
                _ => Err(unexpected("a create's reply")),
            }
        })
    }

    /// Deletes a node if its version is `version` (-1: any).
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, `BadVersion`, `NotEmpty`, ...
    pub fn delete(
        &self,
        path: &str,
        version: i32,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let request = Request::Delete(DeleteRequest {
            path: self.server_path(path),
            version,
        });
        self.call(request, |body| body.map(drop).map_err(Error::from_code))
    }

    /// The node's stat, or `None` when it does not exist.
    ///
    /// # Errors
    /// Connection and session errors, [`Error::Server`] with `NoAuth` (3.9 checks READ).
    pub fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'static + use<> {
        let request = Request::Exists(ExistsRequest {
            path: self.server_path(path),
            watch: false,
        });
        self.call(request, exists_reply)
    }

    /// [`exists`](Self::exists), with a one-shot watch for the node's creation, change or
    /// deletion.
    ///
    /// # Errors
    /// As [`exists`](Self::exists).
    pub fn exists_watched(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatch)>> + Send + 'static + use<> {
        let server_path = self.server_path(path);
        let request = Request::Exists(ExistsRequest {
            path: server_path.clone(),
            watch: true,
        });
        self.call_watched(request, server_path, Intent::Exists, exists_reply)
    }

    /// The node's data and stat.
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, `NoAuth`, ...
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'static + use<> {
        let request = Request::GetData(GetDataRequest {
            path: self.server_path(path),
            watch: false,
        });
        self.call(request, data_reply)
    }

    /// [`get_data`](Self::get_data), with a one-shot watch for a change or deletion.
    ///
    /// # Errors
    /// As [`get_data`](Self::get_data) (no watch is set when it fails).
    pub fn get_data_watched(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<((Vec<u8>, Stat), OneshotWatch)>> + Send + 'static + use<>
    {
        let server_path = self.server_path(path);
        let request = Request::GetData(GetDataRequest {
            path: server_path.clone(),
            watch: true,
        });
        self.call_watched(request, server_path, Intent::Data, data_reply)
    }

    /// Sets the node's data if its version is `version` (-1: any); returns the new stat.
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, `BadVersion`, ...
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        version: i32,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<> {
        let request = Request::SetData(SetDataRequest {
            path: self.server_path(path),
            data: data.to_vec(),
            version,
        });
        self.call(request, stat_reply)
    }

    /// The node's children (names) and its stat.
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, `NoAuth`, ...
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send + 'static + use<> {
        let request = Request::GetChildren2(GetChildrenRequest {
            path: self.server_path(path),
            watch: false,
        });
        self.call(request, children_reply)
    }

    /// [`get_children`](Self::get_children), with a one-shot watch for a change of children or
    /// the node's deletion.
    ///
    /// # Errors
    /// As [`get_children`](Self::get_children).
    pub fn get_children_watched(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<((Vec<String>, Stat), OneshotWatch)>> + Send + 'static + use<>
    {
        let server_path = self.server_path(path);
        let request = Request::GetChildren2(GetChildrenRequest {
            path: server_path.clone(),
            watch: true,
        });
        self.call_watched(request, server_path, Intent::Child, children_reply)
    }

    /// This session's ephemeral nodes whose paths start with `prefix` (a string prefix).
    ///
    /// # Errors
    /// Connection and session errors.
    pub fn get_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static + use<> {
        let request = Request::GetEphemerals(GetEphemeralsRequest {
            path: self.server_path(prefix),
        });
        let chroot = self.chroot().map(str::to_owned);
        self.call(request, move |body| {
            match body.map_err(Error::from_code)? {
                Response::GetEphemerals(response) => Ok(response
                    .ephemerals
                    .into_iter()
                    .map(|path| strip_chroot(chroot.as_deref(), path))
                    .collect()),
                _ => Err(unexpected("a getEphemerals reply")),
            }
        })
    }

    /// The number of nodes below `path` (not counting it).
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, ...
    pub fn get_all_children_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<i32>> + Send + 'static + use<> {
        let request = Request::GetAllChildrenNumber(GetAllChildrenNumberRequest {
            path: self.server_path(path),
        });
        self.call(request, |body| match body.map_err(Error::from_code)? {
            Response::GetAllChildrenNumber(response) => Ok(response.total_number),
            _ => Err(unexpected("a getAllChildrenNumber reply")),
        })
    }

    /// The node's ACL and stat.
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, ...
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'static + use<> {
        let request = Request::GetAcl(GetAclRequest {
            path: self.server_path(path),
        });
        self.call(request, |body| match body.map_err(Error::from_code)? {
            Response::GetAcl(response) => Ok((response.acl, response.stat)),
            _ => Err(unexpected("a getACL reply")),
        })
    }

    /// Sets the node's ACL if its ACL version is `version` (-1: any).
    ///
    /// # Errors
    /// [`Error::Server`] with `NoNode`, `BadVersion`, `InvalidAcl`, ...
    pub fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: i32,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<> {
        let request = Request::SetAcl(SetAclRequest {
            path: self.server_path(path),
            acl,
            version,
        });
        self.call(request, stat_reply)
    }

    /// Waits until the server this session is connected to has caught up with the leader.
    ///
    /// # Errors
    /// Connection and session errors.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let request = Request::Sync(SyncRequest {
            path: self.server_path(path),
        });
        self.call(request, |body| body.map(drop).map_err(Error::from_code))
    }

    /// Adds a persistent watch (ZooKeeper 3.6+): every event on the node, or with
    /// [`AddWatchMode::PersistentRecursive`] on its whole subtree.
    ///
    /// # Errors
    /// Connection and session errors; [`Error::Server`] with `Unimplemented` on older servers.
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatch>> + Send + 'static + use<> {
        let server_path = self.server_path(path);
        let (sender, receiver) = mpsc::unbounded_channel();
        let intent = match mode {
            AddWatchMode::PersistentRecursive => Intent::Recursive,
            _ => Intent::Persistent,
        };
        let spec = WatchSpec {
            path: server_path.clone(),
            intent,
            sender: Sender::Stream(sender),
        };
        let request = Request::AddWatch(AddWatchRequest {
            path: server_path,
            mode,
        });
        let submitted = self.shared.submit(request, Some(spec));
        let session = self.shared.weak();
        async move {
            let submitted = submitted?;
            let watch = PersistentWatch::new(receiver, submitted.watch_id.unwrap_or(0), session);
            let reply = submitted.reply.await.map_err(|_| Error::Closed)??;
            match reply.header.err {
                ErrorCode::Ok => Ok(watch),
                code => Err(Error::from_code(code)),
            }
        }
    }

    /// The ensemble's configuration (`/zookeeper/config`, outside any chroot).
    ///
    /// # Errors
    /// Connection and session errors; `NoNode` on a server without one.
    pub fn get_config(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'static + use<> {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: false,
        });
        self.call(request, data_reply)
    }

    /// [`get_config`](Self::get_config), with a one-shot watch for its next change.
    ///
    /// # Errors
    /// As [`get_config`](Self::get_config).
    pub fn get_config_watched(
        &self,
    ) -> impl Future<Output = Result<((Vec<u8>, Stat), OneshotWatch)>> + Send + 'static + use<>
    {
        let request = Request::GetData(GetDataRequest {
            path: CONFIG_NODE.to_owned(),
            watch: true,
        });
        self.call_watched(request, CONFIG_NODE.to_owned(), Intent::Data, data_reply)
    }

    /// Changes the ensemble: members joining and leaving (incremental), or a whole new member
    /// list, only if the configuration's version is `from` (-1: any). Returns the new
    /// configuration.
    ///
    /// # Errors
    /// [`Error::Server`] with `ReconfigDisabled`, `NewConfigNoQuorum`, `BadVersion`, `NoAuth`...
    pub fn reconfig(
        &self,
        joining: Option<String>,
        leaving: Option<String>,
        new_members: Option<String>,
        from: i64,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send + 'static + use<> {
        let request = Request::Reconfig(ReconfigRequest {
            joining_servers: joining,
            leaving_servers: leaving,
            new_members,
            cur_config_id: from,
        });
        self.call(request, data_reply)
    }

    /// Runs `ops` as one transaction. The results say, op by op, what happened: on failure
    /// every result is an error (`Ok` for the ops before the failing one,
    /// `RuntimeInconsistency` after it).
    ///
    /// # Errors
    /// Connection and session errors (a failed step is in the results, not here).
    pub fn multi(
        &self,
        ops: Vec<MultiOp>,
    ) -> impl Future<Output = Result<Vec<MultiResult>>> + Send + 'static + use<> {
        let ops = ops.into_iter().map(|op| self.chroot_op(op)).collect();
        let chroot = self.chroot().map(str::to_owned);
        self.call(Request::Multi(MultiRequest { ops }), move |body| match body
            .map_err(Error::from_code)?
        {
            Response::Multi(response) => Ok(response
                .results
                .into_iter()
                .map(|result| match result {
                    MultiResult::Create(mut created) => {
                        created.path = strip_chroot(chroot.as_deref(), created.path);
                        MultiResult::Create(created)
                    }
                    MultiResult::Create2(mut created) => {
                        created.path = strip_chroot(chroot.as_deref(), created.path);
                        MultiResult::Create2(created)
                    }
                    other => other,
                })
                .collect()),
            _ => Err(unexpected("a multi reply")),
        })
    }

    fn chroot_op(&self, op: MultiOp) -> MultiOp {
        match op {
            MultiOp::Create(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::Create(r)
            }
            MultiOp::Create2(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::Create2(r)
            }
            MultiOp::CreateContainer(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::CreateContainer(r)
            }
            MultiOp::CreateTtl(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::CreateTtl(r)
            }
            MultiOp::Delete(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::Delete(r)
            }
            MultiOp::SetData(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::SetData(r)
            }
            MultiOp::Check(mut r) => {
                r.path = self.server_path(&r.path);
                MultiOp::Check(r)
            }
        }
    }

    /// Runs reads as of one point in time (ZooKeeper 3.6+); each has its own result.
    ///
    /// # Errors
    /// Connection and session errors.
    pub fn multi_read(
        &self,
        ops: Vec<MultiReadOp>,
    ) -> impl Future<Output = Result<Vec<MultiReadResult>>> + Send + 'static + use<> {
        let ops = ops
            .into_iter()
            .map(|op| match op {
                MultiReadOp::GetData(mut r) => {
                    r.path = self.server_path(&r.path);
                    MultiReadOp::GetData(r)
                }
                MultiReadOp::GetChildren(mut r) => {
                    r.path = self.server_path(&r.path);
                    MultiReadOp::GetChildren(r)
                }
            })
            .collect();
        self.call(
            Request::MultiRead(MultiReadRequest { ops }),
            |body| match body.map_err(Error::from_code)? {
                Response::MultiRead(response) => Ok(response.results),
                _ => Err(unexpected("a multiRead reply")),
            },
        )
    }

    /// The identities the server gives this session (ZooKeeper 3.7+).
    ///
    /// # Errors
    /// Connection and session errors; `Unimplemented` on older servers.
    pub fn who_am_i(
        &self,
    ) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send + 'static + use<> {
        self.call(Request::WhoAmI, |body| {
            match body.map_err(Error::from_code)? {
                Response::WhoAmI(response) => Ok(response.client_info),
                _ => Err(unexpected("a whoAmI reply")),
            }
        })
    }
}

fn exists_reply(body: std::result::Result<Response, ErrorCode>) -> Result<Option<Stat>> {
    match body {
        Ok(Response::Stat(stat)) => Ok(Some(stat)),
        Ok(_) => Err(unexpected("an exists reply")),
        Err(ErrorCode::NoNode) => Ok(None),
        Err(code) => Err(Error::from_code(code)),
    }
}

fn data_reply(body: std::result::Result<Response, ErrorCode>) -> Result<(Vec<u8>, Stat)> {
    match body.map_err(Error::from_code)? {
        Response::GetData(response) => Ok((response.data, response.stat)),
        _ => Err(unexpected("a getData reply")),
    }
}

fn stat_reply(body: std::result::Result<Response, ErrorCode>) -> Result<Stat> {
    match body.map_err(Error::from_code)? {
        Response::Stat(stat) => Ok(stat),
        _ => Err(unexpected("a stat")),
    }
}

fn children_reply(body: std::result::Result<Response, ErrorCode>) -> Result<(Vec<String>, Stat)> {
    match body.map_err(Error::from_code)? {
        Response::GetChildren2(response) => Ok((response.children, response.stat)),
        Response::GetChildren(response) => Ok((response.children, Stat::default())),
        _ => Err(unexpected("a getChildren reply")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chroots_come_off_paths_under_them_only() {
        let chroot = Some("/app");
        assert_eq!(strip_chroot(chroot, "/app".into()), "/");
        assert_eq!(strip_chroot(chroot, "/app/a".into()), "/a");
        assert_eq!(strip_chroot(chroot, "/apple".into()), "/apple");
        assert_eq!(
            strip_chroot(chroot, "/zookeeper/config".into()),
            "/zookeeper/config"
        );
        assert_eq!(strip_chroot(None, "/app/a".into()), "/app/a");
    }
}
