//! `FencingGate`: admits fencing tokens for a resource outside ZooKeeper in non-decreasing order.

use std::fmt;

use curator_framework::{CuratorFramework, Error, Result, paths};

/// A gate for a resource outside ZooKeeper (a file, a bucket, a database table) that refuses
/// writers holding a stale lock: it remembers the highest fencing token it admitted, in one node,
/// and admits a token only when it is not older than that one.
///
/// Tokens come from [`Hold::fencing_token`](curator_framework::recipe::Hold::fencing_token):
/// a [`LockGuard`](crate::LockGuard)'s or a semaphore [`Lease`](crate::Lease)'s node creation
/// zxid, or a [`LeaseGrant`](crate::LeaseGrant)'s winning write: zxids of one ensemble, so
/// they compare across recipes. A holder that was paused (a long GC, a stopped
/// process) while its session expired and someone else took the lock and passed the gate is
/// refused when it wakes up.
///
/// **Equal tokens are admitted**: the same holder may pass the gate as often as it writes.
///
/// **How it works.** Each [`admit`](Self::admit) reads the node (data and version), decides, and
/// makes ONE conditional write: `setData` with the version it read (or a create when the node is
/// missing). When another admission wrote in between (`BadVersion`, `NodeExists`) it reads again
/// and decides again. An admission writes even when the token equals the stored one, so that a
/// read served late by a follower can never admit a token that an admission elsewhere already
/// overtook: every admission is ordered by the versions of the node. A refusal needs no write
/// (stored tokens only grow, so a late read shows a lower one than the truth).
///
/// **Encoding.** The node holds the decimal text of the highest admitted token (an `i64`, ASCII,
/// no newline: `12884901890`), readable from Java, Kazoo or `curator get`. Empty data counts as
/// "nothing admitted yet", so the node may be made beforehand.
///
/// **Limits.** Admission is a check at one moment: the gate protects a resource when every
/// writer passes it right before writing, and the write itself is quick next to a session
/// timeout. A resource that can check the token itself in the same atomic step is stronger.
///
/// ```no_run
/// # async fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
/// use curator_locks::{Admission, FencingGate, InterProcessMutex};
/// let mutex = InterProcessMutex::builder(client.clone(), "/locks/reports").build()?;
/// let gate = FencingGate::new(client, "/gates/reports-bucket")?;
/// let guard = mutex.acquire().await?;
/// match gate.admit(guard.fencing_token()).await? {
///     Admission::Admitted => { /* write the report */ }
///     Admission::Refused { highest } => println!("stale holder: {highest} passed already"),
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FencingGate {
    client: CuratorFramework,
    path: String,
}

impl fmt::Debug for FencingGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencingGate")
            .field("path", &self.path)
            .finish()
    }
}

/// What [`FencingGate::admit`] decided.
///
/// ```
/// use curator_locks::Admission;
/// let refused = Admission::Refused { highest: 42 };
/// assert!(!refused.is_admitted());
/// assert!(Admission::Admitted.is_admitted());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use = "a refused token must not write to the resource"]
pub enum Admission {
    /// The token is the highest the gate has seen (or equals it): it is stored, go ahead.
    Admitted,
    /// A newer token passed the gate already: the holder is stale and must not write.
    Refused {
        /// The highest token the gate has admitted (as read).
        highest: i64,
    },
}

impl Admission {
    /// Whether the token was admitted.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Admission::Admitted)
    }
}

impl FencingGate {
    /// The gate whose state is the node at `path` (created, with its parents, on the first
    /// admission).
    ///
    /// ```no_run
    /// # fn demo(client: curator_framework::CuratorFramework) -> curator_framework::Result<()> {
    /// let gate = curator_locks::FencingGate::new(client, "/gates/orders-db")?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path ZooKeeper would reject.
    pub fn new(client: CuratorFramework, path: &str) -> Result<Self> {
        paths::validate(path)?;
        Ok(Self {
            client,
            path: path.to_owned(),
        })
    }

    /// The gate's node.
    ///
    /// ```no_run
    /// # fn demo(gate: curator_locks::FencingGate) {
    /// println!("gate at {}", gate.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Admits `token` when it is not older than the highest token admitted so far, storing it;
    /// refuses it otherwise (the stored token is left as it is).
    ///
    /// ```no_run
    /// # async fn demo(gate: curator_locks::FencingGate) -> curator_framework::Result<()> {
    /// assert!(gate.admit(7).await?.is_admitted());
    /// assert!(gate.admit(7).await?.is_admitted()); // the same holder again
    /// assert_eq!(gate.admit(5).await?, curator_locks::Admission::Refused { highest: 7 });
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative token (tokens are zxids, never negative),
    /// before anything is sent; connection errors after the client's retry policy gave up;
    /// [`Error::Decode`] when the node holds something other than a decimal token.
    ///
    /// # Cancellation safety
    /// Dropping the future leaves the gate consistent: the one write either happened (the token
    /// counts as admitted, as it would for a holder that crashed right after) or did not.
    pub async fn admit(&self, token: i64) -> Result<Admission> {
        check_token(token)?;
        let text = token.to_string();
        loop {
            match self.client.get_data().for_path(&self.path).await {
                Ok((data, stat)) => {
                    if let Some(highest) = self.decode(&data)? {
                        if token < highest {
                            return Ok(Admission::Refused { highest });
                        }
                    }
                    match self
                        .client
                        .set_data()
                        .with_version(stat.version)
                        .for_path(&self.path, &text)
                        .await
                    {
                        Ok(_) => return Ok(Admission::Admitted),
                        // Another admission (or a delete) came first: decide again.
                        Err(Error::BadVersion | Error::NoNode) => continue,
                        Err(error) => return Err(error),
                    }
                }
                Err(Error::NoNode) => {
                    match self
                        .client
                        .create()
                        .creating_parents_if_needed()
                        .for_path(&self.path, &text)
                        .await
                    {
                        Ok(_) => return Ok(Admission::Admitted),
                        Err(Error::NodeExists) => continue,
                        Err(error) => return Err(error),
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The highest token admitted so far (`None` before the first admission).
    ///
    /// ```no_run
    /// # async fn demo(gate: curator_locks::FencingGate) -> curator_framework::Result<()> {
    /// if let Some(token) = gate.highest().await? {
    ///     println!("last writer held token {token}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Connection errors; [`Error::Decode`] as for [`admit`](Self::admit).
    ///
    /// # Cancellation safety
    /// Safe (a read).
    pub async fn highest(&self) -> Result<Option<i64>> {
        match self.client.get_data().for_path(&self.path).await {
            Ok((data, _)) => self.decode(&data),
            Err(Error::NoNode) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn decode(&self, data: &[u8]) -> Result<Option<i64>> {
        decode_token(data).map_err(|reason| Error::Decode {
            path: self.path.clone(),
            reason,
        })
    }
}

/// Tokens are zxids (a lock node's creation, a lease grant's write): 0 or more.
fn check_token(token: i64) -> Result<()> {
    if token < 0 {
        return Err(Error::InvalidArgument(format!(
            "a fencing token is a zxid, never negative, not {token}"
        )));
    }
    Ok(())
}

/// The stored token: decimal text (surrounding whitespace tolerated, for nodes written by hand);
/// empty means none.
fn decode_token(data: &[u8]) -> std::result::Result<Option<i64>, String> {
    let text = std::str::from_utf8(data)
        .map_err(|_| "a fencing gate holds a decimal token, not binary data".to_owned())?
        .trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("a fencing gate holds a decimal token, not {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::{FencingGate, decode_token};
    use curator_framework::{CuratorFramework, Error};

    #[tokio::test]
    async fn negative_tokens_are_refused_before_anything_is_sent() {
        // Never started: a refusal that tried the server would fail another way.
        let client = CuratorFramework::builder()
            .connect_string("127.0.0.1:1")
            .build()
            .unwrap();
        let gate = FencingGate::new(client, "/gate").unwrap();
        for token in [-1, -5, i64::MIN] {
            assert!(
                matches!(gate.admit(token).await, Err(Error::InvalidArgument(ref why)) if why.contains("negative")),
                "{token}"
            );
        }
    }

    #[test]
    fn tokens_are_decimal_text() {
        assert_eq!(decode_token(b""), Ok(None));
        assert_eq!(decode_token(b"12884901890"), Ok(Some(12_884_901_890)));
        assert_eq!(decode_token(b" 42\n"), Ok(Some(42)));
        assert_eq!(decode_token(b"-1"), Ok(Some(-1)));
        assert!(decode_token(b"x").is_err());
        assert!(decode_token(&[0xff]).is_err());
    }
}
