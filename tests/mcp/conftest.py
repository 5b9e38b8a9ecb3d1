"""A real sandbox `swapd serve` (ledger facilitator) for the MCP tests: the binary cargo built
(`SWAPD_BIN`, or `$CARGO_TARGET_DIR/debug/swapd`, or `target/debug/swapd`) on a fresh data dir."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def swapd_binary() -> Path | None:
    candidates = [os.environ.get("SWAPD_BIN")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(str(Path(os.environ["CARGO_TARGET_DIR"]) / "debug" / "swapd"))
    candidates.append(str(ROOT / "target" / "debug" / "swapd"))
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


@pytest.fixture(scope="session")
def swapd_url() -> str:
    binary = swapd_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the MCP tests against swapd: build it (cargo build -p swapd) or set SWAPD_BIN")
        pytest.skip("no swapd binary: run `cargo build -p swapd` or set SWAPD_BIN")
    data = tempfile.mkdtemp(prefix="swapd-mcp-")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log_path = Path(data) / "serve.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [str(binary), "--data-dir", data, "serve", "--listen", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RUST_LOG": "warn", "SWAPD_SANDBOX__PROFILE": "punctual"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            pytest.fail(f"swapd did not become ready: {log_path.read_text()[-2000:]}")
        time.sleep(0.2)
    yield url
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()
