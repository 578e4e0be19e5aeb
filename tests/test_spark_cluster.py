"""lance_core on a Spark standalone cluster (`spark_cluster.StandaloneCluster`: a master
and a worker on 127.0.0.1, executors in JVMs of their own), driven as a user would: the
session built with `lance_core.spark.session(builder)` and nothing else. Every step of
`spark_steps.run` gives the same answers as in `local[*]` with the workers sharing this
Python environment; the reads and writes do with the environment shipped as an archive
(`spark.archives`, as on YARN and Kubernetes); the main job runs there too."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile

import pytest

from spark_cluster import StandaloneCluster, drive, steps_in_a_driver

# With pytest -n, one worker runs both modules that compare with `local_answers`, which then
# is computed once.
pytestmark = pytest.mark.xdist_group("local_answers")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def cluster():
    with StandaloneCluster() as c:
        yield c


def test_every_step_answers_as_in_local_mode(cluster, local_answers, tmp_path):
    assert steps_in_a_driver(["--master", cluster.url], tmp_path, logs=cluster.executor_logs) == local_answers


def test_with_the_environment_shipped_as_an_archive(cluster, local_answers, tmp_path):
    """Executors run `./env/bin/python` from `spark.archives` (a slim venv: lance_core,
    pyarrow, pandas, numpy; pyspark comes from the worker's Spark, as on a cluster). Spark
    starts the Python data source's planning on the driver with that same relative path, so
    the driver runs where the archive is unpacked too, as YARN's and Kubernetes' cluster
    mode run it."""
    archive = _slim_venv(tmp_path)
    driver = tmp_path / "driver"
    driver.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(driver / "env", filter="tar")
    env = {"PYSPARK_PYTHON": "./env/bin/python"}
    answers = steps_in_a_driver(["--master", cluster.url, "--archives", f"{archive}#env", "--only-reads-and-writes"],
                                tmp_path / "work", env, driver, cluster.executor_logs)
    assert answers == {k: local_answers[k] for k in answers} and "read_fragments" in answers
    # Each executor unpacked the archive in its own directory (and ran ./env/bin/python).
    unpacked = [root for root, dirs, _ in os.walk(os.path.join(cluster.dir, "work")) if "env" in dirs
                and os.path.exists(os.path.join(root, "env", "bin", "python"))]
    assert unpacked, "no executor unpacked the environment"


def test_the_main_job_runs_on_the_cluster(cluster, tmp_path):
    out = drive([os.path.join(ROOT, "examples", "main_job.py"), "--master", cluster.url,
                 "--rows", "20000", "--rows-per-fragment", "5000", "--stream-batches", "2",
                 "--stream-rows-per-batch", "1000", "--dir", str(tmp_path)], logs=cluster.executor_logs)
    assert f"starting Spark ({cluster.url})" in out and "done in" in out, out


def _slim_venv(tmp_path) -> str:
    """A venv holding lance_core and what it imports, packed as `env.tar.gz` (which Spark
    unpacks with `tar`, keeping links and modes; a plain `.tar` it unpacks itself, without
    either): its python a link to this interpreter's base (the same machine), its packages
    copied."""
    import lance_core
    import numpy
    import pandas
    import pyarrow

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    site = env / os.path.relpath(sysconfig.get_paths()["purelib"], sysconfig.get_paths()["data"])
    packages = [os.path.dirname(m.__file__) for m in (lance_core, numpy, pandas, pyarrow)]
    here = os.path.dirname(packages[1])
    # What pandas needs at import, and the compiled libraries numpy's wheel keeps apart.
    extra = [n for n in ("dateutil", "pytz", "tzdata", "six.py", "numpy.libs", "pandas.libs", "pyarrow.libs")
             if os.path.exists(os.path.join(here, n))]
    archive = str(tmp_path / "env.tar.gz")
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for child in os.listdir(env):  # no "./" entry: Spark refuses to unpack one
            tar.add(str(env / child), arcname=child)
        for path in packages + [os.path.join(here, n) for n in extra]:
            name = os.path.basename(path)
            tar.add(path, arcname=os.path.join(os.path.relpath(str(site), str(env)), name),
                    filter=lambda t: None if t.name.endswith((".pyc", "/jars")) or "/jars/" in t.name
                    or "/tests" in t.name else t)
    return archive
