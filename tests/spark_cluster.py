"""Spark away from the tests' own session, as users run it: a standalone cluster on this
machine started with pyspark's own `spark-class` (`StandaloneCluster`: a master and one
worker, each a JVM of its own; the worker starts executors in further JVMs, with their own
Python workers), a Spark Connect server (`ConnectServer`), and driver processes of
`spark_steps.py` against either (`steps_in_a_driver`). Everything listens on 127.0.0.1 and
free ports, is stopped by the pids it started (`spark-class` and `spark-submit` exec their
JVM), and waits a bounded time."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


class StandaloneCluster:
    """`with StandaloneCluster() as c: ... c.url ...` (spark://127.0.0.1:<port>)."""

    def __init__(self, cores: int = 2, memory: str = "2g", start_timeout: float = 90):
        self.dir = tempfile.mkdtemp(prefix="lance-core-cluster-")
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self._procs: List[subprocess.Popen] = []
        env = dict(os.environ, SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_LOG_DIR=self.dir, SPARK_WORKER_DIR=os.path.join(self.dir, "work"))
        try:
            self._start(env, "master", "org.apache.spark.deploy.master.Master",
                        "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(free_port()))
            self._wait("master", "Starting Spark master", start_timeout)
            self._start(env, "worker", "org.apache.spark.deploy.worker.Worker", self.url,
                        "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                        "--webui-port", str(free_port()), "--work-dir", env["SPARK_WORKER_DIR"])
            self._wait("master", "Registering worker", start_timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, env, name: str, main_class: str, *args: str) -> None:
        log = open(os.path.join(self.dir, f"{name}.log"), "w")
        self._procs.append(subprocess.Popen([os.path.join(spark_home(), "bin", "spark-class"), main_class, *args],
                                            env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL))

    def log(self, name: str) -> str:
        with open(os.path.join(self.dir, f"{name}.log")) as f:
            return f.read()

    def _wait(self, name: str, line: str, timeout: float) -> None:
        end = time.monotonic() + timeout
        while line not in self.log(name):
            dead = [p for p in self._procs if p.poll() is not None]
            if dead or time.monotonic() > end:
                raise RuntimeError(f"the Spark {name} did not log {line!r}: " + self.log(name)[-3000:])
            time.sleep(0.2)

    def executor_logs(self) -> str:
        """What the executors wrote (stderr and stdout of every application's)."""
        out = []
        for root, _, files in os.walk(os.path.join(self.dir, "work")):
            for f in files:
                if f in ("stderr", "stdout"):
                    with open(os.path.join(root, f), errors="replace") as fh:
                        out.append(f"== {root}/{f}\n{fh.read()}")
        return "\n".join(out)

    def stop(self) -> None:
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self._procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)
        self._procs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self

    def __exit__(self, *exc) -> Optional[bool]:
        self.stop()
        return None


class ConnectServer:
    """`with ConnectServer() as s: ... s.url ...` (sc://127.0.0.1:<port>): a Spark Connect
    server in `local[2]` with lance_core's JVM reader, started as docs/spark.md says
    (`lance_core.spark.connect_server_command`); its Python workers run this interpreter."""

    def __init__(self, start_timeout: float = 120):
        import lance_core.spark

        self.dir = tempfile.mkdtemp(prefix="lance-core-connect-")
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        command = lance_core.spark.connect_server_command(self.port, "127.0.0.1", "local[2]",
                                                          {"spark.ui.enabled": "false"})
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
        self._log = os.path.join(self.dir, "server.log")
        self._proc = subprocess.Popen(command, env=env, stdout=open(self._log, "w"), stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        end = time.monotonic() + start_timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > end:
                    self.stop()
                    raise RuntimeError("the Spark Connect server did not start: " + self.log()[-3000:]) from None
                time.sleep(0.3)

    def log(self) -> str:
        with open(self._log, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=30)

    def __enter__(self) -> "ConnectServer":
        return self

    def __exit__(self, *exc) -> Optional[bool]:
        self.stop()
        return None


def drive(args: List[str], env: Optional[dict] = None, cwd=None, logs: Callable[[], str] = str,
          timeout: float = 600) -> str:
    """Run a driver process (this interpreter, `args`; in `cwd`); its output, or a test
    failure with its output and what `logs()` tells (the executors' logs)."""
    # The driver binds to and tells executors 127.0.0.1 (SPARK_LOCAL_IP), as the cluster does.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    run = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    if run.returncode != 0:
        pytest.fail(f"the driver failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}\nlogs:\n{logs()[-6000:]}")
    return run.stdout


def steps_in_a_driver(where: List[str], work, env: Optional[dict] = None, cwd=None,
                      logs: Callable[[], str] = str) -> dict:
    """`spark_steps.py`'s answers from a driver process run with `where` (`--master url`,
    `--remote url`, `--archives ...`), working in `work`."""
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "answers.json")
    drive([os.path.join(HERE, "spark_steps.py"), *where, "--work", str(work), "--out", out], env, cwd, logs)
    with open(out) as f:
        return json.load(f)
