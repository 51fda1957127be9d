//! Finding Java and ZooKeeper's jars, and running a JVM that cannot outlive the test process.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use crate::error::{Error, Result};

/// The classpath used when `ZOOKEEPER_CLASSPATH` is not set: Debian's ZooKeeper jar (its manifest
/// names its dependencies) and, when present, a logger so start-up failures reach the log file.
const DEBIAN_CLASSPATH: &[&str] = &["/usr/share/java/zookeeper.jar"];
const DEBIAN_LOGGER: &str = "/usr/share/java/slf4j-simple.jar";

/// Finds the `java` executable: `$JAVA_HOME/bin/java`, then `java` on `PATH`.
pub(crate) fn java_executable() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = Path::new(&home).join("bin/java");
        if java.is_file() {
            return Ok(java);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("java"))
        .find(|candidate| candidate.is_file())
        .ok_or(Error::JavaNotFound)
}

/// The classpath that runs ZooKeeper's server classes: `ZOOKEEPER_CLASSPATH` when set, otherwise
/// Debian's jars. Every entry must exist.
pub(crate) fn zookeeper_classpath() -> Result<String> {
    let classpath = match std::env::var("ZOOKEEPER_CLASSPATH") {
        Ok(custom) if !custom.trim().is_empty() => custom,
        _ => {
            let mut entries: Vec<&str> = DEBIAN_CLASSPATH.to_vec();
            if Path::new(DEBIAN_LOGGER).is_file() {
                entries.push(DEBIAN_LOGGER);
            }
            entries.join(":")
        }
    };
    for entry in classpath.split(':').filter(|e| !e.is_empty()) {
        // A directory wildcard (`dir/*`) is checked through its directory.
        let checked = entry.strip_suffix("/*").unwrap_or(entry);
        if !Path::new(checked).exists() {
            return Err(Error::JarNotFound {
                path: PathBuf::from(entry),
                classpath,
            });
        }
    }
    Ok(classpath)
}

/// A JVM started under a small shell guard.
///
/// The guard holds the read end of a pipe whose write end only this process owns. When this
/// process drops the pipe, or dies for any reason (a panic, `SIGKILL` from a test runner's
/// timeout), the guard reads end-of-file and kills the JVM. So no test can leave a ZooKeeper
/// process behind, and no `unsafe` `pre_exec` hook is needed.
#[derive(Debug)]
pub(crate) struct JavaProcess {
    child: Child,
    lifeline: Option<ChildStdin>,
    log_path: PathBuf,
}

/// Runs `"$@"` in the background, kills it when standard input closes, and exits with its status.
const GUARD_SCRIPT: &str = r#"exec 3<&0
"$@" </dev/null &
pid=$!
( read -r _ <&3; kill -9 "$pid" 2>/dev/null ) &
wait "$pid"
"#;

impl JavaProcess {
    /// Starts `java <jvm_args> <main_class> <args>` with its output appended to `log_path`.
    pub(crate) fn spawn(
        jvm_args: &[String],
        main_class: &str,
        args: &[String],
        log_path: &Path,
    ) -> Result<Self> {
        let java = java_executable()?;
        let classpath = zookeeper_classpath()?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(Error::io(format!("opening {}", log_path.display())))?;
        let log_err = log
            .try_clone()
            .map_err(Error::io("duplicating the log file"))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(GUARD_SCRIPT)
            .arg("curator-test-guard")
            .arg(&java)
            .arg("-cp")
            .arg(&classpath)
            .args(jvm_args)
            .arg(main_class)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(Error::io(format!("starting {}", java.display())))?;
        let lifeline = child.stdin.take();
        Ok(Self {
            child,
            lifeline,
            log_path: log_path.to_owned(),
        })
    }

    /// The exit status if the JVM has already exited.
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last lines of the process's log, for error messages.
    pub(crate) fn log_tail(&self) -> String {
        log_tail(&self.log_path, 30)
    }

    /// Kills the JVM (`SIGKILL`, as a crash would) and waits until it is gone, so its ports are
    /// free when this returns.
    pub(crate) fn kill(&mut self) {
        // Closing the lifeline makes the guard kill the JVM; the guard exits once the JVM is reaped.
        drop(self.lifeline.take());
        let _ = self.child.wait();
    }
}

impl Drop for JavaProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of the file at `path` (at most 16 KiB are read).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::from("(no log)");
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The JVM options every server gets: a small heap, fast start-up, no admin HTTP server, every
/// four-letter word, TTL and container nodes (reaped every 500 ms), and no fsync (a killed process loses nothing that
/// reached the page cache, and tests are faster for it).
pub(crate) fn server_jvm_args(extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> = [
        "-Xms32m",
        "-Xmx384m",
        "-XX:+UseSerialGC",
        "-Xshare:auto",
        "-Djava.awt.headless=true",
        "-Djava.net.preferIPv4Stack=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.4lw.commands.whitelist=*",
        "-Dzookeeper.extendedTypesEnabled=true",
        "-Dzookeeper.forceSync=no",
        // Empty containers and expired TTL nodes are reaped within about a second, not a minute.
        "-Dznode.container.checkIntervalMs=500",
        "-Dzookeeper.jmx.log4j.disable=true",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().cloned());
    args
}
