#!/usr/bin/env bash
# The container image and the compose stack, tested with real containers (docs/deploy.md):
# builds the image from the Dockerfile (the binaries cargo built, on a runtime base assembled
# from this host's glibc: no registry here), brings deploy/compose.yaml up on the host's
# network against this machine's PostgreSQL and Redis (its own database and key prefix), runs
# the migrations once, waits for both API nodes to be healthy, runs `swapctl demo` against one
# of them while the worker container is killed mid-run and started again, checks that every
# order ended once, and removes its containers, images, volumes and database.
#
#   tests/deploy/run.sh TARGET_DIR     (the cargo target dir holding debug/swapd and swapctl)
#
# Needs dockerd running (.ci/run starts it) and Debian's docker-compose.
set -euo pipefail

target=${1:?usage: tests/deploy/run.sh TARGET_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
docker=/usr/bin/docker
compose=/usr/bin/docker-compose
pg=${SWAPD_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
redis=${SWAPD_TEST_REDIS_URL:-redis://127.0.0.1:6379}
run=$$
project="swapdtest$run"
image="swapd-test:$run"
base="swapd-test-base:$run"
database="swapd_compose_$run"
work=$(mktemp -d)

say() { printf '  [deploy] %s\n' "$*"; }
stack() {
    "$compose" -p "$project" -f "$work/compose.yaml" "$@"
}
cleanup() {
    say "removing the stack, its images, volumes and database"
    stack down --volumes --remove-orphans > /dev/null 2>&1 || true
    "$docker" image rm -f "$image" "$base" > /dev/null 2>&1 || true
    # The build cache holds copies of the binaries (hundreds of MB a run on the vfs driver).
    "$docker" builder prune -af > /dev/null 2>&1 || true
    psql "$pg" -q -c "DROP DATABASE IF EXISTS $database" > /dev/null 2>&1 || true
    redis-cli -u "$redis" --scan --pattern "swapd-compose-$run:*" | xargs -r redis-cli -u "$redis" del > /dev/null 2>&1 || true
    rm -rf "$work" "$repo/deploy/.bin"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

say "image: the Dockerfile with the binaries cargo built, on a base of this host's glibc"
mkdir -p "$repo/deploy/.bin/bin" "$repo/deploy/.bin/data"
cp "$target/debug/swapd" "$target/debug/swapctl" "$repo/deploy/.bin/bin/"
"$repo/deploy/local-base.sh" "$base" "$target/debug/swapd" "$target/debug/swapctl"
DOCKER_BUILDKIT=1 "$docker" build -q -t "$image" \
    --build-arg BINARIES=prebuilt --build-arg RUNTIME_IMAGE="$base" "$repo" > /dev/null
user=$("$docker" image inspect -f '{{.Config.User}}' "$image")
[ "$user" = "65532:65532" ] || { echo "the image runs as '$user', not non-root" >&2; exit 1; }

say "stack: migrations once, two API nodes and a worker"
psql "$pg" -q -c "CREATE DATABASE $database" > /dev/null
export SWAPD_IMAGE="$image"
export SWAPD_ENV_FILE="$work/swapd.env"
export POSTGRES_PASSWORD=unused
export SWAPD_TEST_DATABASE_URL="${pg%/*}/$database"
export SWAPD_TEST_REDIS_URL="$redis"
export SWAPD_TEST_REDIS_PREFIX="swapd-compose-$run"
export SWAPD_TEST_PORT_1=$(free_port) SWAPD_TEST_PORT_2=$(free_port) SWAPD_TEST_PORT_WORKER=$(free_port)
sed -e "s/^SWAPD_MASTER_KEY=.*/SWAPD_MASTER_KEY=$(openssl rand -hex 32)/" \
    -e "s/^POSTGRES_PASSWORD=.*/POSTGRES_PASSWORD=unused/" \
    -e "s|^SWAPD_PUBLIC_URL=.*|SWAPD_PUBLIC_URL=http://127.0.0.1:$SWAPD_TEST_PORT_1|" \
    "$repo/deploy/.env.example" > "$SWAPD_ENV_FILE"
# deploy/compose.yaml with the host-network override, merged by docker-compose itself; on the
# host's network a container publishes no ports (Docker refuses both), so they are dropped.
"$compose" -f "$repo/deploy/compose.yaml" -f "$repo/tests/deploy/compose.host.yaml" config \
    | python3 -c '
import sys, yaml
stack = yaml.safe_load(sys.stdin)
for service in stack["services"].values():
    service.pop("ports", None)
yaml.safe_dump(stack, sys.stdout)' > "$work/compose.yaml"
stack run --rm --no-deps migrate
stack up -d --no-deps api-1 api-2 worker

healthy() {
    "$docker" inspect -f '{{.State.Health.Status}}' "$(stack ps -q "$1")" 2>/dev/null
}
for node in api-1 api-2; do
    for _ in $(seq 1 60); do
        [ "$(healthy "$node")" = healthy ] && break
        sleep 1
    done
    [ "$(healthy "$node")" = healthy ] || { stack logs "$node" >&2; echo "$node never became healthy" >&2; exit 1; }
done
say "both API nodes healthy"

say "a key, made by the image's swapd against the stack's database"
created=$(stack run --rm --no-deps -T migrate keys create --name deploy-test \
    --permissions prices:read,orders:create,orders:read,orders:update,webhooks:write --json)
export SWAPD_API_KEY=$(printf '%s' "$created" | python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])')
export SWAPD_API_SECRET=$(printf '%s' "$created" | python3 -c 'import json, sys; print(json.load(sys.stdin)["apiSecret"])')

say "swapctl demo against api-1, the worker killed mid-run and started again"
SWAPD_URL="http://127.0.0.1:$SWAPD_TEST_PORT_1" "$target/debug/swapctl" demo > "$work/demo.log" 2>&1 &
demo=$!
for _ in $(seq 1 50); do
    [ "$(psql "$SWAPD_TEST_DATABASE_URL" -tA -c 'SELECT count(*) FROM orders')" -gt 0 ] && break
    sleep 0.2
done
stack kill worker > /dev/null 2>&1
say "worker killed with an order under way; starting it again"
sleep 2
stack up -d --no-deps worker > /dev/null 2>&1
if ! wait "$demo"; then
    cat "$work/demo.log" >&2
    stack logs --tail 50 worker >&2
    echo "swapctl demo failed against the compose stack" >&2
    exit 1
fi

say "every order ended once"
orders=$(psql "$SWAPD_TEST_DATABASE_URL" -tA -c 'SELECT count(*) FROM orders')
twice=$(psql "$SWAPD_TEST_DATABASE_URL" -tA -c "SELECT count(*) FROM (SELECT order_id FROM order_events
    WHERE event_type IN ('order.completed', 'order.failed', 'order.expired') GROUP BY order_id
    HAVING count(*) > 1) AS repeated")
# The demo follows its first two orders to their end (a sandbox desk may refund or fail the
# first, as desks do: docs/sandbox.md).
ended=$(psql "$SWAPD_TEST_DATABASE_URL" -tA -c "SELECT count(*) FROM orders
    WHERE status IN ('completed', 'refunded', 'failed', 'expired')")
[ "$orders" -gt 0 ] && [ "$ended" -ge 2 ] && [ "$twice" -eq 0 ] || {
    cat "$work/demo.log" >&2
    echo "orders: $orders, ended: $ended, ended more than once: $twice" >&2
    exit 1
}
say "$orders orders, $ended ended, none ended twice"
echo "deploy: the image and the compose stack work"
