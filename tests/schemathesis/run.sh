#!/usr/bin/env bash
# Runs schemathesis (coverage, fuzzing and stateful phases) against both OpenAPI documents of a
# sandbox swapd started here on a fresh data directory. Requests to /api/v3 are signed by
# hooks.py with a key created for the run. Usage: tests/schemathesis/run.sh PATH/TO/swapd
# Exits non-zero on any failure; the junit reports land in $SCHEMATHESIS_REPORTS (default: a
# temporary directory, printed at the end). SCHEMATHESIS_MAX_EXAMPLES (default 50) and
# SCHEMATHESIS_SEED (default 1, so that CI runs the same cases every time) tune the run; a
# different seed or more examples explore further.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
swapd=${1:?usage: run.sh PATH/TO/swapd}
version=4.32.5
venv=${SCHEMATHESIS_VENV:-$HOME/.cache/swapd-schemathesis-$version}
if [ ! -x "$venv/bin/schemathesis" ]; then
    echo "installing schemathesis $version into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
fi

data=$(mktemp -d)
reports=${SCHEMATHESIS_REPORTS:-$data/reports}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# One client sends a few thousand requests a minute, many of them refused: no per-address limits.
SWAPD_SECURITY__IP_REQUESTS_PER_SECOND=0 SWAPD_SECURITY__IP_AUTH_FAILURES_PER_MINUTE=0 \
    "$swapd" --data-dir "$data" serve --listen "127.0.0.1:$port" >"$data/serve.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 1
done

# Generous key limits, for the same reason.
key=$("$swapd" --data-dir "$data" keys create --name schemathesis --json \
    --permissions prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write \
    --per-minute 1000000 --per-hour 1000000 --weight-per-hour 100000000)
export SWAPD_API_KEY=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])' <<<"$key")
export SWAPD_API_SECRET=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["apiSecret"])' <<<"$key")
export SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$here"

root=$(cd "$here/../.." && pwd)
cd "$data" # schemathesis keeps its cache in the working directory
status=0
for document in v3 x402; do
    echo "==> schemathesis: openapi/$document.json"
    # The e-mail pattern bounds its local part with a lookahead (at most 64 characters, as the
    # mailer requires), which the generator meets by drawing and filtering: more filtering than
    # hypothesis's health check likes, on that one field, so that check is off.
    "$venv/bin/schemathesis" --config-file "$here/schemathesis.toml" run \
        "$root/openapi/$document.json" --url "http://127.0.0.1:$port" \
        --phases examples,coverage,fuzzing,stateful --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-50}" --seed "${SCHEMATHESIS_SEED:-1}" \
        --suppress-health-check=filter_too_much \
        --report junit --report-dir "$reports/$document" --no-color || status=1
done
if [ "$status" != 0 ]; then
    echo "--- swapd serve log (last 30 lines) ---"; tail -n 30 "$data/serve.log"
fi
echo "reports: $reports"
exit "$status"
