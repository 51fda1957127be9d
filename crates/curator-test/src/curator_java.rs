//! Java programs on Debian's Apache Curator jars, for interoperability tests.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
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
        let classpath = format!(
            "{}:{}",
            CURATOR_CLASSPATH.join(":"),
            self.classes.path().display()
        );
        let mut child = Command::new(java_executable()?)
            .args([
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-cp",
                &classpath,
                &self.class,
            ])
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
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("peer closed".into()))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(Error::io("writing to the Java peer"))?;
        self.read_line()
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
