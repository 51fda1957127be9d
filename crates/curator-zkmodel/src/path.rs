//! Path rules as the server applies them (`PathUtils.validatePath`), and the split of a path into
//! its parent and its last name as the server does it (by the last `/`, not by validation).

/// Whether `path` is a valid node path for the server: it starts with `/`, does not end with
/// `/` (unless it is the root), has no empty names, no `.` or `..` names, and no characters the
/// server refuses (NUL, control characters, surrogates and the private-use area as Java's
/// UTF-16 sees them, `U+FFF0..=U+FFFF`).
///
/// ```
/// use curator_zkmodel::path::is_valid;
///
/// assert!(is_valid("/"));
/// assert!(is_valid("/a/b-c.d"));
/// assert!(!is_valid("a"));
/// assert!(!is_valid("/a/"));
/// assert!(!is_valid("/a//b"));
/// assert!(!is_valid("/a/./b"));
/// assert!(!is_valid("/a/.."));
/// assert!(!is_valid("/a\u{0}"));
/// ```
pub fn is_valid(path: &str) -> bool {
    // Most paths are ASCII: their bytes are their characters, without a copy.
    if path.is_ascii() {
        valid(path.as_bytes())
    } else {
        valid(&path.chars().collect::<Vec<char>>())
    }
}

fn valid<C: Copy + Into<char>>(path: &[C]) -> bool {
    let at = |i: usize| -> char { path[i].into() };
    if path.is_empty() || at(0) != '/' {
        return false;
    }
    if path.len() == 1 {
        return true;
    }
    if at(path.len() - 1) == '/' {
        return false;
    }
    let mut last = '/';
    for i in 1..path.len() {
        let c = at(i);
        let at_name_end = i + 1 == path.len() || at(i + 1) == '/';
        let invalid = if c == '\0' || (c == '/' && last == '/') {
            true
        } else if c == '.' && last == '.' {
            at(i - 2) == '/' && at_name_end
        } else if c == '.' {
            at(i - 1) == '/' && at_name_end
        } else {
            invalid_char(c)
        };
        if invalid {
            return false;
        }
        last = c;
    }
    true
}

/// The characters Java's `validatePath` refuses (it sees UTF-16 code units, so every character
/// outside the basic plane is refused as a surrogate pair).
fn invalid_char(c: char) -> bool {
    matches!(c, '\u{1}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
        || u32::from(c) > 0xffff
}

/// The parent of `path` as the server computes it for a create or a delete: everything before
/// the last `/`, with the root written `/`. `None` when the path has no `/` or holds a NUL
/// (the server answers `BadArguments`).
///
/// ```
/// use curator_zkmodel::path::parent;
///
/// assert_eq!(parent("/a/b"), Some("/a"));
/// assert_eq!(parent("/a"), Some("/"));
/// assert_eq!(parent("/a/"), Some("/a"));
/// assert_eq!(parent("a"), None);
/// ```
pub fn parent(path: &str) -> Option<&str> {
    if path.contains('\0') {
        return None;
    }
    let slash = path.rfind('/')?;
    Some(if slash == 0 { "/" } else { &path[..slash] })
}

/// The last name of `path` (after the last `/`).
///
/// ```
/// use curator_zkmodel::path::name;
///
/// assert_eq!(name("/a/b"), "b");
/// assert_eq!(name("/"), "");
/// ```
pub fn name(path: &str) -> &str {
    path.rfind('/').map_or(path, |slash| &path[slash + 1..])
}

/// The paths a recursive watch on an ancestor sees a change at `path` from: `path`'s ancestors,
/// nearest first, ending at the root.
pub(crate) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut current = Some(path);
    std::iter::from_fn(move || {
        let here = current?;
        if here == "/" || !here.starts_with('/') {
            current = None;
            return None;
        }
        let up = parent(here)?;
        current = Some(up);
        Some(up)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_the_server() {
        for valid in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/..a",
            "/a..",
            "/.a",
            "/a/...",
            "/zookeeper",
        ] {
            assert!(is_valid(valid), "{valid}");
        }
        for invalid in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/.",
            "/a/../b",
            "/a\u{1}",
            "/a\u{7f}",
            "/\u{e000}",
            "/\u{fff5}",
            "/\u{1f600}",
        ] {
            assert!(!is_valid(invalid), "{invalid:?}");
        }
    }

    #[test]
    fn ancestors_end_at_the_root() {
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/a").collect::<Vec<_>>(), ["/"]);
        assert!(ancestors("/").next().is_none());
    }
}
