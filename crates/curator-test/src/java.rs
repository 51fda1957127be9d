//! Finding Java and ZooKeeper's jars, and running a JVM that cannot outlive the test process.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub(crate) use crate::guard::GuardedProcess;
use crate::version::{ZooKeeperVersion, check_classpath};

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

/// The classpath that runs ZooKeeper's server classes: `version`'s when one is asked for;
/// otherwise `ZOOKEEPER_CLASSPATH` when set, else the release named by `CURATOR_TEST_ZK_VERSION`
/// (Debian 12's 3.8.0 by default). Every entry must exist.
pub(crate) fn zookeeper_classpath(version: Option<ZooKeeperVersion>) -> Result<String> {
    if let Some(version) = version {
        return version.classpath();
    }
    match std::env::var("ZOOKEEPER_CLASSPATH") {
        Ok(custom) if !custom.trim().is_empty() => {
            check_classpath(&custom)?;
            Ok(custom)
        }
        _ => ZooKeeperVersion::from_env()?.classpath(),
    }
}

/// A JVM started under the shell guard of [`GuardedProcess`].
pub(crate) type JavaProcess = GuardedProcess;

/// Starts `java <jvm_args> <main_class> <args>` on the classpath of `version` (see
/// [`zookeeper_classpath`]) under the guard, with its output appended to `log_path`.
pub(crate) fn spawn_java(
    version: Option<ZooKeeperVersion>,
    jvm_args: &[String],
    main_class: &str,
    args: &[String],
    log_path: &Path,
) -> Result<JavaProcess> {
    let java = java_executable()?;
    let classpath = zookeeper_classpath(version)?;
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
