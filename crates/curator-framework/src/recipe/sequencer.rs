//! [`Sequencer`]: a hold, exported for a resource server to check (Chubby's sequencer).

use std::fmt;
use std::str::FromStr;

use crate::client::CuratorFramework;
use crate::error::{Error, Result};

/// The text form's first field: the format and its version.
const PREFIX: &str = "zkseq1";

/// A hold, exported: the hold's node (its full path on the server, namespace included), its
/// fencing token (the node's creation zxid) and the session that made it (Chubby's sequencer).
/// A holder hands it to a resource server with each request; the server checks it in one call
/// ([`check`](Self::check): one `exists`) and refuses a request whose hold is gone (released,
/// expired, taken over), which a token alone cannot tell a resource that does not remember the
/// highest token it saw.
///
/// The text form, for any language: `zkseq1:<session>:<token>:<path>`, the session id and the
/// token as 16 lower-case hexadecimal digits each, the path last (it may hold `:`). For example
/// `zkseq1:0000018f2c3d0001:0000000100000007:/locks/db/_c_1b2c…-lock-0000000003`. It is valid
/// while a node is at `path` whose `czxid` is the token and whose `ephemeralOwner` is the
/// session: a check any ZooKeeper client can make with `exists` (the `curator validate`
/// command makes it from a shell).
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework, hold: curator_framework::recipe::Hold) -> curator_framework::Result<()> {
/// use curator_framework::recipe::Sequencer;
/// let text = hold.sequencer().expect("a hold on a session").to_string();
/// // ... on the resource server, with a client of its own:
/// let sequencer: Sequencer = text.parse()?;
/// if !sequencer.check(&client).await? {
///     // refuse the request: its hold is gone
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sequencer {
    session: i64,
    token: i64,
    path: String,
}

impl Sequencer {
    /// A sequencer of the node at `path` (the full path on the server) created with zxid
    /// `token` by session `session`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when `path` is not an absolute node path.
    pub fn new(session: i64, token: i64, path: &str) -> Result<Self> {
        crate::paths::validate(path)?;
        Ok(Self {
            session,
            token,
            path: path.to_owned(),
        })
    }

    /// The session that made the node.
    pub fn session_id(&self) -> i64 {
        self.session
    }

    /// The fencing token: the node's creation zxid.
    pub fn fencing_token(&self) -> i64 {
        self.token
    }

    /// The node's full path on the server.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the hold is still there: a node at the path, created at the token, owned by the
    /// session. One `exists`, on the server's path (whatever `client`'s namespace); a `sync`
    /// first is the caller's choice, for a check that must see the latest writes.
    ///
    /// # Errors
    /// Connection errors the retry policy gives up on.
    pub async fn check(&self, client: &CuratorFramework) -> Result<bool> {
        let stat = client
            .without_namespace()
            .check_exists()
            .for_path(&self.path)
            .await?;
        Ok(stat
            .is_some_and(|stat| stat.czxid == self.token && stat.ephemeral_owner == self.session))
    }
}

impl fmt::Display for Sequencer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}:{:016x}:{:016x}:{}",
            self.session, self.token, self.path
        )
    }
}

impl FromStr for Sequencer {
    type Err = Error;

    /// Reads the text form (see [`Sequencer`]).
    ///
    /// ```
    /// use curator_framework::recipe::Sequencer;
    /// let s: Sequencer = "zkseq1:0000000000000abc:0000000100000007:/locks/a/lock-0000000001"
    ///     .parse()
    ///     .unwrap();
    /// assert_eq!(s.fencing_token(), 0x1_0000_0007);
    /// assert!("zkseq1:abc:7".parse::<Sequencer>().is_err());
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "not a sequencer ({why}): expected {PREFIX}:<session, 16 hex digits>:<token, 16 \
                 hex digits>:<path>"
            ))
        };
        let mut fields = text.trim().splitn(4, ':');
        if fields.next() != Some(PREFIX) {
            return Err(bad("unknown format"));
        }
        let mut number = |what: &str| {
            let field = fields.next().ok_or_else(|| bad(&format!("no {what}")))?;
            if field.len() != 16 || !field.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(&format!("the {what} is not 16 hex digits")));
            }
            u64::from_str_radix(field, 16)
                .map(|n| n as i64)
                .map_err(|_| bad(&format!("the {what} is not a number")))
        };
        let session = number("session")?;
        let token = number("token")?;
        let path = fields.next().ok_or_else(|| bad("no path"))?;
        Self::new(session, token, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_goes_both_ways() {
        let s = Sequencer::new(-0x1234, 0x1_0000_0007, "/a:b/_c_x-lock-0000000001").unwrap();
        let text = s.to_string();
        assert_eq!(
            text,
            "zkseq1:ffffffffffffedcc:0000000100000007:/a:b/_c_x-lock-0000000001"
        );
        assert_eq!(text.parse::<Sequencer>().unwrap(), s);
    }

    #[test]
    fn bad_text_is_a_typed_error() {
        for text in [
            "",
            "zkseq2:0000000000000001:0000000000000001:/a",
            "zkseq1:1:0000000000000001:/a",
            "zkseq1:000000000000000g:0000000000000001:/a",
            "zkseq1:0000000000000001:0000000000000001",
            "zkseq1:0000000000000001:0000000000000001:relative",
            "zkseq1:0000000000000001:+000000000000001:/a",
        ] {
            assert!(
                matches!(
                    text.parse::<Sequencer>(),
                    Err(Error::InvalidArgument(_) | Error::InvalidPath { .. })
                ),
                "{text:?}"
            );
        }
    }
}
