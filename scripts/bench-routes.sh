#!/usr/bin/env bash
# GET /api/v3/routes latency with every sandbox provider answering, then with one provider
# stalled (it never answers): the stalled provider may add no more than its deadline.
# Usage: scripts/bench-routes.sh [seconds] [concurrency] [deadline_ms]
set -euo pipefail
seconds=${1:-10}
concurrency=${2:-8}
deadline=${3:-500}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
server=
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
"$bin/swapd" keys create --name bench --permissions prices:read \
    --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > key.json
key=$(python3 -c "import json;print(json.load(open('key.json'))['apiKey'])")
secret=$(python3 -c "import json;print(json.load(open('key.json'))['apiSecret'])")

measure() {
    local label=$1 stalled=$2
    printf '[providers]\ndeadline_ms = %s\nsandbox_stalled = [%s]\n' "$deadline" "$stalled" > swapd.toml
    SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" serve --config swapd.toml --listen 127.0.0.1:18081 > serve.log 2>&1 &
    server=$!
    for _ in $(seq 50); do curl -sf http://127.0.0.1:18081/healthz > /dev/null && break; sleep 0.1; done
    # USDCETH -> ETH: two offchain desks, the EVM DEX and (unused pair) the bridge are asked.
    out=$("$bin/swapd-loadgen" --url http://127.0.0.1:18081 --path /api/v3/routes \
        --query fromCcy=USDCETH --query toCcy=ETH --query amount=5000 \
        --concurrency "$concurrency" --seconds "$seconds" --warmup 1 --json --key "$key" --secret "$secret")
    python3 -c "
import json,sys
r=json.loads(sys.argv[1])
print(f\"{sys.argv[2]:28} {r['rps']:>6.0f} req/s  p50 {r['p50_ms']:7.2f} ms  p90 {r['p90_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms  max {r['max_ms']:7.2f} ms  failures {r['failures']}\")
" "$out" "$label"
    kill "$server"; wait "$server" 2>/dev/null || true
}

echo "deadline ${deadline} ms, concurrency ${concurrency}, ${seconds} s per run"
measure "all providers answering" ""
measure "meridian stalled" '"meridian"'
