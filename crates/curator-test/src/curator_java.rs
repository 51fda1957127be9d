//! Java programs on Debian's Apache Curator jars, for interoperability tests.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::error::{Error, Result};
use crate::java::java_executable;

/// Debian's Apache Curator 5.4 and ZooKeeper jars (their manifests name the rest), and a logger
/// that keeps quiet.
pub const CURATOR_CLASSPATH: &[&str] = &[
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/curator-x-discovery.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/guava.jar",
    "/usr/share/java/slf4j-api.jar",
    "/usr/share/java/slf4j-nop.jar",
];

/// Debian's Netty jars that ZooKeeper's Java client needs to speak TLS
/// (`ClientCnxnSocketNetty`). ZooKeeper's manifest names some of them and leaves out
/// `netty-codec` (the TLS handler's base class), `netty-resolver` and the epoll transport's
/// `netty-transport-native-unix-common`; all are listed here.
pub const NETTY_CLASSPATH: &[&str] = &[
    "/usr/share/java/netty-buffer.jar",
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-common.jar",
    "/usr/share/java/netty-handler.jar",
    "/usr/share/java/netty-resolver.jar",
    "/usr/share/java/netty-transport.jar",
    "/usr/share/java/netty-transport-native-epoll.jar",
    "/usr/share/java/netty-transport-native-unix-common.jar",
];

/// Extra settings for the JVM of a [`CuratorProgram`]: system properties, classpath entries
/// (after Curator's) and other JVM arguments, for
/// [`CuratorProgram::start_with`]. Also usable by code that starts its own JVM:
/// [`args`](Self::args) and [`classpath`](Self::classpath).
///
/// [`zookeeper_tls`](Self::zookeeper_tls) makes ZooKeeper's Java client (so Curator) connect
/// over TLS, the way a production Java client is configured:
///
/// ```
/// use curator_test::JvmOptions;
/// let jvm = JvmOptions::zookeeper_tls("/tmp/certs/ca.crt".as_ref())
///     .with_key_store("/tmp/certs/alice.pem".as_ref()) // a client certificate (x509)
///     .system_property("zookeeper.ssl.hostnameVerification", "true");
/// assert!(jvm.args().contains(&"-Dzookeeper.client.secure=true".to_owned()));
/// assert!(jvm.args().contains(&"-Dzookeeper.ssl.enabledProtocols=TLSv1.3,TLSv1.2".to_owned()));
/// assert!(jvm.args().contains(&"-Dzookeeper.ssl.keyStore.location=/tmp/certs/alice.pem".to_owned()));
/// assert!(jvm.classpath().iter().any(|jar| jar.ends_with("netty-codec.jar")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JvmOptions {
    args: Vec<String>,
    classpath: Vec<PathBuf>,
}

impl JvmOptions {
    /// No extra settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// ZooKeeper's Java client over TLS, trusting the CA certificate in the PEM file `ca_pem`
    /// ([`CertificateFiles::ca`](crate::CertificateFiles::ca)): `zookeeper.client.secure=true`,
    /// the Netty client socket (`zookeeper.clientCnxnSocket`), a PEM trust store, TLS 1.3 and
    /// 1.2 (below), and [`NETTY_CLASSPATH`]. The program must connect to the server's TLS port
    /// ([`secure_connect_string`](crate::TestingServer::secure_connect_string)); the host name
    /// is verified against the server's certificate, as in production.
    ///
    /// The client offers TLS 1.3 and 1.2 (`zookeeper.ssl.protocol=TLSv1.3`,
    /// `zookeeper.ssl.enabledProtocols=TLSv1.3,TLSv1.2`), so it reaches both releases the
    /// harness starts with their default settings: a ZooKeeper 3.9.3 server on Java 11 or later
    /// accepts only TLS 1.3 (its default protocol became TLS 1.3 in ZOOKEEPER-4415, 3.9.2, and
    /// its Netty TLS context enables only that protocol unless `ssl.enabledProtocols` says
    /// otherwise, since ZOOKEEPER-4622, 3.9.0), while Debian's ZooKeeper 3.8.0 Java client
    /// offers only TLS 1.2 by default, and a 3.8.0 server accepts only TLS 1.2.
    pub fn zookeeper_tls(ca_pem: &Path) -> Self {
        NETTY_CLASSPATH.iter().fold(
            Self::new()
                .system_property("zookeeper.client.secure", "true")
                .system_property(
                    "zookeeper.clientCnxnSocket",
                    "org.apache.zookeeper.ClientCnxnSocketNetty",
                )
                .system_property("zookeeper.ssl.trustStore.location", ca_pem.display())
                .system_property("zookeeper.ssl.trustStore.type", "PEM")
                .system_property("zookeeper.ssl.protocol", "TLSv1.3")
                .system_property("zookeeper.ssl.enabledProtocols", "TLSv1.3,TLSv1.2"),
            |options, jar| options.classpath_entry(jar),
        )
    }

    /// Presents a client certificate: `key_store_pem` holds the private key and the certificate
    /// ([`PemFiles::key_store`](crate::PemFiles::key_store)), read as a PEM key store.
    pub fn with_key_store(self, key_store_pem: &Path) -> Self {
        self.system_property("zookeeper.ssl.keyStore.location", key_store_pem.display())
            .system_property("zookeeper.ssl.keyStore.type", "PEM")
    }

    /// Adds `-D<key>=<value>`.
    pub fn system_property(self, key: &str, value: impl std::fmt::Display) -> Self {
        self.arg(format!("-D{key}={value}"))
    }

    /// Adds a JVM argument as it is (`-Xmx1g`, `-verbose:gc`).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds a jar or class directory to the classpath, after Curator's.
    pub fn classpath_entry(mut self, entry: impl AsRef<Path>) -> Self {
        self.classpath.push(entry.as_ref().to_owned());
        self
    }

    /// The JVM arguments, in the order they were added.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The extra classpath entries, in the order they were added.
    pub fn classpath(&self) -> &[PathBuf] {
        &self.classpath
    }
}

/// A Java program compiled against Apache Curator, ready to run.
///
/// The program is expected to speak lines on standard input and output, and to exit when its
/// standard input closes, so it never outlives the test that started it.
///
/// ```no_run
/// # fn demo() -> curator_test::Result<()> {
/// let program = curator_test::CuratorProgram::compile(std::path::Path::new("tests/java/MutexPeer.java"))?;
/// let mut peer = program.start(&["127.0.0.1:2181", "/locks/a"])?;
/// let answer = peer.ask("acquire 1000")?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CuratorProgram {
    /// Shared with every running peer, so the classes outlive the program value.
    classes: std::sync::Arc<tempfile::TempDir>,
    class: String,
}

impl CuratorProgram {
    /// Compiles `source` (one `.java` file whose public class is named after it) with `javac`.
    ///
    /// # Errors
    /// [`Error::JarNotFound`] without Debian's Curator jars (`just setup`), [`Error::Io`] without
    /// `javac`, [`Error::Protocol`] when compilation fails (with `javac`'s output).
    pub fn compile(source: &Path) -> Result<Self> {
        for jar in CURATOR_CLASSPATH {
            if !Path::new(jar).is_file() {
                return Err(Error::JarNotFound {
                    path: jar.into(),
                    classpath: CURATOR_CLASSPATH.join(":"),
                });
            }
        }
        let classes = tempfile::Builder::new()
            .prefix("curator-test-java-")
            .tempdir()
            .map_err(Error::io("creating a class directory"))?;
        let output = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(classes.path())
            .args(["-cp", &CURATOR_CLASSPATH.join(":")])
            .arg(source)
            .output()
            .map_err(Error::io("running javac (run `just setup`)"))?;
        if !output.status.success() {
            return Err(Error::Protocol(format!(
                "javac {} failed:\n{}",
                source.display(),
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        let class = source
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        Ok(Self {
            classes: std::sync::Arc::new(classes),
            class,
        })
    }

    /// Starts the program with `args`.
    ///
    /// # Errors
    /// [`Error::JavaNotFound`] or [`Error::Io`].
    pub fn start(&self, args: &[&str]) -> Result<JavaPeer> {
        self.start_with(args, &JvmOptions::new())
    }

    /// Starts the program with `args` and extra JVM settings: system properties, classpath
    /// entries, other JVM arguments. [`JvmOptions::zookeeper_tls`] connects the program's
    /// ZooKeeper client over TLS.
    ///
    /// ```no_run
    /// # async fn demo() -> curator_test::Result<()> {
    /// use curator_test::{CuratorProgram, JvmOptions, TestCertificates, TestingServer};
    /// let certs = TestCertificates::generate()?;
    /// let server = TestingServer::builder().tls(certs.server_tls()).start().await?;
    /// let files = certs.write_to_temp_dir()?;
    /// let program = CuratorProgram::compile(std::path::Path::new("tests/java/MutexPeer.java"))?;
    /// let secure = server.secure_connect_string().unwrap(); // localhost:<tls port>
    /// let mut peer = program.start_with(
    ///     &[secure.as_str(), "/locks/a"],
    ///     &JvmOptions::zookeeper_tls(files.ca()),
    /// )?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::JarNotFound`] when a classpath entry of `jvm` is missing,
    /// [`Error::JavaNotFound`] or [`Error::Io`].
    pub fn start_with(&self, args: &[&str], jvm: &JvmOptions) -> Result<JavaPeer> {
        let mut classpath: Vec<String> = CURATOR_CLASSPATH.iter().map(|&e| e.to_owned()).collect();
        for entry in &jvm.classpath {
            if !entry.exists() {
                return Err(Error::JarNotFound {
                    path: entry.clone(),
                    classpath: jvm
                        .classpath
                        .iter()
                        .map(|e| e.display().to_string())
                        .collect::<Vec<_>>()
                        .join(":"),
                });
            }
            classpath.push(entry.display().to_string());
        }
        classpath.push(self.classes.path().display().to_string());
        let mut child = Command::new(java_executable()?)
            .args(["-Xmx256m", "-XX:+UseSerialGC"])
            .args(&jvm.args)
            .args(["-cp", &classpath.join(":"), &self.class])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(Error::io(format!("starting java {}", self.class)))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        Ok(JavaPeer {
            child,
            stdin,
            stdout,
            _classes: std::sync::Arc::clone(&self.classes),
        })
    }
}

/// A running Java program: send it a line, read its answer.
#[derive(Debug)]
pub struct JavaPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    _classes: std::sync::Arc<tempfile::TempDir>,
}

impl JavaPeer {
    /// Sends `line` and returns the program's one-line answer (without the newline).
    ///
    /// # Errors
    /// [`Error::Io`] when the program died or closed its output.
    pub fn ask(&mut self, line: &str) -> Result<String> {
        self.send(line)?;
        self.read_line()
    }

    /// Sends `line` without waiting for the answer, for a command that runs while the test does
    /// something else; [`read_line`](Self::read_line) collects the answer later.
    ///
    /// ```no_run
    /// # fn demo(peer: &mut curator_test::JavaPeer) -> curator_test::Result<()> {
    /// peer.send("acquire 10000")?; // blocks in the peer until the lock is free
    /// // ... release the lock elsewhere ...
    /// assert_eq!(peer.read_line()?, "acquired");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] when the program died or closed its input.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("peer closed".into()))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(Error::io("writing to the Java peer"))
    }

    /// Reads the program's next line.
    ///
    /// # Errors
    /// [`Error::Io`] when the program died or closed its output.
    pub fn read_line(&mut self) -> Result<String> {
        let stdout = self
            .stdout
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("peer closed".into()))?;
        let mut answer = String::new();
        let n = stdout
            .read_line(&mut answer)
            .map_err(Error::io("reading from the Java peer"))?;
        if n == 0 {
            return Err(Error::Io {
                context: "the Java peer ended".into(),
                source: std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
            });
        }
        Ok(answer.trim_end().to_owned())
    }
}

impl Drop for JavaPeer {
    fn drop(&mut self) {
        // Closing its input ends a well-behaved peer; kill it if it does not go.
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
