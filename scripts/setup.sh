#!/usr/bin/env bash
# Installs, from Debian or Ubuntu, what one use of this workspace needs and is missing, then
# checks what it found. Idempotent: on a machine that has everything it installs nothing, and
# needs no root. Installing needs root or sudo.
#
#   scripts/setup.sh MODE...     MODE: demo, test, bench or lint (several allowed)
#
#   demo   ZooKeeper's jars (libzookeeper-java), and a Java runtime when there is no `java`.
#          Also what `just soak`, `just fault-tour`, `just zk-up` and the examples need.
#   test   every test of the workspace: ZooKeeper's jars; Apache Curator's jars
#          (interoperability tests); a JDK when there is no `javac` (they compile Java
#          programs); an MIT Kerberos KDC, its admin server and client tools (secured-server
#          tests); the Kerberos headers, libclang and pkg-config (the framework's `kerberos`
#          feature, built by `--all-features`); fontconfig's headers (the benchmarks' charts,
#          built with the workspace); headless Chromium and its WebDriver (the test of
#          `curator ui`'s page in a browser). Also ZooKeeper 3.9.3 (below).
#   bench  the benchmarks: ZooKeeper's jars, Curator's jars, a JDK when there is no `javac`,
#          Kazoo, fontconfig's headers and the Liberation fonts (the charts).
#   lint   clippy and rustdoc with every feature: the Kerberos headers, libclang, pkg-config,
#          fontconfig's headers.
#
# The tests run against ZooKeeper 3.8.0 (Debian 12's libzookeeper-java, installed) and 3.9.3
# (Debian 13's). `test` (and `demo` or `bench` with CURATOR_TEST_ZK_VERSION=3.9) downloads
# Debian 13's `zookeeper` and `libzookeeper-java` 3.9.3 packages with `apt-get download`,
# against a sources list and apt state of its own in a temporary directory (the system's apt
# configuration is neither read nor changed), and unpacks them with `dpkg -x` into
# target/zookeeper-3.9.3/, when that is missing.
set -euo pipefail

usage() {
    sed -n '2,31s/^# \{0,1\}//p' "$0"
}

demo=(libzookeeper-java)
curator=(libcurator-recipes-java libcurator-discovery-java)
kerberos_build=(libkrb5-dev libclang-dev pkg-config)
charts_build=(libfontconfig-dev)
test=("${demo[@]}" "${curator[@]}" krb5-kdc krb5-admin-server krb5-user "${kerberos_build[@]}"
    "${charts_build[@]}" chromium chromium-driver)
bench=("${demo[@]}" "${curator[@]}" python3-kazoo "${charts_build[@]}" fonts-liberation)
lint=("${kerberos_build[@]}" "${charts_build[@]}")

if (($# == 0)); then
    usage >&2
    exit 2
fi
modes=()
packages=()
for mode in "$@"; do
    case "$mode" in
        -h | --help) usage; exit 0 ;;
        demo) packages+=("${demo[@]}") ;;
        test) packages+=("${test[@]}") ;;
        bench) packages+=("${bench[@]}") ;;
        lint) packages+=("${lint[@]}") ;;
        *) echo "setup: unknown mode '$mode' (demo, test, bench or lint)" >&2; exit 2 ;;
    esac
    modes+=("$mode")
done
wants() {
    local mode wanted
    for mode in "${modes[@]}"; do
        for wanted in "$@"; do [[ $mode == "$wanted" ]] && return 0; done
    done
    return 1
}
# Java as curator-test finds it: $JAVA_HOME/bin/java, else `java` on PATH. The tests and
# benchmarks also compile Java programs with `javac`. A headless one of Debian's when missing.
has_java() {
    [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]] || command -v java >/dev/null 2>&1
}
if wants test bench && ! command -v javac >/dev/null 2>&1; then
    packages+=(default-jdk-headless)
elif wants demo && ! has_java; then
    packages+=(default-jre-headless)
fi

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for package in "${packages[@]}"; do
    if ! installed "$package" && [[ " ${missing[*]} " != *" $package "* ]]; then
        missing+=("$package")
    fi
done

if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
        sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ZooKeeper 3.9.3 (see the top of this file), where curator-test looks for it:
# CURATOR_TEST_ZK_VERSION=3.9 starts its servers from these jars.
zk39_version=3.9.3
zk39_dir=$(cd "$(dirname "$0")/.." && pwd)/target/zookeeper-$zk39_version
zk39_jars=("zookeeper-jute-$zk39_version.jar" "zookeeper-$zk39_version.jar")
wants_zk39() {
    wants test || { wants demo bench && [[ ${CURATOR_TEST_ZK_VERSION:-} == 3.9 ]]; }
}
has_zk39() {
    local jar
    for jar in "${zk39_jars[@]}"; do
        [[ -f $zk39_dir/usr/share/java/$jar ]] || return 1
    done
}
# Downloads the two packages into the directory $1 and unpacks them into $1/root, writing the
# Debian version to $1/root/debian-version. Returns explicitly at each failure (`set -e` does
# not apply in a function called as a condition).
fetch_zk39() {
    local tmp=$1 version deb
    # Read first (through APT_CONFIG), this configuration names empty configuration, sources
    # and preferences directories of its own, so none of the system's apt settings apply.
    mkdir -p "$tmp/etc/apt.conf.d" "$tmp/etc/preferences.d" "$tmp/etc/sources.list.d" \
        "$tmp/state/lists/partial" "$tmp/cache/archives/partial" "$tmp/debs" "$tmp/root" || return 1
    touch "$tmp/state/status" || return 1
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
        >"$tmp/etc/sources.list" || return 1
    printf '%s\n' \
        "Dir::Etc \"$tmp/etc\";" \
        'Dir::Etc::main "/dev/null";' \
        'Dir::Etc::parts "apt.conf.d";' \
        'Dir::Etc::sourcelist "sources.list";' \
        'Dir::Etc::sourceparts "sources.list.d";' \
        'Dir::Etc::preferences "/dev/null";' \
        'Dir::Etc::preferencesparts "preferences.d";' \
        "Dir::State \"$tmp/state\";" \
        "Dir::State::status \"$tmp/state/status\";" \
        "Dir::Cache \"$tmp/cache\";" \
        'Acquire::Languages "none";' >"$tmp/apt.conf" || return 1
    # As root, apt downloads as its unprivileged `_apt` user, which must reach the directories.
    chmod 755 "$tmp" || return 1
    if [[ $(id -u) -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/debs" || return 1; fi
    export APT_CONFIG=$tmp/apt.conf
    apt-get update || return 1
    version=$(apt-cache madison libzookeeper-java | awk -v want="$zk39_version-" 'index($3, want) == 1 { print $3; exit }')
    if [[ -z $version ]]; then
        echo "Debian 13 (trixie) offers no libzookeeper-java $zk39_version"
        return 1
    fi
    (cd "$tmp/debs" && apt-get download "zookeeper=$version" "libzookeeper-java=$version") || return 1
    for deb in "$tmp"/debs/*.deb; do
        dpkg -x "$deb" "$tmp/root" || return 1
    done
    echo "$version" >"$tmp/root/debian-version"
}
if wants_zk39 && ! has_zk39; then
    echo "setup: fetching ZooKeeper $zk39_version (Debian 13's zookeeper, libzookeeper-java) into target/zookeeper-$zk39_version"
    zk39_tmp=$(mktemp -d)
    # In a subshell, so APT_CONFIG stays there; the output only shows when something fails.
    if (fetch_zk39 "$zk39_tmp") >"$zk39_tmp.log" 2>&1; then
        # Whole or not at all: a later run finds every jar or none.
        rm -rf "$zk39_dir"
        mkdir -p "$(dirname "$zk39_dir")"
        mv "$zk39_tmp/root" "$zk39_dir"
    else
        echo "setup: fetching ZooKeeper $zk39_version failed:" >&2
        tail -n 20 "$zk39_tmp.log" >&2
    fi
    rm -rf "$zk39_tmp" "$zk39_tmp.log"
fi

# What is there now. Nothing here starts a ZooKeeper server: the tests and the demo start
# their own.
failed=0
present() { printf 'setup: %-26s %s\n' "$1" "$2"; }
absent() { printf 'setup: %-26s MISSING: %s\n' "$1" "$2" >&2; failed=1; }
version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }
check_package() {
    if installed "$1"; then present "$1" "$(version "$1")"; else absent "$1" "not installed"; fi
}
seen=()
for package in "${packages[@]}"; do
    [[ " ${seen[*]} " == *" $package "* ]] && continue
    seen+=("$package")
    check_package "$package"
done
if wants demo test bench; then
    if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
        present java "$("$JAVA_HOME/bin/java" -version 2>&1 | head -n 1) (JAVA_HOME)"
    elif command -v java >/dev/null 2>&1; then
        present java "$(java -version 2>&1 | head -n 1)"
    else
        absent java "no java in JAVA_HOME or on PATH"
    fi
    if [[ -f /usr/share/java/zookeeper.jar ]]; then
        present server-jar /usr/share/java/zookeeper.jar
    else
        absent server-jar "/usr/share/java/zookeeper.jar"
    fi
fi
if wants_zk39; then
    if has_zk39; then
        present "zookeeper-$zk39_version" "target/zookeeper-$zk39_version ($(cat "$zk39_dir/debian-version" 2>/dev/null), Debian 13's)"
    else
        absent "zookeeper-$zk39_version" "target/zookeeper-$zk39_version (Debian 13's packages could not be fetched)"
    fi
fi
if wants test bench; then
    if command -v javac >/dev/null 2>&1; then
        present javac "$(javac -version 2>&1 | head -n 1)"
    else
        absent javac "no javac on PATH"
    fi
    for jar in curator-recipes curator-x-discovery; do
        if [[ -f /usr/share/java/$jar.jar ]]; then
            present "$jar" "/usr/share/java/$jar.jar"
        else
            absent "$jar" "/usr/share/java/$jar.jar"
        fi
    done
fi
if wants test; then
    if command -v chromedriver >/dev/null 2>&1; then
        present chromedriver "$(command -v chromedriver)"
    else
        absent chromedriver "no chromedriver on PATH"
    fi
fi
if wants bench; then
    # Kazoo is Debian's: ask Debian's Python, not whichever python3 comes first on PATH.
    if kazoo=$(/usr/bin/python3 -c 'import kazoo.version; print(kazoo.version.__version__)' 2>/dev/null); then
        present kazoo "$kazoo (/usr/bin/python3)"
    else
        absent kazoo "/usr/bin/python3 cannot import kazoo"
    fi
fi
if wants test lint bench; then
    pkg_config_modules=(fontconfig)
    if wants test lint; then pkg_config_modules+=(krb5-gssapi); fi
    for module in "${pkg_config_modules[@]}"; do
        if pkg-config --exists "$module" 2>/dev/null; then
            present "$module" "$(pkg-config --modversion "$module") (pkg-config)"
        else
            absent "$module" "pkg-config does not find it"
        fi
    done
fi
if ((failed)); then
    echo "setup: something is still missing (see above)" >&2
    exit 1
fi
echo "setup: everything ${modes[*]} needs is present"
