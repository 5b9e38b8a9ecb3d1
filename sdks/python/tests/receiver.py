"""A local webhook receiver: keeps each delivery's headers and raw body, answers 204."""

from __future__ import annotations

import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self) -> None:
        self.deliveries: queue.Queue[tuple[dict[str, str], bytes]] = queue.Queue()
        received = self.deliveries

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.put((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next(self, timeout: float = 30) -> tuple[dict[str, str], bytes]:
        return self.deliveries.get(timeout=timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
