#!/usr/bin/env bash
# Every test of the workspace (unit, doc and real-server tests, every feature: Kerberos too),
# once against each ZooKeeper release: 3.8 (Debian 12's 3.8.0) and 3.9 (Debian 13's 3.9.3,
# which `scripts/setup.sh test` fetches into target/). Each pass selects its release with
# CURATOR_TEST_ZK_VERSION, so every server the tests start runs it, and shares one server of that
# release where it can (scripts/with-shared-zk.sh). With cargo-nextest when it is installed. The
# doctests start no server and run once, as do (with nextest) the tests that start no server of
# a release. Every pass runs even when one fails; the script fails if any did.
#
#   scripts/test.sh              both releases
#   scripts/test.sh 3.9          one release (3.8 or 3.9)
#
# What `scripts/setup.sh test` installs must be there (`just test` and `cargo test-all` run it
# first). ZOOKEEPER_CLASSPATH is not used: the passes name their releases.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
if ((${#versions[@]} == 0)); then
    versions=(3.8 3.9)
fi
if cargo nextest --version >/dev/null 2>&1; then
    tests=(cargo nextest run --workspace --all-targets --all-features --no-fail-fast)
else
    tests=(cargo test --workspace --all-targets --all-features --no-fail-fast)
fi

# Tests that start no server of the pass's release run in the first pass only: the simulator's
# (curator-sim, integration-tests' sim binary), and curator-zkmodel's (its conformance suite runs
# the model against both releases in each of its tests). nextest only.
serverless='package(curator-sim) | package(curator-zkmodel) | (package(integration-tests) & binary(sim))'

failed=()
for version in "${versions[@]}"; do
    echo "== every test against ZooKeeper $version"
    filter=()
    if [[ "$version" != "${versions[0]}" && "${tests[0]} ${tests[1]}" == "cargo nextest" ]]; then
        filter=(-E "not ($serverless)")
    fi
    if ! env -u ZOOKEEPER_CLASSPATH CURATOR_TEST_ZK_VERSION="$version" \
        scripts/with-shared-zk.sh "${tests[@]}" "${filter[@]}"; then
        failed+=("ZooKeeper $version")
    fi
done
echo "== doctests"
cargo test --workspace --doc --all-features --quiet || failed+=(doctests)

if ((${#failed[@]})); then
    echo "test: failed:" >&2
    printf '  %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "test: every test passed against ZooKeeper ${versions[*]}"
