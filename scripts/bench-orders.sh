#!/usr/bin/env bash
# Signed POST /api/v3/orders (each with a fresh nonce and Idempotency-Key) on the SQLite
# default, on PostgreSQL (nonces and rate limits in PostgreSQL, as several nodes without Redis
# share them) and on PostgreSQL with Redis: throughput and latency of order creation.
# Usage: scripts/bench-orders.sh [seconds] [concurrency]
# Env: SWAPD_BENCH_PG_ADMIN (PostgreSQL admin URL), SWAPD_BENCH_REDIS_URL (default local).
set -euo pipefail
seconds=${1:-10}
concurrency=${2:-16}
pg_admin=${SWAPD_BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
redis_url=${SWAPD_BENCH_REDIS_URL:-redis://127.0.0.1:6379}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
server=
cleanup() {
    kill $server 2>/dev/null || true
    psql "$pg_admin" -qc 'DROP DATABASE IF EXISTS swapd_bench' 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
body='{"fromCcy":"BTC","toCcy":"USDTTRC","amount":"0.05","toAddress":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"}'

# measure LABEL DATABASE_URL [REDIS_URL]
measure() {
    local label=$1 url=$2 redis=${3:-}
    "$bin/swapd" --database-url "$url" keys create --name bench --permissions orders:create \
        --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > key.json
    key=$(python3 -c "import json;print(json.load(open('key.json'))['apiKey'])")
    secret=$(python3 -c "import json;print(json.load(open('key.json'))['apiSecret'])")
    SWAPD_SHARED__REDIS_URL=$redis SWAPD_SHARED__REDIS_PREFIX="swapd-bench-$$" \
        SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 RUST_LOG=warn "$bin/swapd" --database-url "$url" serve --api --listen 127.0.0.1:18082 > serve.log 2>&1 &
    server=$!
    for _ in $(seq 50); do curl -sf http://127.0.0.1:18082/healthz > /dev/null && break; sleep 0.1; done
    out=$("$bin/swapd-loadgen" --url http://127.0.0.1:18082 --path /api/v3/orders --body "$body" \
        --concurrency "$concurrency" --seconds "$seconds" --warmup 1 --json --key "$key" --secret "$secret")
    python3 -c "
import json,sys
r=json.loads(sys.argv[1])
print(f\"{sys.argv[2]:12} {r['rps']:>6.0f} orders/s  p50 {r['p50_ms']:6.2f} ms  p90 {r['p90_ms']:6.2f} ms  p99 {r['p99_ms']:6.2f} ms  max {r['max_ms']:7.2f} ms  failures {r['failures']}\")
" "$out" "$label"
    kill "$server"; wait "$server" 2>/dev/null || true
}

echo "concurrency ${concurrency}, ${seconds} s per run"
measure sqlite "sqlite://$work/data/swapd.db"
psql "$pg_admin" -qc 'DROP DATABASE IF EXISTS swapd_bench' -c 'CREATE DATABASE swapd_bench'
measure postgres "${pg_admin%/*}/swapd_bench"
psql "$pg_admin" -qc 'DROP DATABASE IF EXISTS swapd_bench' -c 'CREATE DATABASE swapd_bench'
measure postgres+redis "${pg_admin%/*}/swapd_bench" "$redis_url"
