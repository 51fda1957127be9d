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
#          `curator ui`'s page in a browser).
#   bench  the benchmarks: ZooKeeper's jars, Curator's jars, a JDK when there is no `javac`,
#          Kazoo, fontconfig's headers and the Liberation fonts (the charts).
#   lint   clippy and rustdoc with every feature: the Kerberos headers, libclang, pkg-config,
#          fontconfig's headers.
set -euo pipefail

usage() {
    sed -n '2,24s/^# \{0,1\}//p' "$0"
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
