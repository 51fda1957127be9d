//! The settings of a model server.

/// How a [`Model`](crate::Model) behaves where a ZooKeeper server is configurable.
///
/// The defaults are those of a ZooKeeper server started with `tickTime=2000` and
/// `extendedTypesEnabled=true` (TTL nodes on, as curator-rs's tests run real servers).
///
/// ```
/// use curator_zkmodel::ModelConfig;
///
/// let config = ModelConfig::default().tick_time(500).super_digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
/// assert_eq!(config.min_session_timeout(), 1_000);
/// assert_eq!(config.max_session_timeout(), 10_000);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub(crate) tick_time: i64,
    pub(crate) min_session_timeout: Option<i64>,
    pub(crate) max_session_timeout: Option<i64>,
    pub(crate) server_id: u8,
    pub(crate) extended_types: bool,
    pub(crate) super_digest: Option<String>,
    pub(crate) config_data: Vec<u8>,
    pub(crate) container_max_never_used: Option<i64>,
    pub(crate) release: ServerRelease,
}

/// The ZooKeeper release a [`Model`](crate::Model) answers as, where releases differ in what a
/// client sees. Both are checked against the real servers by the crate's conformance test.
///
/// ```
/// use curator_zkmodel::{ModelConfig, ServerRelease};
///
/// assert_eq!(ServerRelease::default(), ServerRelease::V3_9);
/// let config = ModelConfig::default().release(ServerRelease::V3_8);
/// # drop(config);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ServerRelease {
    /// ZooKeeper 3.8.0 as Debian 12 ships it (3.8.0-11+deb12u2, with the fix of
    /// CVE-2024-23944: notifications filtered by ACL).
    V3_8,
    /// ZooKeeper 3.9 (3.9.2 and later; 3.9.3 is what the conformance test runs).
    #[default]
    V3_9,
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            tick_time: 2_000,
            min_session_timeout: None,
            max_session_timeout: None,
            server_id: 0,
            extended_types: true,
            super_digest: None,
            config_data: Vec::new(),
            container_max_never_used: None,
            release: ServerRelease::V3_9,
        }
    }
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("tick_time", &self.tick_time)
            .field("min_session_timeout", &self.min_session_timeout())
            .field("max_session_timeout", &self.max_session_timeout())
            .field("server_id", &self.server_id)
            .field("extended_types", &self.extended_types)
            .field(
                "super_digest",
                &self.super_digest.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "config_data",
                &format_args!("<{} bytes>", self.config_data.len()),
            )
            .field("container_max_never_used", &self.container_max_never_used)
            .field("release", &self.release)
            .finish()
    }
}

impl ModelConfig {
    /// The tick in milliseconds (`tickTime`, at least 1): session expiry is rounded up to it,
    /// and the default session timeout bounds are 2 and 20 ticks.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().tick_time(100).max_session_timeout(), 2_000);
    /// ```
    pub fn tick_time(mut self, ms: u32) -> Self {
        self.tick_time = i64::from(ms.max(1));
        self
    }

    /// The shortest session timeout granted (`minSessionTimeout`; default 2 ticks).
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().min_session_timeout_ms(100).min_session_timeout(), 100);
    /// ```
    pub fn min_session_timeout_ms(mut self, ms: u32) -> Self {
        self.min_session_timeout = Some(i64::from(ms));
        self
    }

    /// The longest session timeout granted (`maxSessionTimeout`; default 20 ticks).
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().max_session_timeout_ms(90_000).max_session_timeout(), 90_000);
    /// ```
    pub fn max_session_timeout_ms(mut self, ms: u32) -> Self {
        self.max_session_timeout = Some(i64::from(ms));
        self
    }

    /// The server id (`myid`, 0 by default): the top byte of session ids.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// let config = ModelConfig::default().server_id(3);
    /// # drop(config);
    /// ```
    pub fn server_id(mut self, id: u8) -> Self {
        self.server_id = id;
        self
    }

    /// Whether TTL nodes are enabled (`zookeeper.extendedTypesEnabled`, on by default here).
    /// Off, createTTL is `Unimplemented`, as on a server without the setting.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// let config = ModelConfig::default().extended_types(false);
    /// # drop(config);
    /// ```
    pub fn extended_types(mut self, enabled: bool) -> Self {
        self.extended_types = enabled;
        self
    }

    /// The super user's digest (`zookeeper.DigestAuthenticationProvider.superDigest`), as
    /// [`acl::digest`](crate::acl::digest) makes it: a connection that authenticates with
    /// `digest` and the matching `user:password` passes every ACL check.
    ///
    /// ```
    /// use curator_zkmodel::{acl, ModelConfig};
    ///
    /// let config = ModelConfig::default().super_digest(acl::digest("super:secret"));
    /// # drop(config);
    /// ```
    pub fn super_digest(mut self, digest: impl Into<String>) -> Self {
        self.super_digest = Some(digest.into());
        self
    }

    /// The data of `/zookeeper/config` (empty by default, as on a standalone server).
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// let config = ModelConfig::default().config_data(b"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\nversion=0".to_vec());
    /// # drop(config);
    /// ```
    pub fn config_data(mut self, data: Vec<u8>) -> Self {
        self.config_data = data;
        self
    }

    /// How long an empty container that never had a child is kept before reaping
    /// (`znode.container.maxNeverUsedIntervalMs`; by default forever, as ZooKeeper).
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// let config = ModelConfig::default().container_max_never_used_ms(60_000);
    /// # drop(config);
    /// ```
    pub fn container_max_never_used_ms(mut self, ms: u32) -> Self {
        self.container_max_never_used = Some(i64::from(ms));
        self
    }

    /// The release to answer as where ZooKeeper releases differ (3.9 by default); see
    /// [`ServerRelease`] and the crate's "Differences between releases".
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, ServerRelease};
    ///
    /// assert_eq!(ModelConfig::default().release(ServerRelease::V3_8).server_release(), ServerRelease::V3_8);
    /// ```
    pub fn release(mut self, release: ServerRelease) -> Self {
        self.release = release;
        self
    }

    /// The release the model answers as.
    ///
    /// ```
    /// use curator_zkmodel::{ModelConfig, ServerRelease};
    ///
    /// assert_eq!(ModelConfig::default().server_release(), ServerRelease::V3_9);
    /// ```
    pub fn server_release(&self) -> ServerRelease {
        self.release
    }

    /// The tick in milliseconds.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().tick(), 2_000);
    /// ```
    pub fn tick(&self) -> i64 {
        self.tick_time
    }

    /// The shortest session timeout granted, in milliseconds.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().min_session_timeout(), 4_000);
    /// ```
    pub fn min_session_timeout(&self) -> i64 {
        self.min_session_timeout.unwrap_or(2 * self.tick_time)
    }

    /// The longest session timeout granted, in milliseconds.
    ///
    /// ```
    /// use curator_zkmodel::ModelConfig;
    ///
    /// assert_eq!(ModelConfig::default().max_session_timeout(), 40_000);
    /// ```
    pub fn max_session_timeout(&self) -> i64 {
        self.max_session_timeout.unwrap_or(20 * self.tick_time)
    }
}
