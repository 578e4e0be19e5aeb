"""A local S3-compatible server (moto) behind a proxy that counts the requests it passes
and can delay each one, as a distant object store would, or fail some of them, as real
object stores do (`Faults`): what the request-count tests, the latency benchmark and the
fault tests measure both libraries against. Everything listens on 127.0.0.1."""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

CREDENTIALS = {"aws_access_key_id": "key", "aws_secret_access_key": "secret", "aws_region": "us-east-1",
               "allow_http": "true"}

# The kinds of fault `Faults` injects, and what each does to a request:
THROTTLE = "throttle"  # answered 503 SlowDown, not passed on
ERROR = "error"  # answered 500 InternalError, not passed on
LOST = "lost"  # writes only: passed on (the write happens), then answered 500 InternalError
RESET = "reset"  # passed on, then the connection reset without an answer (a write happens)
DROPPED = "dropped"  # the connection reset without an answer, the request not passed on
SLOW = "slow"  # answered after `slow_delay` seconds
TRUNCATED = "truncated"  # object reads only: half the body sent, then the connection closed
KINDS = (THROTTLE, ERROR, LOST, RESET, DROPPED, SLOW, TRUNCATED)

_S3_ERRORS = {
    THROTTLE: (503, "SlowDown", "Please reduce your request rate."),
    ERROR: (500, "InternalError", "We encountered an internal error. Please try again."),
    LOST: (500, "InternalError", "We encountered an internal error. Please try again."),
}


@dataclass
class Rule:
    """Inject `kind` into the next `times` requests of `method` whose path contains
    `path_part` (every method when None)."""

    kind: str
    method: Optional[str] = None
    path_part: str = ""
    times: int = 1


@dataclass
class Faults:
    """Which requests fail, and how: each request draws, with a generator seeded by `seed`,
    each kind's rate in turn (a kind that cannot apply to it is skipped); `rules` come
    first and fail exactly the requests they name. What was injected is kept in
    `injected` as (kind, method, path)."""

    seed: int = 0
    rates: Dict[str, float] = field(default_factory=dict)
    rules: List[Rule] = field(default_factory=list)
    slow_delay: float = 0.2
    injected: List[Tuple[str, str, str]] = field(default_factory=list)

    def __post_init__(self):
        unknown = set(self.rates) - set(KINDS)
        assert not unknown, f"unknown fault kinds {unknown}"
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def add(self, kind: str, method: Optional[str] = None, path_part: str = "", times: int = 1) -> "Faults":
        with self._lock:
            self.rules.append(Rule(kind, method, path_part, times))
        return self

    def pick(self, method: str, path: str, query: str) -> Optional[str]:
        """The fault for this request, if any (and record it)."""
        write = method in ("PUT", "POST", "DELETE")
        object_read = method == "GET" and not query.replace("x-id=GetObject", "").strip("&")

        def applies(kind: str) -> bool:
            return (kind != LOST or write) and (kind != TRUNCATED or object_read)

        with self._lock:
            kind = None
            for rule in self.rules:
                if rule.times > 0 and (rule.method in (None, method)) and rule.path_part in path \
                        and applies(rule.kind):
                    rule.times -= 1
                    kind = rule.kind
                    break
            if kind is None:
                for k in KINDS:
                    rate = self.rates.get(k, 0.0)
                    if rate and self._random.random() < rate and applies(k):
                        kind = k
                        break
            if kind is not None:
                self.injected.append((kind, method, path))
            return kind

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for k, _, _ in self.injected if k == kind)

    def kinds(self) -> set:
        """The kinds injected so far."""
        with self._lock:
            return {k for k, _, _ in self.injected}


def every_kind(seed: int) -> Faults:
    """Faults for a write: each kind at least once on requests every writer of a table
    makes (its first reads, its transaction file's write three times over, reading the
    latest manifest, which a new table has none of, and writing the new one), and about
    two requests in five failing at random besides."""
    rates = {THROTTLE: 0.1, ERROR: 0.05, LOST: 0.1, RESET: 0.05, DROPPED: 0.05, SLOW: 0.03, TRUNCATED: 0.1}
    faults = Faults(seed=seed, rates=rates, slow_delay=0.05)
    faults.add(THROTTLE, "GET", "/bucket").add(SLOW, "GET", "/bucket")
    faults.add(ERROR, "PUT", "/_transactions/").add(LOST, "PUT", "/_transactions/")
    faults.add(TRUNCATED, "GET", "/_versions/").add(DROPPED, "GET", "/_versions/")
    return faults.add(RESET, "PUT", "/_versions/")


class CountingProxy:
    """Forwards every request to `upstream` (host, port), recording (method, path, query, range),
    sleeping `delay` seconds before answering, and failing the requests `faults` picks.
    With `tls`, it speaks HTTPS with a self-signed certificate for 127.0.0.1."""

    def __init__(self, upstream: Tuple[str, int], delay: float = 0.0, faults: Optional[Faults] = None,
                 tls: bool = False):
        self.upstream, self.delay, self.faults, self.tls = upstream, delay, faults, tls
        self.requests: List[Tuple[str, str, str, str]] = []
        self.times: List[float] = []  # when each request arrived
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def _reset(self):
                """Close the connection with a TCP reset, answering nothing."""
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True

            def _answer_error(self, kind: str):
                status, code, message = _S3_ERRORS[kind]
                body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                        f'<Message>{message}</Message></Error>').encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path, _, query = self.path.partition("?")
                with proxy._lock:
                    proxy.requests.append((self.command, path, query, self.headers.get("Range", "")))
                    proxy.times.append(time.perf_counter())
                fault = proxy.faults.pick(self.command, path, query) if proxy.faults else None
                if proxy.delay:
                    time.sleep(proxy.delay)
                if fault in (THROTTLE, ERROR):
                    return self._answer_error(fault)
                if fault == DROPPED:
                    return self._reset()
                if fault == SLOW:
                    time.sleep(proxy.faults.slow_delay)
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fault == LOST:
                    return self._answer_error(fault)
                if fault == RESET:
                    return self._reset()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # A HEAD's answer has no body but says how long the object's is.
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if fault == TRUNCATED and len(data) > 1:
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    return self._reset()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls:
            self._server.socket = _self_signed_context().wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def options(self) -> Dict[str, str]:
        """Storage options reaching the bucket through this proxy."""
        opts = {"aws_endpoint": self.endpoint, **CREDENTIALS}
        if self.tls:
            del opts["allow_http"]
        return opts

    def take(self) -> List[Tuple[str, str, str, str]]:
        """The requests recorded since the last call."""
        with self._lock:
            out, self.requests = self.requests, []
        return out

    def close(self):
        self._server.shutdown()
        self._server.server_close()


def _self_signed_context():
    """A server-side TLS context with a fresh self-signed certificate for 127.0.0.1."""
    import datetime
    import ipaddress
    import os
    import ssl
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as d:
        cert_file, key_file = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        with open(cert_file, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_file, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


class S3Server:
    """moto on a free port with one bucket, `bucket`."""

    def __init__(self):
        import boto3
        import moto.server as moto_server

        self._srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
        self._srv.start()
        self.host, self.port = self._srv.get_host_and_port()
        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="key", aws_secret_access_key="secret",
                     region_name="us-east-1").create_bucket(Bucket="bucket")

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def options(self) -> Dict[str, str]:
        return {"aws_endpoint": self.endpoint, **CREDENTIALS}

    def upload(self, local_dir: str, prefix: str) -> str:
        """Copy the files under `local_dir` to `s3://bucket/<prefix>/`; returns that URI."""
        import os

        import boto3
        from concurrent.futures import ThreadPoolExecutor

        client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="key",
                              aws_secret_access_key="secret", region_name="us-east-1")
        files = [os.path.join(d, f) for d, _, fs in os.walk(local_dir) for f in fs]

        def put(path):
            key = f"{prefix}/{os.path.relpath(path, local_dir)}"
            client.upload_file(path, "bucket", key)

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, files))
        return f"s3://bucket/{prefix}"

    def proxy(self, delay: float = 0.0, faults: Optional[Faults] = None, tls: bool = False) -> CountingProxy:
        return CountingProxy((self.host, self.port), delay, faults, tls)

    def stop(self):
        self._srv.stop()
