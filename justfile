# curator-rs tasks. `just --list` shows them. Without `just`: `cargo demo` and `cargo test-all`
# (aliases in .cargo/config.toml) run what `just demo` and `just test` run.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The quick start: install what is missing, then show the framework against a real server.
default: demo

# Debian packages; root or sudo only when something is missing. MODE: demo (ZooKeeper's jars),
# test (everything the tests need, and Debian 13's ZooKeeper 3.9.3 fetched into target/), bench
# (ZooKeeper, Curator's jars, Kazoo, chart fonts) or lint (Kerberos headers, libclang);
# `scripts/setup.sh --help` lists the packages.
# Install what MODE needs (demo, test, bench, lint) when missing, and print what is there.
setup MODE="test":
    scripts/setup.sh {{MODE}}

# Unit, doc and real-server tests, every feature (Kerberos too), once on ZooKeeper 3.8 and once
# on 3.9, each pass sharing one server of its release where it can (scripts/test.sh).
# Every test of the workspace on ZooKeeper 3.8 and 3.9, after installing what the tests need.
test: (setup "test")
    scripts/test.sh

# A short fuzzing run of everything that parses server bytes (curator-wire's codec, a whole
# curator-session session), from the seeds kept in the repository: FUZZ_SECONDS each (20 by
# default); name targets to run only those (scripts/fuzz.sh). Installs cargo-fuzz when missing.
# Fuzz what parses server bytes (`just fuzz`, `just fuzz session_stream`).
fuzz *TARGETS:
    scripts/fuzz.sh {{TARGETS}}

# Every recipe at once on a 3-member ensemble under a seeded random fault schedule, with
# invariant checkers; fails on any violation. Replay a schedule with `--seed <n>` (or
# SOAK_SEED=<n>); `just soak --help` lists the flags. The report also goes to
# target/soak-report.txt.
# The reliability suite: `just soak --minutes 10`.
soak *ARGS: (setup "demo")
    cargo run --quiet -p integration-tests --bin soak -- {{ARGS}}

# Deterministic simulation: the soak's recipe mix against curator-zkmodel's server on turmoil's
# simulated network, seed after seed under seeded faults, no Java; fails on any violation or a
# seed that does not replay identically. `just sim --seeds 1000` explores, `just sim --seed S`
# replays one bit for bit, `just sim --help` lists the flags. Built in release mode in
# target/sim with Tokio's `tokio_unstable` cfg: turmoil then seeds Tokio's own randomness (the
# branch order of `select!`), without which ties between ready branches could differ; and with
# the known-bad recipe variants that `--plant NAME` turns on, to see the checkers catch them.
# The recipe mix in deterministic simulation (`just sim --seeds N`, `just sim --seed S`).
sim *ARGS:
    RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/sim" cargo run --quiet --release -p integration-tests --features planted-bugs --bin sim -- {{ARGS}}

# The framework's show against a real ZooKeeper: election, lock, counter, barrier, watcher, hand-over.
demo: (setup "demo")
    cargo run --quiet -p curator-cli -- demo

# A tour of the test harness against real ZooKeeper processes: restarts, partitions, expiry, ensembles.
fault-tour: (setup "demo")
    cargo run --quiet -p curator-test --example fault_tour

# Formatting, clippy and rustdoc, all with warnings as errors, with every feature (Kerberos too).
lint: (setup "lint")
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --all-features -- -D warnings
    cargo clippy --workspace --all-targets -- -D warnings
    cargo clippy -p curator-framework --all-targets --no-default-features -- -D warnings
    cargo clippy -p curator-cli --all-targets --no-default-features -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --quiet
    # The dry run's verification unpacks this workspace's crates into a local registry under
    # CARGO_HOME once and reuses them on later runs of the same version: remove those copies, so
    # each crate is checked against today's sources of the others.
    rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/curator-*
    cargo publish --dry-run --workspace --quiet

# Never part of `just test`. curator-rs vs Apache Curator vs Kazoo on one server, beside its bare
# session layer and two protocol floors (`side-by-side`; `just bench --help` lists its flags;
# `--quick` for a short run), then the framework's overhead over its bare session layer
# (`--quick` makes it short too). docs/ is left alone: `just bench --write-docs` (a full run)
# rewrites its section of docs/benchmarks.md and its chart.
# Benchmarks against Apache Curator and Kazoo (`--quick`, `--write-docs`, `--help`).
bench *ARGS: (setup "bench")
    #!/usr/bin/env bash
    set -euo pipefail
    target="${CARGO_TARGET_DIR:-target}"
    args=()
    overhead=(--bench framework_overhead)
    measuring=true
    for arg in {{ARGS}}; do
        case "$arg" in
            -h | --help | --redraw-chart) measuring=false ;;  # no measuring asked for
            --quick) overhead+=(-- --quick) ;;
        esac
        args+=("$arg")
    done
    cargo build --release -p curator-benches --bins
    "$target/release/side-by-side" "${args[@]}"
    $measuring || exit 0
    cargo bench -p curator-benches "${overhead[@]}"

# Never part of `just test`: election, mutex, locks, caches and queues as N grows, on one server,
# each point with a time budget and a library's failure recorded; a progress bar on stderr.
# `--quick` takes a few minutes, a full run hours; `--only caches,queues`, `--max-n 100000`
# narrow it; `just bench-scale --help` lists the flags. Results go to target/bench/;
# `--write-docs` puts the charts and tables into docs/ and docs/benchmarks.md instead.
# Scale curves of curator-rs vs Curator and Kazoo (`--quick`, `--write-docs`, `--help`).
bench-scale *ARGS: (setup "bench")
    cargo build --release -p curator-benches --bins
    "${CARGO_TARGET_DIR:-target}/release/bench-scale" {{ARGS}}

# Start a ZooKeeper server in the background for manual work; its address goes to target/zk/connect.
zk-up: (setup "demo")
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
