//! The value types of multi-requests, shared by the operation builders above and the wire
//! below: a transaction's steps and results, a multi-read's reads and results. They live here,
//! under the wire, so the wire speaks no builder's types; the public ones are re-exported by
//! [`ops::transaction`](crate::ops::transaction) and [`ops::multi_read`](crate::ops::multi_read).

use std::sync::Arc;
use std::time::Duration;

use crate::acl::Acl;
use crate::error::Error;
use crate::types::{CreateMode, Stat};

/// One read's result in a [`multi_read`](crate::CuratorFramework::multi_read).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadResult {
    /// A [`get_data`](crate::ops::multi_read::MultiReadBuilder::get_data): the node's data and stat.
    Data {
        /// The node's data.
        data: Vec<u8>,
        /// The node's stat.
        stat: Stat,
    },
    /// A [`get_children`](crate::ops::multi_read::MultiReadBuilder::get_children): the children's names (no stat:
    /// ZooKeeper's multi-read has none for this read).
    Children {
        /// The children's names, in the server's order.
        children: Vec<String>,
    },
    /// This read failed (for example [`Error::NoNode`]); the others stand.
    Error(Error),
}

/// One read of a multi-read as it goes to the server (path namespaced).
#[derive(Debug)]
pub(crate) enum Read {
    Data(Arc<str>),
    Children(Arc<str>),
}

impl Read {
    /// The path read, as the server names it.
    pub(crate) fn path(&self) -> &str {
        match self {
            Read::Data(path) | Read::Children(path) => path,
        }
    }
}

/// One step of a transaction as it goes to the server: validated, paths namespaced.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
        acl: Vec<Acl>,
        ttl: Option<Duration>,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Delete {
        path: String,
        version: Option<i32>,
    },
    Check {
        path: String,
        version: i32,
    },
}

/// What one step of a committed transaction did (paths without the namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionResult {
    /// A node was created at `path` (with its sequence number, for sequential modes).
    Create {
        /// The created path.
        path: String,
        /// Its stat, when the server reports one.
        stat: Option<Stat>,
    },
    /// Data was written.
    SetData {
        /// The node's new stat.
        stat: Stat,
    },
    /// A node was deleted.
    Delete,
    /// A version check passed.
    Check,
}
