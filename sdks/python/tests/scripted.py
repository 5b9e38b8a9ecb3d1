"""A local HTTP server that answers from a script and records what it was sent."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A scripted answer: (status, headers, body), or DROP to close the connection unanswered.
DROP = "drop"


def ok(data: Any, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"X-Request-Id": "req_ok"}, json.dumps({"success": True, "data": data}).encode()


def error(status: int, code: str, retry_after: int | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"X-Request-Id": f"req_{code}"}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    body = {"success": False, "error": {"code": code, "message": f"{code} happened"}}
    return status, headers, json.dumps(body).encode()


class Scripted:
    def __init__(self, *answers: Any) -> None:
        self.answers = deque(answers)
        self.requests: list[dict[str, Any]] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                script.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                )
                answer = script.answers.popleft()
                if answer == DROP:
                    self.close_connection = True
                    return
                status, headers, payload = answer
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = handle_one

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
