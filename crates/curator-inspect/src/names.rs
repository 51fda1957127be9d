//! Curator's node names: protection prefixes, sequence suffixes, queue item names.

/// `name` without Curator's protection prefix `_c_<uuid>-` (40 characters).
pub(crate) fn unprotected(name: &str) -> &str {
    let bytes = name.as_bytes();
    if name.len() > 40 && name.starts_with("_c_") && bytes[39] == b'-' && is_uuid(&name[3..39]) {
        &name[40..]
    } else {
        name
    }
}

/// A canonical lower- or upper-case UUID (`8-4-4-4-12` hex).
pub(crate) fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The 10-digit sequence after the last `marker` in `name` (Curator's sort key for lock-style
/// recipes), when the name is `[_c_<uuid>-]<marker><seq>`.
pub(crate) fn sequence_after(name: &str, marker: &str) -> Option<u64> {
    let rest = unprotected(name).strip_prefix(marker)?;
    (rest.len() == 10 && rest.bytes().all(|b| b.is_ascii_digit()))
        .then(|| rest.parse().ok())
        .flatten()
}

/// What kind of queue item a `queue-…` name is, with its sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QueueItem {
    /// `queue-<seq>`.
    Plain(u64),
    /// `queue-<9 hex priority><seq>`: (priority key, seq).
    Priority(String, u64),
    /// `queue-|<hex ms>|<seq>`: (due epoch ms, seq).
    Delay(i64, u64),
    /// `queue-|<id>|<seq>`: seq.
    Id(u64),
}

impl QueueItem {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        let rest = name.strip_prefix("queue-")?;
        let seq = |s: &str| -> Option<u64> {
            (s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        };
        if let Some(inner) = rest.strip_prefix('|') {
            let (middle, tail) = inner.rsplit_once('|')?;
            let seq = seq(tail)?;
            let hex = middle.len() >= 8
                && middle
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b));
            return Some(match i64::from_str_radix(middle, 16) {
                Ok(due) if hex => QueueItem::Delay(due, seq),
                _ => QueueItem::Id(seq),
            });
        }
        if let Some(n) = seq(rest) {
            return Some(QueueItem::Plain(n));
        }
        if rest.len() == 19 && rest[..9].bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(QueueItem::Priority(rest[..9].to_owned(), seq(&rest[9..])?));
        }
        None
    }

    /// The order consumers take items in.
    pub(crate) fn sort_key(&self) -> (i64, String, u64) {
        match self {
            QueueItem::Plain(seq) | QueueItem::Id(seq) => (0, String::new(), *seq),
            QueueItem::Priority(priority, seq) => (0, priority.clone(), *seq),
            QueueItem::Delay(due, seq) => (*due, String::new(), *seq),
        }
    }
}

/// Whether `data` looks like Java Curator's default node data: an IPv4 or IPv6 address as text.
pub(crate) fn is_ip_text(data: &[u8]) -> bool {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.parse::<std::net::IpAddr>().ok())
        .is_some()
}

/// Whether `owner` (a stat's `ephemeralOwner`) is a session: not 0 (persistent), not
/// ZooKeeper's container marker (`i64::MIN`) and not a TTL node's marker (high byte `0xff`).
pub(crate) fn is_session_owner(owner: i64) -> bool {
    owner != 0 && owner != i64::MIN && (owner as u64) >> 56 != 0xff
}

/// Whether every byte is printable ASCII (space to `~`): text, not a binary number.
pub(crate) fn is_printable_ascii(data: &[u8]) -> bool {
    data.iter().all(|b| (0x20..=0x7e).contains(b))
}

/// At most this many characters of text data are shown.
const PREVIEW_CHARS: usize = 64;
/// At most this many bytes of binary data are shown (in hex).
const PREVIEW_BYTES: usize = 32;

/// A node's data for people: quoted text (cut at 64 characters), or `0x` and hex (cut at 32
/// bytes) with the length for anything that is not text; `None` for no data.
pub(crate) fn preview(data: &[u8]) -> Option<String> {
    if data.is_empty() {
        return None;
    }
    let text = std::str::from_utf8(data).ok().filter(|text| {
        !text
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    });
    if let Some(text) = text {
        let cut: String = text.chars().take(PREVIEW_CHARS).collect();
        let more = if cut.len() < text.len() { "…" } else { "" };
        return Some(format!("{cut:?}{more}"));
    }
    let hex: String = data
        .iter()
        .take(PREVIEW_BYTES)
        .map(|b| format!("{b:02x}"))
        .collect();
    let more = if data.len() > PREVIEW_BYTES {
        "…"
    } else {
        ""
    };
    Some(format!("0x{hex}{more} ({} bytes)", data.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_and_plain_lock_names() {
        let p = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-lock-0000000007";
        assert_eq!(unprotected(p), "lock-0000000007");
        assert_eq!(sequence_after(p, "lock-"), Some(7));
        assert_eq!(sequence_after("lock-0000000012", "lock-"), Some(12));
        assert_eq!(sequence_after("lock-12", "lock-"), None);
        assert_eq!(sequence_after("latch-0000000001", "lock-"), None);
        assert_eq!(
            sequence_after(
                "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1-__READ__0000000003",
                "__READ__"
            ),
            Some(3)
        );
        assert_eq!(unprotected("_c_not-a-uuid"), "_c_not-a-uuid");
    }

    #[test]
    fn queue_item_names() {
        assert_eq!(
            QueueItem::parse("queue-0000000004"),
            Some(QueueItem::Plain(4))
        );
        assert_eq!(
            QueueItem::parse("queue-10000000A0000000004"),
            Some(QueueItem::Priority("10000000A".into(), 4))
        );
        assert_eq!(
            QueueItem::parse("queue-|18BCFE56800|0000000001"),
            Some(QueueItem::Delay(1_700_000_000_000, 1))
        );
        assert_eq!(
            QueueItem::parse("queue-|job_7|0000000002"),
            Some(QueueItem::Id(2))
        );
        assert_eq!(QueueItem::parse("queue-x"), None);
        assert_eq!(QueueItem::parse("qn-0000000001"), None);
    }

    #[test]
    fn sessions_and_markers() {
        assert!(is_session_owner(0x0100_00a1_b2c0_0003));
        assert!(!is_session_owner(0));
        assert!(!is_session_owner(i64::MIN));
        assert!(!is_session_owner(0xff00_0000_0000_1000_u64 as i64));
    }

    #[test]
    fn previews_of_text_and_binary_data() {
        assert_eq!(preview(b""), None);
        assert_eq!(preview(b"true").as_deref(), Some("\"true\""));
        assert_eq!(
            preview(&[0, 0, 0, 7]).as_deref(),
            Some("0x00000007 (4 bytes)")
        );
        let long = "x".repeat(100);
        assert_eq!(
            preview(long.as_bytes()),
            Some(format!("{:?}…", "x".repeat(64)))
        );
        assert!(is_printable_ascii(b"12345678"));
        assert!(!is_printable_ascii(&[0, 0, 0, 7]));
    }

    #[test]
    fn java_default_data_is_an_address() {
        assert!(is_ip_text(b"10.0.0.5"));
        assert!(is_ip_text(b"fe80::1"));
        assert!(!is_ip_text(b"worker-1"));
        assert!(!is_ip_text(b""));
    }
}
