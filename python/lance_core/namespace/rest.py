"""The Lance namespace REST protocol, as pylance 14 speaks it: its routes (shared by the
client here and the server in `rest_adapter.py`) and `RestNamespace`, a client of any
server that speaks it.

A table or namespace id travels in the path, its parts joined by the delimiter (`$`
unless set) and percent-encoded; the root is the delimiter itself. Requests and answers
are JSON, except table data (an Arrow IPC stream in, an Arrow IPC file out of a query).
A failure is `{"error": <message>, "code": <namespace error code>}`.
"""

from __future__ import annotations

import importlib
import json
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import lance_namespace
from lance_namespace import LanceNamespace
from lance_namespace import errors as ns_errors

from . import _common

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"


@dataclass(frozen=True)
class Route:
    """One operation of the protocol: its HTTP method, its path after `/v1/` with `{id}`
    (and `{index_name}`) in it, and what travels: `body` "json", "arrow" (Arrow IPC with
    `mode` in the query) or "none"; `answer` "model", "empty", "int" or "bytes"."""

    operation: str
    method: str
    path: str
    body: str = "json"
    answer: str = "model"
    query: Tuple[str, ...] = ()


ROUTES: List[Route] = [
    Route("create_namespace", "POST", "namespace/{id}/create"),
    Route("list_namespaces", "GET", "namespace/{id}/list", body="none", query=("page_token", "limit")),
    Route("describe_namespace", "POST", "namespace/{id}/describe"),
    Route("drop_namespace", "POST", "namespace/{id}/drop"),
    Route("namespace_exists", "POST", "namespace/{id}/exists", answer="empty"),
    Route("list_tables", "GET", "namespace/{id}/table/list", body="none",
          query=("page_token", "limit", "include_declared")),
    Route("create_table", "POST", "table/{id}/create", body="arrow", query=("mode",)),
    Route("declare_table", "POST", "table/{id}/declare"),
    Route("describe_table", "POST", "table/{id}/describe"),
    Route("table_exists", "POST", "table/{id}/exists", answer="empty"),
    Route("drop_table", "POST", "table/{id}/drop", body="none"),
    Route("register_table", "POST", "table/{id}/register"),
    Route("deregister_table", "POST", "table/{id}/deregister"),
    Route("count_table_rows", "POST", "table/{id}/count_rows", answer="int"),
    Route("insert_into_table", "POST", "table/{id}/insert", body="arrow", query=("mode",)),
    Route("query_table", "POST", "table/{id}/query", answer="bytes"),
    Route("list_table_versions", "POST", "table/{id}/version/list"),
    Route("describe_table_version", "POST", "table/{id}/version/describe"),
    Route("create_table_version", "POST", "table/{id}/version/create"),
    Route("create_table_index", "POST", "table/{id}/create_index"),
    Route("list_table_indices", "POST", "table/{id}/index/list"),
    Route("describe_table_index_stats", "POST", "table/{id}/index/{index_name}/stats"),
]

# HTTP status of each namespace error code (pylance 14's server).
STATUS: Dict[int, int] = {0: 501, 1: 404, 2: 409, 3: 409, 4: 404, 5: 409, 6: 404, 7: 409, 8: 404, 9: 409,
                          10: 404, 11: 404, 12: 404, 13: 400, 14: 409, 15: 403, 16: 401, 17: 503, 18: 500,
                          19: 400, 20: 400, 21: 429, 22: 404, 23: 409}


def model_class(operation: str, suffix: str) -> Any:
    """The lance_namespace model of an operation's request or response
    (`create_table` + "Request" is `CreateTableRequest`)."""
    name = "".join(p.capitalize() for p in operation.split("_")) + suffix
    return getattr(lance_namespace, name, None)


def encode_id(parts: List[str], delimiter: str) -> str:
    joined = delimiter.join(parts) if parts else delimiter
    return urllib.parse.quote(joined, safe="")


def decode_id(segment: str, delimiter: str) -> List[str]:
    joined = urllib.parse.unquote(segment)
    if joined == delimiter:
        return []
    return [p for p in joined.split(delimiter) if p]


class DynamicContextProvider(ABC):
    """Gives per-request context to a `RestNamespace`: called before every request with
    `{"operation": ..., "object_id": ...}`; keys `headers.<Name>` of its answer are sent
    as HTTP headers."""

    @abstractmethod
    def provide_context(self, info: Dict[str, str]) -> Dict[str, str]:
        ...


class RestNamespace(LanceNamespace):
    """A client of a Lance namespace REST server. Properties, as pylance's: `uri` (the
    server), `delimiter` (`$`), `header.<Name>`/`headers.<Name>` (headers sent with every
    request), `dynamic_context_provider.impl` ("module.Class", built with the other
    `dynamic_context_provider.<key>` properties) unless `context_provider` is given."""

    def __init__(self, context_provider: Optional[DynamicContextProvider] = None, **properties: Any):
        props = {k: str(v) for k, v in properties.items()}
        uri = props.get("uri")
        if not uri:
            raise ValueError("Failed to create RestNamespace: Invalid input: "
                             "Missing required property 'uri' for REST namespace")
        self.endpoint = uri.rstrip("/")
        self.delimiter = props.get("delimiter") or _common.DELIMITER
        self.headers = {k.split(".", 1)[1]: v for k, v in props.items()
                        if k.startswith(("header.", "headers."))}
        provider_props = {k[len("dynamic_context_provider."):]: v for k, v in props.items()
                          if k.startswith("dynamic_context_provider.")}
        if context_provider is None and "impl" in provider_props:
            module, _, name = provider_props.pop("impl").rpartition(".")
            try:
                context_provider = getattr(importlib.import_module(module), name)(**provider_props)
            except (ImportError, AttributeError, TypeError) as e:
                raise ValueError(f"Failed to create RestNamespace: cannot build the context provider "
                                 f"{module}.{name}: {e}") from e
        self.context_provider = context_provider
        self.metrics = _common.OpsMetrics(_common.is_true(props.get("ops_metrics_enabled"), False))

    def namespace_id(self) -> str:
        return f"RestNamespace {{ endpoint: {json.dumps(self.endpoint)}, delimiter: {json.dumps(self.delimiter)} }}"

    def __repr__(self) -> str:
        return f"RestNamespace({self.namespace_id()})"

    def retrieve_ops_metrics(self) -> Dict[str, int]:
        return self.metrics.snapshot()

    def _call(self, route: Route, request: Any, data: Optional[bytes] = None) -> Any:
        self.metrics.count(route.operation)
        fields = _common.as_dict(request)
        parts = fields.get("id")
        if parts is None:
            raise _common.error(ns_errors.InvalidInputError, "Object ID is required")
        path = route.path.replace("{id}", encode_id(list(parts), self.delimiter))
        if "{index_name}" in path:
            path = path.replace("{index_name}", urllib.parse.quote(str(fields.get("index_name") or ""), safe=""))
        query = {"delimiter": self.delimiter}
        if route.operation == "list_tables":
            fields.setdefault("include_declared", True)
        for key in route.query:
            if fields.get(key) is not None:
                value = fields[key]
                query[key] = str(value).lower() if isinstance(value, bool) else str(value)
        url = f"{self.endpoint}/v1/{path}?{urllib.parse.urlencode(query)}"
        headers = dict(self.headers)
        body: Optional[bytes] = None
        if route.body == "json":
            body = json.dumps({k: v for k, v in _jsonable(fields).items() if v is not None}).encode()
            headers["Content-Type"] = "application/json"
        elif route.body == "arrow":
            body = data or b""
            headers["Content-Type"] = ARROW_STREAM
        headers.update(self._context(route.operation, list(parts)))
        reply = self._send(urllib.request.Request(url, data=body, method=route.method, headers=headers))
        if route.answer == "empty":
            return None
        if route.answer == "bytes":
            return reply
        answer = json.loads(reply) if reply else {}
        if route.answer == "int":
            return int(answer)
        response = model_class(route.operation, "Response")
        return response.from_dict(answer) if response is not None else answer

    def _context(self, operation: str, parts: List[str]) -> Dict[str, str]:
        if self.context_provider is None:
            return {}
        info = {"operation": operation, "object_id": self.delimiter.join(parts) if parts else self.delimiter}
        try:
            context = self.context_provider.provide_context(info) or {}
        except Exception:  # noqa: BLE001 - a failing provider must not fail the request (as pylance)
            return {}
        return {k[len("headers."):]: str(v) for k, v in context.items() if k.startswith("headers.")}

    def _send(self, request: urllib.request.Request) -> bytes:
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.read()
        except urllib.error.HTTPError as e:
            raise _error_from_response(e.code, e.read()) from None
        except urllib.error.URLError as e:
            raise _common.error(ns_errors.ServiceUnavailableError,
                                f"Failed to execute request to {self.endpoint}: {e.reason}") from None


def _error_from_response(status: int, body: bytes) -> ns_errors.LanceNamespaceError:
    try:
        parsed = json.loads(body)
        code, message = int(parsed["code"]), str(parsed["error"])
    except (ValueError, KeyError, TypeError):
        return _common.error(ns_errors.InternalError, f"HTTP {status}: {body[:200]!r}")
    kind = type(ns_errors.from_error_code(code, message))
    return _common.error(kind, message)


def _jsonable(fields: Dict[str, Any]) -> Dict[str, Any]:
    return json.loads(json.dumps(fields, default=str))


def _operation(route: Route) -> Callable[..., Any]:
    if route.body == "arrow":
        def call(self: RestNamespace, request: Any, request_data: Optional[bytes] = None) -> Any:
            return self._call(route, request, request_data)
    else:
        def call(self: RestNamespace, request: Any) -> Any:
            return self._call(route, request)
    call.__name__ = route.operation
    call.__doc__ = f"`{route.method} /v1/{route.path}` on the server."
    return call


for _route in ROUTES:
    setattr(RestNamespace, _route.operation, _operation(_route))
