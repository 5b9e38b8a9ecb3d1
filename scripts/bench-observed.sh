#!/usr/bin/env bash
# GET /api/v3/routes latency on an empty outcome history and on 100 000 stored swap outcomes
# (docs/market.md, "Observed figures"): the figures are made in the background, so a routes
# request must cost the same. Alternates the two stores, twice.
# Usage: scripts/bench-observed.sh [seconds] [concurrency] [outcomes]
set -euo pipefail
seconds=${1:-8}
concurrency=${2:-8}
outcomes=${3:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
server=
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT

# prepare DIR [OUTCOMES]: a data dir with a bench key, and that many outcomes of the three
# providers that quote USDCETH -> ETH, ended over the last 30 days.
prepare() {
    local dir=$1 count=${2:-0}
    mkdir -p "$dir"
    "$bin/swapd" --data-dir "$dir" keys create --name bench --permissions prices:read \
        --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > "$dir/key.json"
    python3 - "$dir/swapd.db" "$count" <<'PY'
import random, sqlite3, sys, time
db, count = sys.argv[1], int(sys.argv[2])
now = int(time.time() * 1000)
rows = []
for i in range(count):
    provider = ("atlas", "borealis", "meridian")[i % 3]
    completed = random.random() < 0.9
    rows.append((
        f"ord_{i:032x}", provider, "onchain" if provider == "meridian" else "offchain",
        "USDCETH", "ETH", "float", "5000", "1.6", None,
        "1.59" if completed else None, "completed" if completed else "refunded", None, 1,
        random.randint(60, 1800) if completed else None,
        random.randint(-200, 20) if completed else None,
        now - random.randint(0, 30 * 86_400_000),
    ))
con = sqlite3.connect(db)
con.executemany("INSERT INTO swap_outcomes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
con.commit()
print(f"{count} outcomes stored")
PY
}

# measure LABEL DIR
measure() {
    local label=$1 dir=$2
    local key secret
    key=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['apiKey'])" "$dir/key.json")
    secret=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['apiSecret'])" "$dir/key.json")
    SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" --data-dir "$dir" serve \
        --listen 127.0.0.1:18083 > "$dir/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do curl -sf http://127.0.0.1:18083/readyz > /dev/null && break; sleep 0.1; done
    out=$("$bin/swapd-loadgen" --url http://127.0.0.1:18083 --path /api/v3/routes \
        --query fromCcy=USDCETH --query toCcy=ETH --query amount=5000 \
        --concurrency "$concurrency" --seconds "$seconds" --warmup 1 --json --key "$key" --secret "$secret")
    python3 -c "
import json,sys
r=json.loads(sys.argv[1])
print(f\"{sys.argv[2]:28} {r['rps']:>6.0f} req/s  p50 {r['p50_ms']:7.2f} ms  p90 {r['p90_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms  max {r['max_ms']:7.2f} ms  failures {r['failures']}\")
" "$out" "$label"
    kill "$server"; wait "$server" 2>/dev/null || true
}

prepare "$work/empty" 0 > /dev/null
prepare "$work/history" "$outcomes"
echo "concurrency ${concurrency}, ${seconds} s per run"
for _ in 1 2; do
    measure "empty outcome history" "$work/empty"
    measure "${outcomes} outcomes" "$work/history"
done
