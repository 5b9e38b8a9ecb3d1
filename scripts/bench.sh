#!/usr/bin/env bash
# Every performance figure of docs/benchmarks.md in one run on this machine, each beside what it
# is compared with, measured in turn (the compared pairs alternated):
#   1. /healthz against signed GET /api/v3;
#   2. order creation (signed POST /api/v3/orders, 16 connections) on SQLite, on PostgreSQL,
#      on PostgreSQL with Redis: rate, p99 and slowest request, each as a share of /healthz;
#   3. the x402 challenge against the reference @x402/express server;
#   4. a long order run on SQLite in six segments: the rate of the last segment against the
#      first, the slowest request of each, and the bytes on disk per order, by table.
# Usage: scripts/bench.sh [--quick]     (--quick: short runs and 5 000 orders, under five minutes)
# Env: SWAPD_BENCH_PG_ADMIN (PostgreSQL admin URL), SWAPD_BENCH_REDIS_URL (default local),
#      SWAPD_BENCH_BIN (a directory with release builds of swapd and swapd-loadgen to measure
#      instead of building this checkout's, e.g. to compare two commits).
set -euo pipefail
quick=false
[ "${1:-}" = "--quick" ] && quick=true
if $quick; then seconds=3; segment=4; else seconds=10; segment=20; fi
pg_admin=${SWAPD_BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
redis_url=${SWAPD_BENCH_REDIS_URL:-redis://127.0.0.1:6379}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${SWAPD_BENCH_BIN:-}" ]; then
    bin=$SWAPD_BENCH_BIN
else
    echo "building release binaries…"
    cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
    bin="${CARGO_TARGET_DIR:-$root/target}/release"
fi
npm ci --prefix "$root/scripts/x402-reference" --no-audit --no-fund --loglevel=error
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    psql "$pg_admin" -qc 'DROP DATABASE IF EXISTS swapd_bench' 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
order='{"fromCcy":"BTC","toCcy":"USDTTRC","amount":"0.05","toAddress":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}'
results="$work/results.jsonl"

# key DATABASE_URL: a key with quotas far above any load, as "KEY SECRET".
key() {
    "$bin/swapd" --database-url "$1" keys create --name bench --permissions prices:read,orders:create \
        --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json \
        | python3 -c "import json,sys;k=json.load(sys.stdin);print(k['apiKey'],k['apiSecret'])"
}

# serve PORT DATABASE_URL [REDIS_URL]: a release API node; its pid in $server.
serve() {
    SWAPD_SHARED__REDIS_URL=${3:-} SWAPD_SHARED__REDIS_PREFIX="swapd-bench-$$" \
        SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn \
        "$bin/swapd" --database-url "$2" --data-dir "$work/data" serve --listen "127.0.0.1:$1" \
        > "$work/serve-$1.log" 2>&1 &
    server=$!
    pids+=("$server")
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/healthz" > /dev/null && return; sleep 0.1; done
    echo "swapd did not start: $(tail -5 "$work/serve-$1.log")" >&2
    exit 1
}

stop() { kill "$server"; wait "$server" 2>/dev/null || true; }

# load LABEL PORT SECONDS [loadgen options]: one run, recorded in $results and printed.
load() {
    local label=$1 port=$2 secs=$3
    shift 3
    "$bin/swapd-loadgen" --url "http://127.0.0.1:$port" --seconds "$secs" --warmup 1 --json "$@" \
        | python3 -c "
import json, sys
r = json.load(sys.stdin); r['label'] = sys.argv[1]
print(json.dumps(r), file=open(sys.argv[2], 'a'))
print(f\"  {sys.argv[1]:34} {r['rps']:>8.0f} req/s  p99 {r['p99_ms']:8.2f} ms  max {r['max_ms']:8.2f} ms  failures {r['failures']}\")
" "$label" "$results"
}

sqlite="sqlite://$work/data/swapd.db"
mkdir -p "$work/data"
echo "== 1. /healthz and signed GET /api/v3 (32 connections)"
read -r k s < <(key "$sqlite")
serve 18480 "$sqlite"
for _ in 1 2; do
    load healthz 18480 "$seconds" --concurrency 32
    load signed-read 18480 "$seconds" --concurrency 32 --path /api/v3 --key "$k" --secret "$s"
done
stop

echo "== 2. order creation (16 connections)"
load_orders() {
    local label=$1 url=$2 redis=${3:-}
    read -r k s < <(key "$url")
    serve 18481 "$url" "$redis"
    load "orders-$label" 18481 "$seconds" --concurrency 16 --path /api/v3/orders --body "$order" --key "$k" --secret "$s"
    stop
}
psql "$pg_admin" -qc 'DROP DATABASE IF EXISTS swapd_bench' -c 'CREATE DATABASE swapd_bench'
postgres="${pg_admin%/*}/swapd_bench"
for _ in 1 2; do
    rm -rf "$work/data"; mkdir -p "$work/data"
    load_orders sqlite "$sqlite"
    load_orders postgres "$postgres"
    load_orders postgres-redis "$postgres" "$redis_url"
done

echo "== 3. the x402 challenge, swapd against @x402/express"
rm -rf "$work/data"; mkdir -p "$work/data"
serve 18482 "$sqlite"
swapd_x402=$server
PORT=18490 node "$root/scripts/x402-reference/server.mjs" > "$work/reference.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18490/paid && break; sleep 0.2; done
for _ in 1 2; do
    load x402-swapd 18482 "$seconds" --concurrency 32 --path /api/x402/currencies --expect-status 402
    load x402-reference 18490 "$seconds" --concurrency 32 --path /paid --expect-status 402
done
server=$swapd_x402; stop

echo "== 4. a long order run on SQLite: six segments of ${segment} s, then bytes per order"
rm -rf "$work/data"; mkdir -p "$work/data"
read -r k s < <(key "$sqlite")
serve 18483 "$sqlite"
for n in 1 2 3 4 5 6; do
    load "segment-$n" 18483 "$segment" --concurrency 16 --path /api/v3/orders --body "$order" --key "$k" --secret "$s"
done
stop

python3 - "$results" "$work/data/swapd.db" <<'PY'
import json, sqlite3, sys
from statistics import mean
runs = [json.loads(line) for line in open(sys.argv[1])]
def rate(label): return mean(r["rps"] for r in runs if r["label"] == label)
def worst(label, key): return max(r[key] for r in runs if r["label"] == label)
healthz = rate("healthz")
print("\n== ratios (means of the alternated runs)")
print(f"signed GET /api/v3 ÷ /healthz           {rate('signed-read') / healthz:7.1%}   (goal ≥ 75 %)")
for label, goal in (("sqlite", "8 %"), ("postgres", "5 %"), ("postgres-redis", "8 %")):
    r = f"orders-{label}"
    print(f"order creation {label:16} ÷ /healthz {rate(r) / healthz:7.1%}   (goal ≥ {goal}); "
          f"p99 {worst(r, 'p99_ms'):.0f} ms, slowest {worst(r, 'max_ms'):.0f} ms")
print(f"x402 challenge ÷ @x402/express         {rate('x402-swapd') / rate('x402-reference'):7.1f}×   (goal ≥ 10×)")
segments = [r for r in runs if r["label"].startswith("segment-")]
orders = sum(r["requests"] for r in segments)
print(f"last segment ÷ first ({orders} orders)     {segments[-1]['rps'] / segments[0]['rps']:7.2f}    "
      f"(goal ≥ 0.9); slowest request per segment: "
      + ", ".join(f"{r['max_ms']:.0f}" for r in segments) + " ms")
db = sqlite3.connect(sys.argv[2])
count = db.execute("SELECT count(*) FROM orders").fetchone()[0]
tables = db.execute(
    "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC").fetchall()
total = sum(size for _, size in tables)
print(f"bytes on disk per order                {total / max(count, 1):7.0f}    (goal ≤ 3 000), by table:")
for name, size in tables[:8]:
    print(f"    {name:40} {size / max(count, 1):8.0f}")
PY
