//! Who made a recipe node: host, process id and an application-chosen name.
//!
//! Lock nodes (mutex, read/write lock, semaphore leases and their locks), barrier nodes and
//! double-barrier member nodes carry the identity of the client that made them, so an operator
//! (or `curator-inspect`) can tell who holds what. The encoding is one line of text,
//!
//! ```text
//! host=build-7;pid=4242;name=report-writer
//! ```
//!
//! with `%`, `;`, `=` and control characters in a value written as `%XX`. The name defaults to
//! the executable's file name; set it with
//! [`CuratorFrameworkBuilder::identity`](crate::CuratorFrameworkBuilder::identity).
//!
//! Java Curator never parses lock data (it writes the local IP address there and reads nothing
//! but its revocation marker `__REVOKE__`), so Java and Rust processes still share these paths;
//! [`Identity::parse`] answers `None` for Java's data.

use std::fmt;

/// Who made a node: host name, process id and an application-chosen name.
///
/// ```
/// use curator_framework::identity::Identity;
/// let me = Identity::new("build-7", 4242, "report-writer");
/// assert_eq!(me.to_string(), "host=build-7;pid=4242;name=report-writer");
/// assert_eq!(Identity::parse(&me.to_bytes()), Some(me));
/// assert_eq!(Identity::parse(b"10.0.0.7"), None); // Java Curator's lock data
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    host: String,
    pid: u32,
    name: String,
}

impl Identity {
    /// An identity with these parts.
    ///
    /// ```
    /// let id = curator_framework::identity::Identity::new("h", 1, "n");
    /// assert_eq!((id.host(), id.pid(), id.name()), ("h", 1, "n"));
    /// ```
    pub fn new(host: impl Into<String>, pid: u32, name: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            pid,
            name: name.into(),
        }
    }

    /// This process: the host name, the process id and `name`.
    ///
    /// ```
    /// let me = curator_framework::identity::Identity::this_process("worker");
    /// assert_eq!(me.pid(), std::process::id());
    /// ```
    pub fn this_process(name: impl Into<String>) -> Self {
        Self::new(host_name(), std::process::id(), name)
    }

    /// This process with the executable's file name as its name: a client's default.
    ///
    /// ```
    /// let me = curator_framework::identity::Identity::default_for_process();
    /// assert!(!me.name().is_empty());
    /// ```
    pub fn default_for_process() -> Self {
        let name = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".to_owned());
        Self::this_process(name)
    }

    /// The host name.
    ///
    /// ```
    /// assert_eq!(curator_framework::identity::Identity::new("h", 1, "n").host(), "h");
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The process id.
    ///
    /// ```
    /// assert_eq!(curator_framework::identity::Identity::new("h", 1, "n").pid(), 1);
    /// ```
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The application-chosen name.
    ///
    /// ```
    /// assert_eq!(curator_framework::identity::Identity::new("h", 1, "n").name(), "n");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The node data: `host=…;pid=…;name=…` in UTF-8.
    ///
    /// ```
    /// let id = curator_framework::identity::Identity::new("h", 1, "a;b");
    /// assert_eq!(id.to_bytes(), b"host=h;pid=1;name=a%3Bb");
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_string().into_bytes()
    }

    /// Reads node data written by [`to_bytes`](Self::to_bytes); `None` for anything else (empty
    /// data, Java Curator's IP address text, a participant id). Unknown fields are skipped, so
    /// later versions may add some.
    ///
    /// ```
    /// use curator_framework::identity::Identity;
    /// let id = Identity::parse(b"host=h;pid=7;name=x;zone=eu").unwrap();
    /// assert_eq!((id.host(), id.pid(), id.name()), ("h", 7, "x"));
    /// assert_eq!(Identity::parse(b""), None);
    /// ```
    pub fn parse(data: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(data).ok()?;
        if !text.starts_with("host=") {
            return None;
        }
        let (mut host, mut pid, mut name) = (None, None, None);
        for field in text.split(';') {
            let (key, value) = field.split_once('=')?;
            let value = unescape(value)?;
            match key {
                "host" => host = Some(value),
                "pid" => pid = Some(value.parse().ok()?),
                "name" => name = Some(value),
                _ => {}
            }
        }
        Some(Self::new(host?, pid?, name?))
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host={};pid={};name={}",
            escape(&self.host),
            self.pid,
            escape(&self.name)
        )
    }
}

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '%' | ';' | '=') || c.is_control() {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The host name from the kernel, `/etc/hostname` or `$HOSTNAME`; `unknown` when none says.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|file| std::fs::read_to_string(file).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::Identity;

    #[test]
    fn round_trips_awkward_names() {
        for name in ["", "a;b=c%d", "line\nbreak", "ünïcode"] {
            let id = Identity::new("h=1", 9, name);
            assert_eq!(
                Identity::parse(&id.to_bytes()),
                Some(id.clone()),
                "{name:?}"
            );
        }
    }

    #[test]
    fn other_data_is_not_an_identity() {
        for data in [
            &b""[..],
            b"10.1.2.3",
            b"__REVOKE__",
            b"host=h;pid=x;name=n",
            b"host=h;name=n",
            b"host=h;pid=1;name=%G1",
            &[0xff, 0xfe],
        ] {
            assert_eq!(Identity::parse(data), None, "{data:?}");
        }
    }
}
