"""A Spark standalone cluster on this machine, as a user would start one with pyspark's own
`spark-class`: a master and one worker, on 127.0.0.1 and free ports, each a JVM of its
own; the worker starts executors in further JVMs, with their own Python workers. Stopped
by the pids it started (`spark-class` execs its JVM), within bounded waits."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from typing import List, Optional


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
