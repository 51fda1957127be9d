//! The record codec: one node as bytes (its links, its name, its stat as variable-length
//! deltas, its data).
//!
//! ```text
//! flags: u8
//! varint: name length << 1 | 1 when the first child's id follows
//! first child: u32, little-endian (patched in place)
//! varint: parent id + 1 (0: none)
//! name
//! zigzag varints: czxid - base zxid, ctime - base time, then as the flags say: mzxid - czxid,
//!   pzxid - czxid, mtime - ctime, version, cversion and aversion, numChildren, dataLength (when
//!   it is not the data's length)
//! ephemeralOwner: 8 bytes, little-endian, when not 0
//! data: varint length, bytes, when kept
//! ```

use curator_framework::Stat;

// Record flags: which optional fields follow.
const HAS_DATA: u8 = 1;
const DATA_LENGTH: u8 = 1 << 1;
const EPHEMERAL: u8 = 1 << 2;
const MZXID: u8 = 1 << 3;
const PZXID: u8 = 1 << 4;
const MTIME: u8 = 1 << 5;
const VERSIONS: u8 = 1 << 6;
const NUM_CHILDREN: u8 = 1 << 7;

/// The links and name at the start of a record.
pub(super) struct Head<'a> {
    pub(super) parent: u32,
    /// The first child's id and where it is written, once the node has had children.
    pub(super) first_child: Option<(u32, usize)>,
    pub(super) name: &'a [u8],
}

/// A decoded record, borrowing its name and data from the arena.
pub(super) struct Record<'a> {
    pub(super) head: Head<'a>,
    pub(super) stat: Stat,
    pub(super) data: Option<&'a [u8]>,
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_signed(out: &mut Vec<u8>, value: i64) {
    put_varint(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// Encodes a record into `out` (cleared first). `base`: the store's creation zxid and time;
/// `head`: the parent, the first child (`None`: no room for one), the name.
pub(super) fn encode(
    out: &mut Vec<u8>,
    base: (i64, i64),
    (parent, first_child, name): (u32, Option<u32>, &[u8]),
    stat: &Stat,
    data: Option<&[u8]>,
) {
    out.clear();
    let implied_length = data.map_or(0, |d| d.len() as i64);
    let mut flags = 0;
    let mut set = |flag: u8, on: bool| {
        if on {
            flags |= flag;
        }
    };
    set(HAS_DATA, data.is_some());
    set(DATA_LENGTH, i64::from(stat.data_length) != implied_length);
    set(EPHEMERAL, stat.ephemeral_owner != 0);
    set(MZXID, stat.mzxid != stat.czxid);
    set(PZXID, stat.pzxid != stat.czxid);
    set(MTIME, stat.mtime != stat.ctime);
    set(
        VERSIONS,
        stat.version != 0 || stat.cversion != 0 || stat.aversion != 0,
    );
    set(NUM_CHILDREN, stat.num_children != 0);
    out.push(flags);
    put_varint(
        out,
        (name.len() as u64) << 1 | u64::from(first_child.is_some()),
    );
    if let Some(child) = first_child {
        out.extend_from_slice(&child.to_le_bytes());
    }
    put_varint(out, u64::from(parent.wrapping_add(1)));
    out.extend_from_slice(name);
    put_signed(out, stat.czxid.wrapping_sub(base.0));
    put_signed(out, stat.ctime.wrapping_sub(base.1));
    if flags & MZXID != 0 {
        put_signed(out, stat.mzxid.wrapping_sub(stat.czxid));
    }
    if flags & PZXID != 0 {
        put_signed(out, stat.pzxid.wrapping_sub(stat.czxid));
    }
    if flags & MTIME != 0 {
        put_signed(out, stat.mtime.wrapping_sub(stat.ctime));
    }
    if flags & VERSIONS != 0 {
        put_signed(out, stat.version.into());
        put_signed(out, stat.cversion.into());
        put_signed(out, stat.aversion.into());
    }
    if flags & NUM_CHILDREN != 0 {
        put_signed(out, stat.num_children.into());
    }
    if flags & DATA_LENGTH != 0 {
        put_signed(out, stat.data_length.into());
    }
    if flags & EPHEMERAL != 0 {
        out.extend_from_slice(&stat.ephemeral_owner.to_le_bytes());
    }
    if let Some(data) = data {
        put_varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }
}

pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = self.bytes[self.at];
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
            shift += 7;
        }
    }

    fn signed(&mut self) -> i64 {
        let value = self.varint();
        ((value >> 1) as i64) ^ -((value & 1) as i64)
    }

    /// A value written from an `i32`.
    fn small(&mut self) -> i32 {
        self.signed() as i32
    }

    fn take(&mut self, len: usize) -> &'a [u8] {
        let taken = &self.bytes[self.at..self.at + len];
        self.at += len;
        taken
    }
}

/// A record's links and name, and the reader positioned after them.
pub(super) fn decode_head(bytes: &[u8]) -> (Head<'_>, Reader<'_>) {
    let mut reader = Reader { bytes, at: 1 };
    let name_len = reader.varint();
    let first_child = (name_len & 1 == 1).then(|| {
        let at = reader.at;
        let id = u32::from_le_bytes(reader.take(4).try_into().expect("four bytes"));
        (id, at)
    });
    let parent = (reader.varint() as u32).wrapping_sub(1);
    let name = reader.take((name_len >> 1) as usize);
    let head = Head {
        parent,
        first_child,
        name,
    };
    (head, reader)
}

/// Decodes the record at the start of `bytes`; returns it and its length.
pub(super) fn decode(bytes: &[u8], base: (i64, i64)) -> (Record<'_>, usize) {
    let flags = bytes[0];
    let (head, mut reader) = decode_head(bytes);
    let czxid = reader.signed().wrapping_add(base.0);
    let ctime = reader.signed().wrapping_add(base.1);
    let mut stat = Stat {
        czxid,
        mzxid: czxid,
        pzxid: czxid,
        ctime,
        mtime: ctime,
        ..Stat::default()
    };
    if flags & MZXID != 0 {
        stat.mzxid = reader.signed().wrapping_add(czxid);
    }
    if flags & PZXID != 0 {
        stat.pzxid = reader.signed().wrapping_add(czxid);
    }
    if flags & MTIME != 0 {
        stat.mtime = reader.signed().wrapping_add(ctime);
    }
    if flags & VERSIONS != 0 {
        stat.version = reader.small();
        stat.cversion = reader.small();
        stat.aversion = reader.small();
    }
    if flags & NUM_CHILDREN != 0 {
        stat.num_children = reader.small();
    }
    let explicit_length = (flags & DATA_LENGTH != 0).then(|| reader.small());
    if flags & EPHEMERAL != 0 {
        let bytes: [u8; 8] = reader.take(8).try_into().expect("eight bytes");
        stat.ephemeral_owner = i64::from_le_bytes(bytes);
    }
    let data = (flags & HAS_DATA != 0).then(|| {
        let len = reader.varint() as usize;
        reader.take(len)
    });
    stat.data_length =
        explicit_length.unwrap_or_else(|| data.map_or(0, |d| d.len()).try_into().unwrap_or(0));
    (Record { head, stat, data }, reader.at)
}

/// The length of the record at the start of `bytes`.
pub(super) fn record_len(bytes: &[u8]) -> usize {
    decode(bytes, (0, 0)).1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "No node" in links (as the store writes it).
    const NONE: u32 = u32::MAX;

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ..Stat::default()
        }
    }

    #[test]
    fn records_round_trip() {
        let base = (0x1_0000_0100, 1_700_000_000_000);
        let stats = [
            Stat::default(),
            stat(0x1_0000_0105, 0x1_0000_0105),
            Stat {
                czxid: 0x1_0000_0105,
                mzxid: 0x2_0000_0001,
                pzxid: 0x1_0000_0107,
                ctime: 1_700_000_000_123,
                mtime: 1_700_000_009_999,
                version: 7,
                cversion: -1,
                aversion: i32::MAX,
                ephemeral_owner: 0x1234_5678_9abc_def0,
                data_length: 3,
                num_children: 12,
            },
            Stat {
                czxid: 5,
                ctime: 1,
                data_length: 1 << 20,
                version: i32::MIN,
                ..Stat::default()
            },
        ];
        let mut out = Vec::new();
        for stat in stats {
            for data in [None, Some(&b""[..]), Some(&b"abc"[..])] {
                for (parent, first_child, name) in [
                    (NONE, None, &b"/a/b"[..]),
                    (0, Some(NONE), b""),
                    (7, Some(1 << 20), b"n042"),
                    (1 << 30, None, "é/x".as_bytes()),
                ] {
                    encode(&mut out, base, (parent, first_child, name), &stat, data);
                    out.extend_from_slice(b"trailing");
                    let (record, len) = decode(&out, base);
                    assert_eq!(len, out.len() - 8);
                    assert_eq!(record.head.name, name);
                    assert_eq!(record.head.parent, parent);
                    assert_eq!(record.head.first_child.map(|(id, _)| id), first_child);
                    assert_eq!(record.data, data);
                    assert_eq!(record.stat, stat, "{stat:?} {data:?}");
                }
            }
        }
    }

    #[test]
    fn a_leaf_costs_a_few_bytes_besides_its_name_and_data() {
        let base = (0x1_0000_0100, 1_700_000_000_000);
        let leaf = Stat {
            czxid: 0x1_0000_2000,
            mzxid: 0x1_0000_2000,
            pzxid: 0x1_0000_2000,
            ctime: 1_700_000_000_900,
            mtime: 1_700_000_000_900,
            data_length: 32,
            ..Stat::default()
        };
        let mut out = Vec::new();
        encode(&mut out, base, (57, None, b"n042"), &leaf, Some(&[7; 32]));
        // flags, name (1 + 4), parent (1), czxid and ctime (2 each: deltas of 7,936 and 900),
        // data (1 + 32)
        assert_eq!(out.len(), 1 + 5 + 1 + 2 + 2 + 33);
    }
}
