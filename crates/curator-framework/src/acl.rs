//! Access control lists and the provider that picks them for new nodes.

use std::fmt;

/// Permission bits of an ACL entry.
///
/// ```
/// use curator_framework::acl::Perms;
/// let rw = Perms::READ | Perms::WRITE;
/// assert!(rw.contains(Perms::READ));
/// assert!(!rw.contains(Perms::ADMIN));
/// assert_eq!(Perms::ALL.bits(), 31);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms(u8);

impl Perms {
    /// Read data and list children.
    pub const READ: Perms = Perms(1);
    /// Set data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Set the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Every permission.
    pub const ALL: Perms = Perms(31);
    /// No permission.
    pub const NONE: Perms = Perms(0);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }

    /// ZooKeeper's bit mask.
    pub fn bits(self) -> i32 {
        i32::from(self.0)
    }

    /// From ZooKeeper's bit mask (unknown bits are dropped).
    pub fn from_bits(bits: i32) -> Perms {
        Perms((bits & 31) as u8)
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

impl fmt::Debug for Perms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Perms::READ, 'r'),
            (Perms::WRITE, 'w'),
            (Perms::CREATE, 'c'),
            (Perms::DELETE, 'd'),
            (Perms::ADMIN, 'a'),
        ];
        let text: String = names
            .iter()
            .map(|(p, c)| if self.contains(*p) { *c } else { '-' })
            .collect();
        write!(f, "Perms({text})")
    }
}

/// One ACL entry: permissions granted to an identity (`scheme:id`).
///
/// ```
/// use curator_framework::acl::{Acl, Perms};
/// let open = Acl::world_anyone(Perms::ALL);
/// assert_eq!((open.scheme.as_str(), open.id.as_str()), ("world", "anyone"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acl {
    /// What is granted.
    pub perms: Perms,
    /// The identity scheme (`world`, `auth`, `digest`, `ip`, ...).
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

impl Acl {
    /// An entry granting `perms` to `scheme:id`.
    pub fn new(perms: Perms, scheme: impl Into<String>, id: impl Into<String>) -> Acl {
        Acl {
            perms,
            scheme: scheme.into(),
            id: id.into(),
        }
    }

    /// `world:anyone` with `perms`.
    pub fn world_anyone(perms: Perms) -> Acl {
        Acl::new(perms, "world", "anyone")
    }

    /// `auth:` (every identity the creating session authenticated as) with `perms`.
    pub fn creator(perms: Perms) -> Acl {
        Acl::new(perms, "auth", "")
    }

    /// Everyone may do everything (ZooKeeper's `OPEN_ACL_UNSAFE`, Curator's default).
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl::world_anyone(Perms::ALL)]
    }

    /// Everyone may read (`READ_ACL_UNSAFE`).
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl::world_anyone(Perms::READ)]
    }

    /// Only the creator's authenticated identities may do anything (`CREATOR_ALL_ACL`).
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl::creator(Perms::ALL)]
    }
}

/// Chooses the ACL of nodes created without an explicit one (including parents made by
/// `creating_parents_if_needed`). The path includes the namespace.
pub trait AclProvider: Send + Sync + fmt::Debug {
    /// The ACL for a new node at `path`.
    fn acl_for_path(&self, path: &str) -> Vec<Acl>;
}

/// Gives every node `world:anyone` with every permission, like Curator's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultAclProvider;

impl AclProvider for DefaultAclProvider {
    fn acl_for_path(&self, _path: &str) -> Vec<Acl> {
        Acl::open_unsafe()
    }
}

/// Gives every node the same ACL.
///
/// ```
/// use curator_framework::acl::{Acl, AclProvider, FixedAclProvider};
/// let provider = FixedAclProvider::new(Acl::creator_all());
/// assert_eq!(provider.acl_for_path("/any"), Acl::creator_all());
/// ```
#[derive(Debug, Clone)]
pub struct FixedAclProvider(Vec<Acl>);

impl FixedAclProvider {
    /// Always `acl`.
    pub fn new(acl: Vec<Acl>) -> Self {
        Self(acl)
    }
}

impl AclProvider for FixedAclProvider {
    fn acl_for_path(&self, _path: &str) -> Vec<Acl> {
        self.0.clone()
    }
}
