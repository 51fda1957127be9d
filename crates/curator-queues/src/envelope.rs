//! Curator's multi-item envelope: the data of every `DistributedQueue` node.
//!
//! `int32 BE 0x00010001`, then per item `0x01`, `int32 BE length`, the bytes; finally `0x02`.

use curator_framework::{Error, Result};

const VERSION: i32 = 0x0001_0001;
const ITEM: u8 = 0x01;
const END: u8 = 0x02;

/// The envelope holding `items`.
pub(crate) fn encode(items: &[Vec<u8>]) -> Vec<u8> {
    let size = 5 + items.iter().map(|i| 5 + i.len()).sum::<usize>();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&VERSION.to_be_bytes());
    for item in items {
        out.push(ITEM);
        out.extend_from_slice(&(item.len() as i32).to_be_bytes());
        out.extend_from_slice(item);
    }
    out.push(END);
    out
}

/// The items in an envelope.
pub(crate) fn decode(path: &str, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = |why: &str| Error::decode(path, format!("not a queue item envelope: {why}"));
    let mut rest = bytes;
    let version = take(&mut rest, 4).ok_or_else(|| bad("too short"))?;
    if version != VERSION.to_be_bytes() {
        return Err(bad("unknown version"));
    }
    let mut items = Vec::new();
    loop {
        match take(&mut rest, 1).ok_or_else(|| bad("no end mark"))?[0] {
            ITEM => {
                let len = take(&mut rest, 4).ok_or_else(|| bad("truncated length"))?;
                let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
                let len = usize::try_from(len).map_err(|_| bad("negative length"))?;
                items.push(
                    take(&mut rest, len)
                        .ok_or_else(|| bad("truncated item"))?
                        .to_vec(),
                );
            }
            END => return Ok(items),
            _ => return Err(bad("unknown mark")),
        }
    }
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if rest.len() < n {
        return None;
    }
    let (head, tail) = rest.split_at(n);
    *rest = tail;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curator_bytes() {
        assert_eq!(
            encode(&[b"hi".to_vec()]),
            [0, 1, 0, 1, 1, 0, 0, 0, 2, b'h', b'i', 2]
        );
        let items = vec![b"a".to_vec(), Vec::new(), b"xyz".to_vec()];
        assert_eq!(decode("/q", &encode(&items)).unwrap(), items);
        assert!(decode("/q", b"junk").is_err());
        assert!(decode("/q", &[0, 1, 0, 1, 1, 0, 0, 0, 9, b'h']).is_err());
        assert!(decode("/q", &[0, 1, 0, 1]).is_err());
    }
}
