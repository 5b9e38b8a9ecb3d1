"""A real sandbox `swapd serve` for the tests that talk to one: the binary cargo built
(`SWAPD_BIN`, or `$CARGO_TARGET_DIR/debug/swapd`, or `target/debug/swapd`), a fresh data dir and
an API key with every permission."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
PERMISSIONS = (
    "prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write"
)


def swapd_binary() -> Path | None:
    candidates = [os.environ.get("SWAPD_BIN")]
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(str(Path(os.environ["CARGO_TARGET_DIR"]) / "debug" / "swapd"))
    candidates.append(str(ROOT / "target" / "debug" / "swapd"))
    return next((Path(c) for c in candidates if c and Path(c).is_file()), None)


@dataclass
class Swapd:
    url: str
    api_key: str
    api_secret: str


@pytest.fixture(scope="session")
def swapd() -> Swapd:
    binary = swapd_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the SDK against swapd: build it (cargo build -p swapd) or set SWAPD_BIN")
        pytest.skip("no swapd binary: run `cargo build -p swapd` or set SWAPD_BIN")
    data = tempfile.mkdtemp(prefix="swapd-sdk-")
    created = subprocess.run(
        [
            str(binary),
            "--data-dir",
            data,
            "keys",
            "create",
            "--name",
            "sdk",
            "--permissions",
            PERMISSIONS,
            "--per-minute",
            "6000",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    key = json.loads(created.stdout)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(Path(data) / "serve.log", "w")
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
            pytest.fail(f"swapd did not become ready: {(Path(data) / 'serve.log').read_text()[-2000:]}")
        time.sleep(0.2)
    yield Swapd(url, key["apiKey"], key["apiSecret"])
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()
