//! Bytes as text: as they are when they are UTF-8, or in base64 or hex.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clap::ValueEnum;

/// How `curator get` prints data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Encoding {
    /// Text; bytes that are not UTF-8 become U+FFFD (with --json: `"lossy": true`)
    Utf8,
    /// Base64 (standard alphabet, padded)
    Base64,
    /// Lowercase hex, two digits a byte
    Hex,
}

impl Encoding {
    /// Its name on the command line and in JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf8",
            Encoding::Base64 => "base64",
            Encoding::Hex => "hex",
        }
    }

    /// `data` as text, and whether that lost something (invalid UTF-8 replaced by U+FFFD).
    pub(crate) fn encode(self, data: &[u8]) -> (String, bool) {
        match self {
            Encoding::Utf8 => match std::str::from_utf8(data) {
                Ok(text) => (text.to_owned(), false),
                Err(_) => (String::from_utf8_lossy(data).into_owned(), true),
            },
            Encoding::Base64 => (STANDARD.encode(data), false),
            Encoding::Hex => (hex::encode(data), false),
        }
    }

    /// `data` as text without loss: as it is when it is UTF-8, else in base64.
    pub(crate) fn lossless(data: &[u8]) -> (String, Encoding) {
        match std::str::from_utf8(data) {
            Ok(text) => (text.to_owned(), Encoding::Utf8),
            Err(_) => (STANDARD.encode(data), Encoding::Base64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_each_way() {
        let data = b"\x00hi\xff";
        assert_eq!(
            Encoding::Utf8.encode(data),
            ("\u{0}hi\u{fffd}".to_owned(), true)
        );
        assert_eq!(Encoding::Utf8.encode(b"hi"), ("hi".to_owned(), false));
        assert_eq!(
            Encoding::Base64.encode(data),
            ("AGhp/w==".to_owned(), false)
        );
        assert_eq!(Encoding::Hex.encode(data), ("006869ff".to_owned(), false));
        assert_eq!(
            Encoding::lossless(data),
            ("AGhp/w==".to_owned(), Encoding::Base64)
        );
        assert_eq!(Encoding::lossless(b"hi"), ("hi".to_owned(), Encoding::Utf8));
    }
}
