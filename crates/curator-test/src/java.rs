//! Finding Java and ZooKeeper's jars, and running a JVM that cannot outlive the test process.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub(crate) use crate::guard::GuardedProcess;

/// The classpath used when `ZOOKEEPER_CLASSPATH` is not set: Debian's ZooKeeper jar (its manifest
/// names its dependencies) and, when present, a logger so start-up failures reach the log file.
const DEBIAN_CLASSPATH: &[&str] = &["/usr/share/java/zookeeper.jar"];
const DEBIAN_LOGGER: &str = "/usr/share/java/slf4j-simple.jar";
/// Netty's codec jar, which Debian's ZooKeeper manifest leaves out although the Netty connection
/// factory's TLS handler (`SslHandler`, a `ByteToMessageDecoder`) needs it: without it every TLS
/// handshake fails with `NoClassDefFoundError`.
const DEBIAN_NETTY_CODEC: &str = "/usr/share/java/netty-codec.jar";

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
            for optional in [DEBIAN_NETTY_CODEC, DEBIAN_LOGGER] {
                if Path::new(optional).is_file() {
                    entries.push(optional);
                }
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

/// A JVM started under the shell guard of [`GuardedProcess`].
pub(crate) type JavaProcess = GuardedProcess;

/// Starts `java <jvm_args> <main_class> <args>` under the guard, with its output appended to
/// `log_path`.
pub(crate) fn spawn_java(
    jvm_args: &[String],
    main_class: &str,
    args: &[String],
    log_path: &Path,
) -> Result<JavaProcess> {
    let java = java_executable()?;
    let classpath = zookeeper_classpath()?;
    let mut command_args: Vec<OsString> = vec!["-cp".into(), classpath.into()];
    command_args.extend(jvm_args.iter().map(OsString::from));
    command_args.push(main_class.into());
    command_args.extend(args.iter().map(OsString::from));
    GuardedProcess::spawn(&java, &command_args, &[], log_path)
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
