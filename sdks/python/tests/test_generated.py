"""The committed types and operation tables are what the OpenAPI documents make."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from swapd._generated import v3_operations, x402_operations
from swapd.business import BusinessApiClient
from swapd.x402 import X402ApiClient

SDK = Path(__file__).resolve().parents[1]
ROOT = SDK.parents[1]


def test_the_generated_files_are_not_stale() -> None:
    done = subprocess.run(
        [sys.executable, str(SDK / "scripts" / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def operation_ids(document: str) -> set[str]:
    spec = json.loads((ROOT / "openapi" / document).read_text())
    skipped = {"business_openapi", "x402_openapi", "healthz", "readyz", "metrics"}
    return {
        op["operationId"]
        for item in spec["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and op["operationId"] not in skipped
    }


def test_every_operation_is_a_method_named_by_its_operation_id() -> None:
    for document, table, client in (
        ("v3.json", v3_operations.OPERATIONS, BusinessApiClient),
        ("x402.json", x402_operations.OPERATIONS, X402ApiClient),
    ):
        ids = operation_ids(document)
        assert set(table) == ids
        missing = [i for i in ids if not callable(getattr(client, i, None))]
        assert not missing, f"{client.__name__} lacks {missing}"
