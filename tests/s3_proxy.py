"""A local S3-compatible server (moto) behind a proxy that counts the requests it passes
and can delay each one, as a distant object store would: what the request-count tests
and the latency benchmark measure both libraries against. Everything listens on
127.0.0.1."""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Tuple

CREDENTIALS = {"aws_access_key_id": "key", "aws_secret_access_key": "secret", "aws_region": "us-east-1",
               "allow_http": "true"}


class CountingProxy:
    """Forwards every request to `upstream` (host, port), recording (method, path, query, range)
    and sleeping `delay` seconds before answering."""

    def __init__(self, upstream: Tuple[str, int], delay: float = 0.0):
        self.upstream, self.delay = upstream, delay
        self.requests: List[Tuple[str, str, str, str]] = []
        self.times: List[float] = []  # when each request arrived
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                path, _, query = self.path.partition("?")
                with proxy._lock:
                    proxy.requests.append((self.command, path, query, self.headers.get("Range", "")))
                    proxy.times.append(time.perf_counter())
                if proxy.delay:
                    time.sleep(proxy.delay)
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def options(self) -> Dict[str, str]:
        """Storage options reaching the bucket through this proxy."""
        return {"aws_endpoint": self.endpoint, **CREDENTIALS}

    def take(self) -> List[Tuple[str, str, str, str]]:
        """The requests recorded since the last call."""
        with self._lock:
            out, self.requests = self.requests, []
        return out

    def close(self):
        self._server.shutdown()
        self._server.server_close()


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

    def proxy(self, delay: float = 0.0) -> CountingProxy:
        return CountingProxy((self.host, self.port), delay)

    def stop(self):
        self._srv.stop()
