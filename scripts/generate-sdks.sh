#!/usr/bin/env bash
# Regenerates both SDKs' types and operation tables from openapi/v3.json and openapi/x402.json
# (run after `swapd openapi` changes a document). Each SDK's tests fail while its files are stale.
# Needs: the Python SDK's dev install (pip install -c sdks/python/constraints-ci.txt -e
# "sdks/python[x402,test]") and `npm ci --prefix sdks/typescript`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python3 "$root/sdks/python/scripts/generate.py"
node "$root/sdks/typescript/scripts/generate.mjs"
