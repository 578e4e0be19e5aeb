"""`RestAdapter`: serves a namespace (a directory namespace, or any other) over the
Lance namespace REST protocol of `rest.py`, as pylance's adapter does: each request is
routed to the backend's method of the same name, its answer sent back as JSON (or Arrow),
its namespace errors as `{"error", "code"}` with the code's HTTP status."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Pattern, Tuple

from lance_namespace import errors as ns_errors

from . import _common
from ._connect import connect
from .rest import ARROW_FILE, ROUTES, STATUS, Route, decode_id, model_class

_PATTERNS: List[Tuple[Pattern[str], Route]] = [
    (re.compile("^/v1/" + r.path.replace("{id}", "(?P<id>[^/]+)").replace("{index_name}", "(?P<index_name>[^/]+)")
                + "$"), r)
    for r in ROUTES
]


class RestAdapter:
    """Serve `namespace_client_impl` ("dir", "rest" or a class path, built with
    `namespace_client_properties`) on `host`:`port` (127.0.0.1:2333; port 0 picks a free
    one, see `port` once started). A context manager: started on entry, stopped on exit."""

    def __init__(self, namespace_client_impl: str, namespace_client_properties: Optional[Dict[str, str]] = None,
                 session: Any = None, host: Optional[str] = None, port: Optional[int] = None):
        self.namespace_client_impl = namespace_client_impl
        self.host = host
        self._port = 2333 if port is None else int(port)
        props = {k: str(v) for k, v in (namespace_client_properties or {}).items()}
        self.backend = connect(namespace_client_impl, props)
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server is not None else 0

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"backend": self.backend})
        server = ThreadingHTTPServer((self.host or "127.0.0.1", self._port), handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="lance-namespace-rest", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "RestAdapter":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.stop()
        return False

    def __repr__(self) -> str:
        return f"RestAdapter(host='{self.host}', port={self.port})"


def _query_value(key: str, text: str) -> Any:
    """A query parameter as its request field's type."""
    if key == "limit":
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


class _Handler(BaseHTTPRequestHandler):
    backend: Any = None
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def log_message(self, *args: Any) -> None:  # quiet: errors travel in the answers
        pass

    def _serve(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        for pattern, route in _PATTERNS:
            match = pattern.match(url.path.rstrip("/"))
            if match is None:
                continue
            if route.method != method:
                return self._reply(405, b"", None)
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
            try:
                return self._dispatch(route, match.groupdict(), query, body)
            except ns_errors.LanceNamespaceError as e:
                return self._error(int(e.code), _common.bare_message(e))
            except Exception as e:  # noqa: BLE001 - any failure of the backend is the client's error 18
                return self._error(18, f"{type(e).__name__}: {e}")
        self._reply(404, b"", None)

    def _dispatch(self, route: Route, path: Dict[str, str], query: Dict[str, str], body: bytes) -> None:
        delimiter = query.get("delimiter") or _common.DELIMITER
        fields: Dict[str, Any] = {}
        if route.body == "json" and body:
            try:
                fields = json.loads(body)
            except ValueError as e:
                raise _common.error(ns_errors.InvalidInputError, f"the request body is not JSON: {e}") from e
        for key in route.query:
            if key in query:
                fields[key] = _query_value(key, query[key])
        if "index_name" in path:
            fields["index_name"] = urllib.parse.unquote(path["index_name"])
        fields["id"] = decode_id(path["id"], delimiter)
        request_type = model_class(route.operation, "Request")
        request = request_type.from_dict(fields) if request_type is not None and route.answer != "bytes" else fields
        call = getattr(self.backend, route.operation)
        answer = call(request, body) if route.body == "arrow" else call(request)
        if route.answer == "empty" or answer is None:
            return self._reply(200, b"", None)
        if route.answer == "bytes":
            return self._reply(200, bytes(answer), ARROW_FILE)
        if hasattr(answer, "to_dict"):
            answer = answer.to_dict()
        self._reply(200, json.dumps(answer).encode(), "application/json")

    def _error(self, code: int, message: str) -> None:
        self._reply(STATUS.get(code, 500), json.dumps({"error": message, "code": code}).encode(), "application/json")

    def _reply(self, status: int, body: bytes, content_type: Optional[str]) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
