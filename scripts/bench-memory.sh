#!/usr/bin/env bash
# Resident memory of `swapd serve` (release, SQLite, one node) under signed `GET /api/v3` load:
# the single-node nonce set holds every nonce of the last five minutes, so memory grows with
# the request rate until it levels off after five minutes, and never past its bound.
# Prints the achieved rate and the server's RSS every `interval` seconds.
# Usage: scripts/bench-memory.sh [seconds] [concurrency] [interval]
set -euo pipefail
seconds=${1:-600}
concurrency=${2:-64}
interval=${3:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'kill $server $load 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
"$bin/swapd" keys create --name bench --permissions prices:read \
    --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > key.json
key=$(python3 -c "import json;print(json.load(open('key.json'))['apiKey'])")
secret=$(python3 -c "import json;print(json.load(open('key.json'))['apiSecret'])")
SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" serve --listen 127.0.0.1:18081 > serve.log 2>&1 &
server=$!
sleep 1
rss() { awk '/VmRSS/ {print $2}' "/proc/$server/status"; }
echo "start: RSS $(( $(rss) / 1024 )) MiB"
"$bin/swapd-loadgen" --url http://127.0.0.1:18081 --concurrency "$concurrency" --seconds "$seconds" \
    --warmup 0 --json --path /api/v3 --key "$key" --secret "$secret" > load.json &
load=$!
elapsed=0
while kill -0 "$load" 2>/dev/null; do
    sleep "$interval"
    elapsed=$((elapsed + interval))
    kill -0 "$load" 2>/dev/null && echo "${elapsed} s: RSS $(( $(rss) / 1024 )) MiB"
done
wait "$load"
python3 -c "
import json; r=json.load(open('load.json'))
print(f\"signed GET /api/v3: {r['requests']} requests in {r['seconds']:.0f} s, {r['rps']:.0f} req/s, p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, failures {r['failures']}\")"
echo "end: RSS $(( $(rss) / 1024 )) MiB"
