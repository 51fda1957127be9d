#!/usr/bin/env bash
# A short fuzzing run of everything that parses what a server sends: curator-wire's codec
# targets and curator-session's whole-session target, each for FUZZ_SECONDS seconds (20 by
# default; name targets as arguments to run only those), starting from the seeds kept in
# crates/<crate>/fuzz/seeds/. Inputs found are kept in fuzz/corpus/ (not committed); a failing
# input is written to fuzz/artifacts/<target>/ and the script fails.
#
# cargo-fuzz passes options only nightly compilers take (the address sanitizer);
# RUSTC_BOOTSTRAP=1 lets the workspace's stable toolchain take them. The first build takes a
# few minutes (libFuzzer itself is compiled).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

seconds="${FUZZ_SECONDS:-20}"
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    targets=(client_stream reply_bodies server_stream request_bodies session_stream)
fi

crate_of() {
    case "$1" in
        session_stream) echo curator-session ;;
        client_stream | reply_bodies | server_stream | request_bodies) echo curator-wire ;;
        *) echo "unknown fuzz target: $1" >&2; exit 2 ;;
    esac
}

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: installing it (cargo install cargo-fuzz --locked)" >&2
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
export CARGO_INCREMENTAL=0
# Release code with debug assertions and overflow checks: an arithmetic overflow is a finding.
flags=(--release --debug-assertions)
for target in "${targets[@]}"; do
    crate="$(crate_of "$target")"
    cd "$root/crates/$crate"
    cargo fuzz build "${flags[@]}" "$target"
    echo "== $crate $target: ${seconds}s" >&2
    mkdir -p "fuzz/corpus/$target"
    cargo fuzz run "${flags[@]}" "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 |
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|==|INFO: seed corpus|SUMMARY|Done)|panicked|ERROR' || true
    # The pipe hides cargo fuzz's status: a failure leaves an artifact behind.
    if compgen -G "fuzz/artifacts/$target/*" >/dev/null; then
        echo "$target: failing inputs in crates/$crate/fuzz/artifacts/$target/" >&2
        exit 1
    fi
done
