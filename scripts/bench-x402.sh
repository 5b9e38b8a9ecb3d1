#!/usr/bin/env bash
# The x402 402 challenge: swapd (`GET /api/x402/currencies` without a payment, sandbox on
# SQLite) beside the reference TypeScript server (`@x402/express` 2.27.0, one `$0.05` route on
# eip155:8453, scripts/x402-reference), same machine, same load generator, same concurrency.
# Each answer must be the 402 with its PAYMENT-REQUIRED header.
# Usage: scripts/bench-x402.sh [seconds] [concurrency]
set -euo pipefail
seconds=${1:-8}
concurrency=${2:-32}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
npm ci --prefix "$root/scripts/x402-reference" --no-audit --no-fund --loglevel=error
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT
cd "$work"
SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" serve --listen 127.0.0.1:18280 > swapd.log 2>&1 &
pids+=($!)
PORT=18290 node "$root/scripts/x402-reference/server.mjs" > reference.log 2>&1 &
pids+=($!)
for url in http://127.0.0.1:18280/healthz http://127.0.0.1:18290/paid; do
    for _ in $(seq 1 50); do curl -s -o /dev/null "$url" && break; sleep 0.2; done
done
for url in http://127.0.0.1:18280/api/x402/currencies http://127.0.0.1:18290/paid; do
    curl -s -D - -o /dev/null "$url" | grep -qi '^payment-required:' \
        || { echo "error: $url did not answer a challenge" >&2; exit 1; }
done
for _ in 1 2; do
    "$bin/swapd-loadgen" --url http://127.0.0.1:18280 --path /api/x402/currencies \
        --expect-status 402 --concurrency "$concurrency" --seconds "$seconds" --warmup 1 | sed 's/^/swapd      /'
    "$bin/swapd-loadgen" --url http://127.0.0.1:18290 --path /paid \
        --expect-status 402 --concurrency "$concurrency" --seconds "$seconds" --warmup 1 | sed 's/^/reference  /'
done
