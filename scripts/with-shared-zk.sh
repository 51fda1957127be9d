#!/usr/bin/env bash
# Runs a command with CURATOR_TEST_ZK pointing at one real ZooKeeper server started for it, so
# every test process shares one JVM instead of starting its own; the server stops afterwards.
# Tests that kill, restart or partition a server still start dedicated ones. The server runs the
# release named by CURATOR_TEST_ZK_VERSION (3.8 by default, or 3.9), as the tests' own servers do.
set -euo pipefail

cargo build --quiet -p curator-test --bin curator-test-server
dir=$(mktemp -d)
# The server stops when its standard input closes: when this script exits, however it exits.
exec 9> >(exec "${CARGO_TARGET_DIR:-target}/debug/curator-test-server" --until-stdin-closes --connect-file "$dir/connect" >/dev/null)
server_pid=$!
cleanup() {
    exec 9>&-
    wait "$server_pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

for _ in $(seq 1 600); do
    [[ -s "$dir/connect" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { echo "the shared ZooKeeper server failed to start" >&2; exit 1; }
    sleep 0.1
done
[[ -s "$dir/connect" ]] || { echo "the shared ZooKeeper server did not start within 60 s" >&2; exit 1; }
CURATOR_TEST_ZK=$(cat "$dir/connect")
export CURATOR_TEST_ZK
# The release, as the server itself reports it (`srvr`), asked from a subshell so its
# redirections stay there.
version=$(
    exec 8<>"/dev/tcp/${CURATOR_TEST_ZK%:*}/${CURATOR_TEST_ZK##*:}" && printf srvr >&8 &&
        sed -n 's/^Zookeeper version: \([0-9.]*\).*/\1/p' <&8
) 2>/dev/null || true
echo "shared ZooKeeper ${version:-(version unknown)} for this run: $CURATOR_TEST_ZK"
"$@"
