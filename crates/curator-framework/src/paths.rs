//! ZooKeeper path utilities (Curator's `ZKPaths` and `ProtectedUtils`): joining, splitting,
//! validation with ZooKeeper's own rules, sequence numbers and protected names.
//!
//! ```
//! use curator_framework::paths;
//! assert_eq!(paths::join("/a", "b"), "/a/b");
//! assert_eq!(paths::parent("/a/b"), Some("/a"));
//! assert_eq!(paths::node_name("/a/b"), "b");
//! assert_eq!(paths::sequence("lock-0000000042"), Some(42));
//! assert!(paths::validate("/a/b").is_ok());
//! assert!(paths::validate("a/b").is_err());
//! ```

use crate::error::{Error, Result};

/// The length of a protected prefix: `_c_`, a 36-character UUID, and `-`.
pub const PROTECTED_PREFIX_LEN: usize = 40;
const PROTECTED_MARK: &str = "_c_";

/// The largest node data ZooKeeper accepts by default (`jute.maxbuffer`, 1 MiB less one byte).
pub const MAX_DATA_LEN: usize = 0xfffff;

/// Checks `path` against ZooKeeper's rules: absolute, no trailing `/` (except the root), no empty
/// segment, no `.` or `..` segment, no NUL or other disallowed character.
///
/// # Errors
/// [`Error::InvalidPath`] saying what is wrong.
pub fn validate(path: &str) -> Result<()> {
    validate_inner(path, false)
}

/// [`validate`] for the path of a sequential create, which may end in `/` (the server appends the
/// sequence number).
///
/// # Errors
/// [`Error::InvalidPath`] saying what is wrong.
pub fn validate_sequential(path: &str) -> Result<()> {
    validate_inner(path, true)
}

fn validate_inner(path: &str, sequential: bool) -> Result<()> {
    if path.is_empty() {
        return Err(Error::invalid_path(path, "path is empty"));
    }
    if !path.starts_with('/') {
        return Err(Error::invalid_path(path, "path must start with '/'"));
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return Err(Error::invalid_path(path, "path must not end with '/'"));
    }
    let checked = if sequential && path.ends_with('/') {
        &path[..path.len() - 1]
    } else {
        path
    };
    for segment in checked[1..].split('/') {
        match segment {
            "" if sequential && checked.len() == 1 => {}
            "" => return Err(Error::invalid_path(path, "empty node name (\"//\")")),
            "." | ".." => {
                return Err(Error::invalid_path(
                    path,
                    "relative segments ('.' and '..') are not allowed",
                ));
            }
            _ => {}
        }
    }
    // Printable ASCII, the usual path, has no disallowed character.
    if path.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Ok(());
    }
    if let Some(c) = path.chars().find(|c| is_disallowed(*c)) {
        let reason = if c == '\0' {
            "null character not allowed".to_owned()
        } else {
            format!("invalid character U+{:04X}", u32::from(c))
        };
        return Err(Error::invalid_path(path, reason));
    }
    Ok(())
}

fn is_disallowed(c: char) -> bool {
    matches!(u32::from(c),
        0x0000..=0x001f | 0x007f..=0x009f | 0xd800..=0xf8ff | 0xfff0..=0xffff)
}

/// Joins a parent path and a child name (or relative path) with exactly one `/` between them.
///
/// ```
/// use curator_framework::paths::join;
/// assert_eq!(join("/", "a"), "/a");
/// assert_eq!(join("/a/", "/b"), "/a/b");
/// assert_eq!(join("/a", ""), "/a");
/// assert_eq!(join("", "b"), "/b");
/// ```
pub fn join(parent: &str, child: &str) -> String {
    let parent = parent.trim_end_matches('/');
    let child = child.trim_start_matches('/');
    match (parent.is_empty(), child.is_empty()) {
        (true, true) => "/".to_owned(),
        (true, false) => format!("/{child}"),
        (false, true) => {
            if parent.starts_with('/') {
                parent.to_owned()
            } else {
                format!("/{parent}")
            }
        }
        (false, false) => {
            if parent.starts_with('/') {
                format!("{parent}/{child}")
            } else {
                format!("/{parent}/{child}")
            }
        }
    }
}

/// The parent of `path`, `None` for the root.
///
/// ```
/// use curator_framework::paths::parent;
/// assert_eq!(parent("/a"), Some("/"));
/// assert_eq!(parent("/"), None);
/// ```
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" || path.is_empty() {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The last segment of `path` (empty for the root).
pub fn node_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The segments of `path`, without the leading root.
///
/// ```
/// use curator_framework::paths::split;
/// assert_eq!(split("/a/b/c"), vec!["a", "b", "c"]);
/// assert!(split("/").is_empty());
/// ```
pub fn split(path: &str) -> Vec<&str> {
    path.split('/').filter(|s| !s.is_empty()).collect()
}

/// Every ancestor of `path` from the top down, excluding the root and `path` itself.
///
/// ```
/// use curator_framework::paths::ancestors;
/// assert_eq!(ancestors("/a/b/c"), vec!["/a", "/a/b"]);
/// ```
pub fn ancestors(path: &str) -> Vec<&str> {
    let mut result = Vec::new();
    let mut end = 0;
    while let Some(i) = path[end + 1..].find('/') {
        end += i + 1;
        result.push(&path[..end]);
    }
    result
}

/// The sequence number a server appended to a sequential node's name: the trailing decimal
/// digits (ten, or nineteen for 64-bit counters). A counter that overflowed into negative numbers
/// (after 2^31 creations under one parent) is not recognised.
///
/// ```
/// use curator_framework::paths::sequence;
/// assert_eq!(sequence("_c_8f0e8d2a-58f9-4b8e-9c3d-2b0f3e2a1c11-lock-0000000007"), Some(7));
/// assert_eq!(sequence("node"), None);
/// ```
pub fn sequence(name: &str) -> Option<i64> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits < 10 {
        return None;
    }
    name[name.len() - digits..].parse().ok()
}

/// The part of `name` after the last occurrence of `marker`, used to sort lock nodes by their
/// sequence while ignoring protected prefixes (Curator's `standardFixForSorting`). Names without
/// the marker sort by their whole name.
///
/// ```
/// use curator_framework::paths::sort_key;
/// assert_eq!(sort_key("_c_8f0e8d2a-58f9-4b8e-9c3d-2b0f3e2a1c11-lock-0000000007", "lock-"), "0000000007");
/// assert_eq!(sort_key("other", "lock-"), "other");
/// ```
pub fn sort_key<'a>(name: &'a str, marker: &str) -> &'a str {
    match name.rfind(marker) {
        Some(i) => &name[i + marker.len()..],
        None => name,
    }
}

/// The protected prefix for `uuid`: `_c_<uuid>-`.
///
/// ```
/// let id = uuid::Uuid::nil();
/// assert_eq!(curator_framework::paths::protected_prefix(&id), "_c_00000000-0000-0000-0000-000000000000-");
/// ```
pub fn protected_prefix(uuid: &uuid::Uuid) -> String {
    format!("{PROTECTED_MARK}{}-", uuid.hyphenated())
}

/// Whether `name` carries a protected prefix: longer than 40 characters, `_c_`, a valid UUID, `-`.
pub fn is_protected(name: &str) -> bool {
    protected_id(name).is_some()
}

/// The UUID of a protected name.
pub fn protected_id(name: &str) -> Option<uuid::Uuid> {
    if name.len() <= PROTECTED_PREFIX_LEN || !name.starts_with(PROTECTED_MARK) {
        return None;
    }
    if name.as_bytes()[PROTECTED_PREFIX_LEN - 1] != b'-' {
        return None;
    }
    let id = name.get(PROTECTED_MARK.len()..PROTECTED_PREFIX_LEN - 1)?;
    uuid::Uuid::try_parse(id).ok().filter(|_| id.len() == 36)
}

/// `name` without its protected prefix (unchanged when it has none).
///
/// ```
/// use curator_framework::paths::strip_protection;
/// assert_eq!(strip_protection("_c_00000000-0000-0000-0000-000000000000-lock-0000000001"), "lock-0000000001");
/// assert_eq!(strip_protection("lock-0000000001"), "lock-0000000001");
/// ```
pub fn strip_protection(name: &str) -> &str {
    if is_protected(name) {
        &name[PROTECTED_PREFIX_LEN..]
    } else {
        name
    }
}

/// Prefixes `path` with a namespace (`app` turns `/x` into `/app/x`); the config node
/// `/zookeeper/config` is never namespaced.
pub(crate) fn apply_namespace(namespace: Option<&str>, path: &str) -> String {
    match namespace {
        Some(ns) if path != "/zookeeper/config" && !path.starts_with("/zookeeper/config/") => {
            if path == "/" {
                format!("/{ns}")
            } else {
                format!("/{ns}{path}")
            }
        }
        _ => path.to_owned(),
    }
}

/// Removes a namespace prefix from a server path (`/app/x` → `/x`, `/app` → `/`).
pub(crate) fn strip_namespace(namespace: Option<&str>, path: &str) -> String {
    let Some(ns) = namespace else {
        return path.to_owned();
    };
    let Some(rest) = path.strip_prefix('/').and_then(|p| p.strip_prefix(ns)) else {
        return path.to_owned();
    };
    if rest.is_empty() {
        "/".to_owned()
    } else if rest.starts_with('/') {
        rest.to_owned()
    } else {
        path.to_owned()
    }
}

/// Checks a namespace: not empty, no leading or trailing `/`, and a valid path once prefixed.
pub(crate) fn validate_namespace(ns: &str) -> Result<()> {
    if ns.is_empty() {
        return Err(Error::InvalidArgument("namespace must not be empty".into()));
    }
    if ns.starts_with('/') || ns.ends_with('/') {
        return Err(Error::InvalidArgument(format!(
            "namespace {ns:?} must not start or end with '/'"
        )));
    }
    validate(&format!("/{ns}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_zookeeper_rules() {
        for ok in ["/", "/a", "/a/b", "/a-b_c.d", "/a/..b", "/ünïcode"] {
            assert!(validate(ok).is_ok(), "{ok}");
        }
        let cases = [
            ("", "empty"),
            ("a", "start with '/'"),
            ("/a/", "end with '/'"),
            ("/a//b", "empty node name"),
            ("/a/./b", "relative"),
            ("/a/..", "relative"),
            ("/a\0b", "null"),
            ("/a\u{1}b", "U+0001"),
            ("/a\u{fff0}", "U+FFF0"),
        ];
        for (path, reason) in cases {
            match validate(path) {
                Err(Error::InvalidPath { reason: r, .. }) => {
                    assert!(r.contains(reason), "{path:?}: {r}")
                }
                other => panic!("{path:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn sequential_paths_may_end_with_a_slash() {
        assert!(validate_sequential("/a/").is_ok());
        assert!(validate_sequential("/a/lock-").is_ok());
        assert!(validate_sequential("/a//").is_err());
        assert!(validate("/a/").is_err());
    }

    #[test]
    fn joining_and_splitting() {
        assert_eq!(join("/a", "b/c"), "/a/b/c");
        assert_eq!(join("a", "b"), "/a/b");
        assert_eq!(join("/", "/"), "/");
        assert_eq!(parent("/a/b/c"), Some("/a/b"));
        assert_eq!(parent("a"), None);
        assert_eq!(node_name("/"), "");
        assert_eq!(node_name("/a/bc"), "bc");
        assert_eq!(ancestors("/a"), Vec::<&str>::new());
        assert_eq!(ancestors("/"), Vec::<&str>::new());
    }

    #[test]
    fn sequence_numbers() {
        assert_eq!(sequence("x-0000000000"), Some(0));
        assert_eq!(sequence("x-2147483647"), Some(2_147_483_647));
        assert_eq!(sequence("x-0000000000000000042"), Some(42));
        assert_eq!(sequence("x-123"), None);
        assert_eq!(sequence(""), None);
    }

    #[test]
    fn protected_names() {
        let id = uuid::Uuid::new_v4();
        let name = format!("{}lock-0000000001", protected_prefix(&id));
        assert!(is_protected(&name));
        assert_eq!(protected_id(&name), Some(id));
        assert_eq!(strip_protection(&name), "lock-0000000001");
        // Exactly the prefix, with nothing after it, is not a protected name.
        assert!(!is_protected(&protected_prefix(&id)));
        assert!(!is_protected(
            "_c_not-a-uuid-at-all-but-forty-characters-long-x"
        ));
    }

    #[test]
    fn namespaces() {
        assert_eq!(apply_namespace(Some("app"), "/x"), "/app/x");
        assert_eq!(apply_namespace(Some("app"), "/"), "/app");
        assert_eq!(
            apply_namespace(Some("app"), "/zookeeper/config"),
            "/zookeeper/config"
        );
        assert_eq!(apply_namespace(None, "/x"), "/x");
        assert_eq!(strip_namespace(Some("app"), "/app/x"), "/x");
        assert_eq!(strip_namespace(Some("app"), "/app"), "/");
        assert_eq!(strip_namespace(Some("app"), "/apple/x"), "/apple/x");
        assert!(validate_namespace("a/b").is_ok());
        assert!(validate_namespace("/a").is_err());
        assert!(validate_namespace("").is_err());
        assert!(validate_namespace("a//b").is_err());
    }
}
