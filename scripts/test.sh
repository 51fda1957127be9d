#!/usr/bin/env bash
# Every test of the workspace (unit, doc and real-server tests, every feature: Kerberos too),
# sharing one ZooKeeper server where it can; with cargo-nextest when it is installed. What
# `scripts/setup.sh test` installs must be there (`just test` and `cargo test-all` run it
# first).
set -euo pipefail
cd "$(dirname "$0")/.."

if cargo nextest --version >/dev/null 2>&1; then
    scripts/with-shared-zk.sh cargo nextest run --workspace --all-targets --all-features --no-fail-fast
else
    scripts/with-shared-zk.sh cargo test --workspace --all-targets --all-features --no-fail-fast
fi
cargo test --workspace --doc --all-features --quiet
