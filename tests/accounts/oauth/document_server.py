"""A loopback HTTP server for the client metadata document tests: each GET is answered by the
`answer` function the test sets (a JSON document by default), and the requests are counted."""

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[BaseHTTPRequestHandler], None]


def json_answer(document: object, *, cache_control: str | None = None) -> Answer:
    """An answer with `document` as JSON, and a Cache-Control header when given."""
    return body_answer(json.dumps(document).encode(), cache_control=cache_control)


def body_answer(body: bytes, *, cache_control: str | None = None) -> Answer:
    """An answer with `body` as it is, as JSON, and a Cache-Control header when given."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        if cache_control:
            handler.send_header("Cache-Control", cache_control)
        handler.end_headers()
        handler.wfile.write(body)

    return answer


class DocumentServer:
    """Serves http://127.0.0.1:<port>/<anything>; `url` is a document's URL on it."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []  # the path and Host header of each GET
        self.answer: Answer = json_answer({})
        self.released = threading.Event()  # set at teardown: stalling answers stop waiting
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append({"path": self.path, "host": self.headers.get("Host", "")})
                try:
                    server.answer(self)
                except OSError:  # the fetcher hung up, as it should on an oversized or slow answer
                    pass

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/clients/assistant.json"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()  # quick to shut down

    def document(self, url: str | None = None, **metadata: object) -> dict:
        """A valid metadata document for `url` (this server's by default), with `metadata` on top."""
        return {
            "client_id": url or self.url,
            "client_name": "Assistant",
            "redirect_uris": ["https://assistant.example/callback"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
