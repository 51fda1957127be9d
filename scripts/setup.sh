#!/usr/bin/env bash
# Installs what the tests, the demo and the benchmarks need, when it is missing, and prints what it
# found. Idempotent: on a machine that has everything it installs nothing.
set -euo pipefail

# ZooKeeper, Curator and Kazoo for the tests, interop and benchmarks; a Kerberos KDC and its
# tools for the secured-server tests; the headers the framework's `kerberos` feature builds
# against (MIT krb5's GSSAPI through libgssapi, whose bindings bindgen makes with libclang);
# headless Chromium and its WebDriver for the test of `curator ui`'s page in a real browser.
packages=(zookeeper libcurator-recipes-java libcurator-test-java libcurator-discovery-java python3-kazoo
    krb5-kdc krb5-admin-server krb5-user libkrb5-dev libclang-dev pkg-config
    chromium chromium-driver fonts-liberation)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
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

# Debian's package may start a system ZooKeeper on 2181; tests never use it, but say so.
version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "missing"; }
java_version=$(java -version 2>&1 | head -n 1 || echo "not found")
# Kazoo is Debian's: ask Debian's Python, not whichever python3 comes first on PATH.
kazoo=$(/usr/bin/python3 -c 'import kazoo.version; print(kazoo.version.__version__)' 2>/dev/null || echo "missing")
echo "setup: java        ${java_version}"
echo "setup: zookeeper   $(version zookeeper) (/usr/share/java/zookeeper.jar)"
echo "setup: curator     $(version libcurator-recipes-java) (/usr/share/java/curator-*.jar)"
echo "setup: kazoo       ${kazoo} (/usr/bin/python3)"
echo "setup: chromium    $(version chromium) ($(command -v chromedriver || echo 'no chromedriver'))"
[[ -f /usr/share/java/zookeeper.jar ]] || { echo "setup: ZooKeeper's jar is still missing" >&2; exit 1; }
command -v java >/dev/null || { echo "setup: java is still missing" >&2; exit 1; }
