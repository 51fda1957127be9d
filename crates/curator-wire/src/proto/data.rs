//! The data records (`org.apache.zookeeper.data`): `Stat`, `Id`, `ACL`, `ClientInfo`.

use bytes::{BufMut, BytesMut};

use super::Perms;
use crate::error::DecodeError;
use crate::jute::{Jute, Reader, impl_record, put_string};

/// A node's metadata, as every reply that describes a node carries it (68 bytes).
///
/// ```
/// use curator_wire::proto::{Record, Stat};
///
/// let stat = Stat { czxid: 5, mzxid: 7, version: 2, ..Stat::default() };
/// assert_eq!(Stat::decode(&stat.to_bytes()).unwrap(), stat);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stat {
    /// The zxid of the create.
    pub czxid: i64,
    /// The zxid of the last data change.
    pub mzxid: i64,
    /// When the node was created (ms since the epoch, the leader's clock).
    pub ctime: i64,
    /// When the data last changed.
    pub mtime: i64,
    /// The number of data changes.
    pub version: i32,
    /// The number of changes to the children.
    pub cversion: i32,
    /// The number of ACL changes.
    pub aversion: i32,
    /// The owning session of an ephemeral node; 0 otherwise.
    pub ephemeral_owner: i64,
    /// The length of the data.
    pub data_length: i32,
    /// The number of children.
    pub num_children: i32,
    /// The zxid of the last change to the children.
    pub pzxid: i64,
}

impl Jute for Stat {
    const MIN_LEN: usize = 68;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i64(self.czxid);
        buf.put_i64(self.mzxid);
        buf.put_i64(self.ctime);
        buf.put_i64(self.mtime);
        buf.put_i32(self.version);
        buf.put_i32(self.cversion);
        buf.put_i32(self.aversion);
        buf.put_i64(self.ephemeral_owner);
        buf.put_i32(self.data_length);
        buf.put_i32(self.num_children);
        buf.put_i64(self.pzxid);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("Stat", |r| {
            Ok(Stat {
                czxid: r.i64("czxid")?,
                mzxid: r.i64("mzxid")?,
                ctime: r.i64("ctime")?,
                mtime: r.i64("mtime")?,
                version: r.i32("version")?,
                cversion: r.i32("cversion")?,
                aversion: r.i32("aversion")?,
                ephemeral_owner: r.i64("ephemeralOwner")?,
                data_length: r.i32("dataLength")?,
                num_children: r.i32("numChildren")?,
                pzxid: r.i64("pzxid")?,
            })
        })
    }
}

/// An identity: a scheme and an id in it (`world:anyone`, `digest:user:hash`, `ip:10.0.0.1`).
///
/// ```
/// use curator_wire::proto::Id;
///
/// let anyone = Id::new("world", "anyone");
/// assert_eq!(anyone.scheme, "world");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Id {
    /// The scheme.
    pub scheme: String,
    /// The id within the scheme.
    pub id: String,
}

impl Id {
    /// An identity.
    ///
    /// ```
    /// use curator_wire::proto::Id;
    ///
    /// assert_eq!(Id::new("ip", "127.0.0.1").id, "127.0.0.1");
    /// ```
    pub fn new(scheme: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            scheme: scheme.into(),
            id: id.into(),
        }
    }
}

impl Jute for Id {
    const MIN_LEN: usize = 8;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.scheme);
        put_string(buf, &self.id);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("Id", |r| {
            Ok(Id {
                scheme: r.string("scheme")?,
                id: r.string("id")?,
            })
        })
    }
}

/// One ACL entry: permissions for an identity.
///
/// ```
/// use curator_wire::proto::{Acl, Id, Perms};
///
/// let open = Acl { perms: Perms::ALL, id: Id::new("world", "anyone") };
/// assert_eq!(Acl::open_unsafe(), vec![open]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Acl {
    /// What the identity may do.
    pub perms: Perms,
    /// Who.
    pub id: Id,
}

impl Acl {
    /// Everything for everyone (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    ///
    /// ```
    /// use curator_wire::proto::{Acl, Perms};
    ///
    /// assert_eq!(Acl::open_unsafe()[0].perms, Perms::ALL);
    /// ```
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::ALL,
            id: Id::new("world", "anyone"),
        }]
    }
}

impl Jute for Acl {
    const MIN_LEN: usize = 4 + Id::MIN_LEN;

    fn write(&self, buf: &mut BytesMut) {
        buf.put_i32(self.perms.bits());
        self.id.write(buf);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ACL", |r| {
            Ok(Acl {
                perms: Perms::from_bits(r.i32("perms")?),
                id: Id::read(r)?,
            })
        })
    }
}

/// An identity the server gives a session, as whoAmI lists them.
///
/// ```
/// use curator_wire::proto::ClientInfo;
///
/// let info = ClientInfo { auth_scheme: "ip".into(), user: "127.0.0.1".into() };
/// assert_eq!(info.user, "127.0.0.1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ClientInfo {
    /// The scheme (`ip`, `digest`, `sasl`, `x509`).
    pub auth_scheme: String,
    /// The user name or other id (an address for `ip`).
    pub user: String,
}

impl Jute for ClientInfo {
    const MIN_LEN: usize = 8;

    fn write(&self, buf: &mut BytesMut) {
        put_string(buf, &self.auth_scheme);
        put_string(buf, &self.user);
    }

    fn read(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        reader.record("ClientInfo", |r| {
            Ok(ClientInfo {
                auth_scheme: r.string("authScheme")?,
                user: r.string("user")?,
            })
        })
    }
}

impl_record!(Stat, Id, Acl, ClientInfo);
