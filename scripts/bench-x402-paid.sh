#!/usr/bin/env bash
# A paid x402 call's overhead over the facilitator's own verify + settle: swapd (sandbox,
# SQLite, `x402.facilitator = "http"`) in front of a stand-in facilitator that answers at once
# (scripts/x402-reference/facilitator.mjs). swapd-loadgen pays every `GET
# /api/x402/currencies` with a fresh EIP-3009 payment (signed before each request's clock
# starts), each from its own client address (`X-Forwarded-For`, a trusted proxy), so the
# 60-paid-attempts-per-hour limit applies per request. The facilitator's time is read from
# swapd's `x402_facilitator_duration_seconds` before and after the measured run.
# Usage: scripts/bench-x402-paid.sh [seconds] [concurrency...]
set -euo pipefail
seconds=${1:-8}
shift $(($# > 0 ? 1 : 0))
concurrencies=("$@")
[ ${#concurrencies[@]} -gt 0 ] || concurrencies=(1 8)
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
npm ci --prefix "$root/scripts/x402-reference" --no-audit --no-fund --loglevel=error
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"
PORT=18292 node "$root/scripts/x402-reference/facilitator.mjs" > facilitator.log 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:18292/supported && break; sleep 0.2; done
SWAPD_X402__FACILITATOR=http SWAPD_X402__FACILITATOR_URL=http://127.0.0.1:18292 \
    SWAPD_SECURITY__TRUSTED_PROXIES='["127.0.0.1/32"]' SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 \
    RUST_LOG=warn "$bin/swapd" serve --listen 127.0.0.1:18282 > swapd.log 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -sf -o /dev/null http://127.0.0.1:18282/readyz && break; sleep 0.2; done
# Anvil's / Hardhat's first well-known test key: the stand-in facilitator moves no money.
payer=0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80
loadgen() {
    "$bin/swapd-loadgen" --url http://127.0.0.1:18282 --path /api/x402/currencies \
        --x402-payer "$payer" --forwarded-for-each "$@"
}
# sum and count of the facilitator histogram, verify and settle together
facilitator() {
    curl -sf http://127.0.0.1:18282/metrics | python3 -c '
import sys
s = c = 0.0
for line in sys.stdin:
    if line.startswith("x402_facilitator_duration_seconds_sum"): s += float(line.split()[-1])
    if line.startswith("x402_facilitator_duration_seconds_count"): c += float(line.split()[-1])
print(s, c)'
}
loadgen --concurrency 4 --seconds 2 --warmup 0 > /dev/null
for concurrency in "${concurrencies[@]}"; do
    before=$(facilitator)
    out=$(loadgen --concurrency "$concurrency" --seconds "$seconds" --warmup 0 --json)
    after=$(facilitator)
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
(s0, c0), (s1, c1) = (map(float, a.split()) for a in sys.argv[2:4])
calls = (c1 - c0) / 2  # one verify and one settle per paid call
facilitator_ms = (s1 - s0) / calls * 1000
rps, p50, p99, failures = r["rps"], r["p50_ms"], r["p99_ms"], r["failures"]
print(f"concurrency {sys.argv[4]:>2}: {rps:>5.0f} paid calls/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms; "
      f"facilitator verify + settle {facilitator_ms:.2f} ms per call (mean); "
      f"overhead at p50 {p50 - facilitator_ms:.2f} ms; failures {failures}")
' "$out" "$before" "$after" "$concurrency"
done
