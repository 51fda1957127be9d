# curator-rs tasks. `just --list` shows them.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The quick start: install what is missing, then show the framework against a real server.
default: demo

# Install ZooKeeper, Apache Curator's jars and Kazoo from Debian when missing; print what is there.
setup:
    scripts/setup.sh

# Every test of the workspace (unit, doc and real-server tests, every feature: Kerberos too),
# sharing one ZooKeeper where it can.
test: setup
    #!/usr/bin/env bash
    set -euo pipefail
    if cargo nextest --version >/dev/null 2>&1; then
        scripts/with-shared-zk.sh cargo nextest run --workspace --all-targets --all-features --no-fail-fast
    else
        scripts/with-shared-zk.sh cargo test --workspace --all-targets --all-features --no-fail-fast
    fi
    cargo test --workspace --doc --all-features --quiet

# The reliability suite: every recipe at once on a 3-member ensemble under a seeded random fault
# schedule, with invariant checkers; fails on any violation. `just soak --minutes 10`; replay a
# schedule with `--seed <n>` (or SOAK_SEED=<n>). The report also goes to target/soak-report.txt.
soak *ARGS: setup
    cargo run --quiet -p integration-tests --bin soak -- {{ARGS}}

# The framework's show against a real ZooKeeper: election, lock, counter, barrier, watcher, hand-over.
demo: setup
    cargo run --quiet -p curator-cli -- demo

# A tour of the test harness against real ZooKeeper processes: restarts, partitions, expiry, ensembles.
fault-tour: setup
    cargo run --quiet -p curator-test --example fault_tour

# Formatting, clippy and rustdoc, all with warnings as errors, with every feature (Kerberos too).
lint: setup
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --all-features -- -D warnings
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet

# Benchmarks (never part of `just test`): curator-rs vs Apache Curator vs Kazoo on one server,
# then the framework's overhead over the bare wire client. `just bench --quick` for a short run.
bench *ARGS: setup
    cargo build --release -p curator-benches --bins
    target/release/side-by-side {{ARGS}}
    cargo bench -p curator-benches --bench framework_overhead -- {{ARGS}}

# Never part of `just test`: election, mutex, locks, caches and queues as N grows, on one server,
# each point with a time budget and a library's failure recorded; a progress bar on stderr. Full
# runs write the charts and tables into docs/benchmarks.md; `--quick` takes a few minutes.
# Scale curves of curator-rs vs Curator and Kazoo (`--quick`, `--only caches,queues`, `--max-n 100000`).
bench-scale *ARGS: setup
    cargo build --release -p curator-benches --bins
    "${CARGO_TARGET_DIR:-target}/release/bench-scale" {{ARGS}}

# Start a ZooKeeper server in the background for manual work; its address goes to target/zk/connect.
zk-up:
    #!/usr/bin/env bash
    set -euo pipefail
    mkdir -p target/zk
    if [[ -f target/zk/pid ]] && kill -0 "$(cat target/zk/pid)" 2>/dev/null; then
        echo "already running: $(cat target/zk/connect)"; exit 0
    fi
    cargo build --quiet -p curator-test --bin curator-test-server
    rm -f target/zk/connect
    nohup target/debug/curator-test-server --connect-file target/zk/connect >target/zk/server.log 2>&1 &
    echo $! > target/zk/pid
    for _ in $(seq 1 600); do [[ -s target/zk/connect ]] && break; sleep 0.1; done
    [[ -s target/zk/connect ]] || { cat target/zk/server.log; exit 1; }
    echo "ZooKeeper at $(cat target/zk/connect) (export ZK_CONNECT=$(cat target/zk/connect))"

# Stop the server `zk-up` started.
zk-down:
    #!/usr/bin/env bash
    set -euo pipefail
    if [[ -f target/zk/pid ]]; then
        kill "$(cat target/zk/pid)" 2>/dev/null || true
        rm -f target/zk/pid
        echo "stopped"
    else
        echo "not running"
    fi
