//! What `scripts/setup.sh MODE` installs on a machine that has none of its packages: the demo
//! only ZooKeeper's jars, not the tests' browser and Kerberos KDC. `dpkg-query`, `apt-get` and
//! `sudo` are stand-ins on PATH that record what would be installed, so nothing is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Stand-ins for the package tools: nothing is installed until the fake `apt-get install`
/// records it, and `dpkg-query` then says it is.
const DPKG_QUERY: &str = r#"#!/bin/sh
for last; do :; done
if grep -qx -- "$last" "$SETUP_TEST_DIR/installed" 2>/dev/null; then
    case "$*" in *Status*) printf 'install ok installed' ;; *) printf '1.0' ;; esac
    exit 0
fi
exit 1
"#;
const APT_GET: &str = r#"#!/bin/sh
[ "$1" = install ] || exit 0
shift
for package; do
    case "$package" in -*) ;; *) echo "$package" >> "$SETUP_TEST_DIR/installed" ;; esac
done
"#;
const SUDO: &str = "#!/bin/sh\nexec \"$@\"\n";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ sits in the workspace")
        .to_owned()
}

fn stand_in(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, script).expect("writing a stand-in");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The packages `scripts/setup.sh MODE` asks `apt-get install` for, in order.
fn installs(mode: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin/");
    stand_in(&bin, "dpkg-query", DPKG_QUERY);
    stand_in(&bin, "apt-get", APT_GET);
    stand_in(&bin, "sudo", SUDO);
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .expect("a PATH");
    let output = Command::new(workspace_root().join("scripts/setup.sh"))
        .arg(mode)
        .env("PATH", path)
        .env("SETUP_TEST_DIR", dir.path())
        .output()
        .expect("scripts/setup.sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("setup: installing "),
        "{mode}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(dir.path().join("installed"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn has_java() -> bool {
    std::env::var_os("JAVA_HOME").is_some_and(|home| Path::new(&home).join("bin/java").exists())
        || Command::new("sh")
            .args(["-c", "command -v java"])
            .output()
            .is_ok_and(|output| output.status.success())
}

#[test]
fn the_demo_installs_zookeeper_and_nothing_the_tests_need() {
    let mut expected = vec!["libzookeeper-java".to_owned()];
    if !has_java() {
        expected.push("default-jre-headless".to_owned());
    }
    assert_eq!(installs("demo"), expected);
}

#[test]
fn the_tests_install_the_browser_and_the_kdc_and_the_benchmarks_kazoo() {
    let test = installs("test");
    for package in [
        "libzookeeper-java",
        "chromium",
        "chromium-driver",
        "krb5-kdc",
    ] {
        assert!(
            test.iter().any(|p| p == package),
            "{package} not in {test:?}"
        );
    }
    assert!(!test.iter().any(|p| p == "python3-kazoo"), "{test:?}");
    let bench = installs("bench");
    for package in [
        "libzookeeper-java",
        "python3-kazoo",
        "libcurator-recipes-java",
    ] {
        assert!(
            bench.iter().any(|p| p == package),
            "{package} not in {bench:?}"
        );
    }
    for package in ["chromium", "krb5-kdc"] {
        assert!(!bench.iter().any(|p| p == package), "{bench:?}");
    }
}

#[test]
fn a_mode_is_required_and_checked() {
    let setup = workspace_root().join("scripts/setup.sh");
    let none = Command::new(&setup).output().expect("runs");
    assert_eq!(none.status.code(), Some(2));
    let bad = Command::new(&setup)
        .arg("everything")
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown mode 'everything'"));
}
