#!/usr/bin/env bash
# Signed `GET /api/v3` against unauthenticated `/healthz` on the same release server, in the same
# run: client-observed throughput and latency (swapd-loadgen), and the server's own CPU time per
# request (from /proc), which is what the auth layer adds independent of the load generator.
# Usage: scripts/bench-auth.sh [seconds] [concurrency]
set -euo pipefail
seconds=${1:-10}
concurrency=${2:-32}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
"$bin/swapd" keys create --name bench --permissions prices:read \
    --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > key.json
key=$(python3 -c "import json;print(json.load(open('key.json'))['apiKey'])")
secret=$(python3 -c "import json;print(json.load(open('key.json'))['apiSecret'])")
SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" serve --listen 127.0.0.1:18080 > serve.log 2>&1 &
server=$!
sleep 1
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$server/stat"; }
run() {
    local before after out requests
    before=$(cpu)
    out=$("$bin/swapd-loadgen" --url http://127.0.0.1:18080 --concurrency "$concurrency" --seconds "$seconds" --warmup 0 --json "$@")
    after=$(cpu)
    requests=$(python3 -c "import json,sys;print(json.loads(sys.argv[1])['requests'])" "$out")
    python3 -c "
import json,sys
r=json.loads(sys.argv[1]); cpu_us=(int(sys.argv[2])-int(sys.argv[3]))/int(sys.argv[4])*1e6
print(f\"{r['mode']:6} GET {r['path']:8}  {r['rps']:>7.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  server CPU {cpu_us/max(r['requests'],1):.1f} us/request\")
" "$out" "$after" "$before" "$ticks"
}
for _ in 1 2; do
    run --path /healthz
    run --path /api/v3 --key "$key" --secret "$secret"
done
