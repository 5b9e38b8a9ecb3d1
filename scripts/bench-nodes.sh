#!/usr/bin/env bash
# Signed `GET /api/v3` over 1, 2 and 3 API nodes (`swapd serve --api`) on one PostgreSQL
# database, with the shared state (nonces, rate limits) in PostgreSQL and then in Redis. The load
# generator spreads its connections over the nodes; server CPU per request is summed over them.
# Needs PostgreSQL (SWAPD_BENCH_POSTGRES_URL, default the local `test` database) and Redis
# (SWAPD_BENCH_REDIS_URL, default redis://127.0.0.1:6379).
# Usage: scripts/bench-nodes.sh [seconds] [concurrency]
set -euo pipefail
seconds=${1:-8}
concurrency=${2:-32}
pg=${SWAPD_BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
redis=${SWAPD_BENCH_REDIS_URL:-redis://127.0.0.1:6379}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release -q -p swapd -p swapd-loadgen --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
work=$(mktemp -d)
schema="bench_nodes_$$"
pids=()
stop_nodes() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; pids=(); }
trap 'stop_nodes; psql "$pg" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
psql "$pg" -qc "CREATE SCHEMA $schema"
database_url="$pg?options=-c%20search_path%3D$schema"
export SWAPD_DATABASE_URL="$database_url"
export SWAPD_MASTER_KEY=$(python3 -c 'import secrets;print(secrets.token_hex(32))')
export SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0
export RUST_LOG=warn
cd "$work"
"$bin/swapd" migrate >/dev/null
"$bin/swapd" keys create --name bench --permissions prices:read \
    --per-minute 60000000 --per-hour 4000000000 --weight-per-hour 4000000000 --json > key.json
key=$(python3 -c "import json;print(json.load(open('key.json'))['apiKey'])")
secret=$(python3 -c "import json;print(json.load(open('key.json'))['apiSecret'])")
ticks=$(getconf CLK_TCK)
cpu() { local total=0; for pid in "${pids[@]}"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done; echo $total; }

for shared in database redis; do
    for nodes in 1 2 3; do
        urls=()
        for i in $(seq 1 "$nodes"); do
            port=$((18180 + i))
            mkdir -p "node$i"
            if [ "$shared" = redis ]; then
                SWAPD_SHARED__REDIS_URL="$redis" SWAPD_SHARED__REDIS_PREFIX="bench-$$" \
                    "$bin/swapd" --data-dir "node$i" serve --api --listen "127.0.0.1:$port" > "node$i.log" 2>&1 &
            else
                "$bin/swapd" --data-dir "node$i" serve --api --listen "127.0.0.1:$port" > "node$i.log" 2>&1 &
            fi
            pids+=($!)
            urls+=(--url "http://127.0.0.1:$port")
        done
        for i in $(seq 1 "$nodes"); do
            for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$((18180 + i))/readyz" >/dev/null && break; sleep 0.2; done
        done
        sleep 1
        before=$(cpu)
        out=$("$bin/swapd-loadgen" "${urls[@]}" --concurrency "$concurrency" --seconds "$seconds" --warmup 0 --json \
            --path /api/v3 --key "$key" --secret "$secret")
        after=$(cpu)
        python3 -c "
import json,sys
r=json.loads(sys.argv[1]); cpu_us=(int(sys.argv[2])-int(sys.argv[3]))/int(sys.argv[4])*1e6
print(f\"{sys.argv[5]:8} {sys.argv[6]} node(s)  {r['rps']:>7.0f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  failures {r['failures']}  server CPU {cpu_us/max(r['requests'],1):.1f} us/request\")
" "$out" "$after" "$before" "$ticks" "$shared" "$nodes"
        stop_nodes
    done
done
