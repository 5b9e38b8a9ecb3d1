#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo fuzz, libFuzzer) for SECONDS each (default 10), from
# its seed corpus in fuzz/corpus/<target>; what the run finds is kept in a scratch directory, so
# the repository's corpus stays as committed. Prints each target's executions and coverage, and
# fails on the first crash (its input is in fuzz/artifacts/<target>/).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# docs/reliability.md, "Fuzzed parsers". Needs cargo-fuzz (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-10}
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --locked --quiet cargo-fuzz --version 0.13.2
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list --fuzz-dir fuzz)
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The machine's toolchain is stable: no sanitizer (it needs nightly's -Z flags); the targets are
# safe Rust, so what the fuzzer looks for is a panic, an overflow (debug assertions are on) or a
# broken invariant.
build=(--fuzz-dir fuzz --sanitizer none --debug-assertions)
echo "building ${#targets[@]} fuzz targets"
cargo fuzz build "${build[@]}"
for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target"
    log="$scratch/$target.log"
    if ! cargo fuzz run "${build[@]}" "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "error: fuzz target $target failed; its input is in fuzz/artifacts/$target/" >&2
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    corpus=$(ls "$scratch/$target" | wc -l)
    printf '%-22s %10s runs  %-10s  %5s new inputs  (%s s)\n' "$target" "$runs" "$coverage" "$corpus" "$seconds"
done
