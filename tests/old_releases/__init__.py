"""Datasets written by old pylance releases, generated on demand and cached.

`build()` installs each release with `pip install --no-deps --target <cache>/pylance/<v>`
(a wheel unpack, no environment per release) and runs `write.py` with the test
interpreter and `PYTHONPATH=<that dir>`, so `import lance` is the old release while
pyarrow/numpy are the interpreter's own: every release used here writes the same datasets
on today's pyarrow/numpy as on the ones of its time. Only if a run fails that way is it
redone in one venv with the old pins (numpy<2, pyarrow 14.0.2, which all of them accept).

Cache: `$LANCE_CORE_TEST_CACHE` or `<repo>/.cache/old_pylance/`:
    data-<hash>/<release>/<name>.lance, data-<hash>/migrated/<name>.lance  (~1 MB)
    logs/                  what pip and each release printed during the last build
The hash covers this file and write.py, so editing either regenerates the data. The
releases (pylance/<version>/, ~470 MB) and the pinned venv (~200 MB) are kept only until
a build succeeds: regenerating everything takes ~15 s (pip's download cache helps where
the index allows caching), so keeping them would buy little.
Run `python tests/old_releases/__init__.py` to build the cache outside pytest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
WRITE = HERE / "write.py"

# (release, [(dataset, action)]): one process per job, actions in order. A job starts
# when its release is installed and the job named in AFTER has finished.
JOBS = {
    "0.7.5": [
        ("0.7.5/basic", "basic"),
        ("0.7.5/types", "types"),
        ("migrated/v0.7.5_with_deletions", "w075"),
        ("migrated/v0.8.0_migrated_from_v0.7.5", "w075"),
        ("migrated/v0.8.0_migrated_multi", "w075_multi"),
    ],
    # 0.8.0 .. 0.8.12 commit to a 0.7.5 table with physical_rows = rows after deletions
    # and still no writer_version.
    "0.8.0": [
        ("migrated/v0.8.0_migrated_from_v0.7.5", "append2"),
        ("migrated/v0.8.0_migrated_multi", "delete50"),
        ("migrated/v0.8.0_migrated_multi", "append2_multi"),
    ],
    "0.13.0": [
        ("0.13.0/types_v2", "types_v2"),
        ("0.13.0/strings_v2", "strings_v2"),
        ("0.13.0/empty_v2", "empty_v2"),
        ("0.13.0/basic_v2", "basic_v2"),
    ],
    "0.14.1": [("0.14.1/types_v2", "types_v2"), ("0.14.1/strings_v2", "strings_v2")],
    "0.16.1": [
        ("0.16.1/wrong_version_can_fix", "wrong_version_can_fix"),
        ("0.16.1/wrong_version_no_fix", "wrong_version_no_fix"),
    ],
    "0.30.0": [("0.30.0/types_dsvlegacy", "types_dsvlegacy"), ("0.30.0/basic_dsvlegacy", "basic_dsvlegacy")],
}
AFTER = {"0.8.0": "0.7.5"}
DATASETS = sorted({name for steps in JOBS.values() for name, _ in steps})

PINNED = ["numpy<2", "pyarrow==14.0.2"]
# pip's stderr when the index cannot be reached (or has no wheel for this platform).
UNREACHABLE = ("from versions: none", "NewConnectionError", "NameResolutionError", "ConnectTimeout",
               "Max retries exceeded", "Network is unreachable", "ProxyError", "Temporary failure in name resolution",
               "No module named pip")


class Unavailable(Exception):
    """The releases cannot be installed here (no package index): tests skip."""


def cache_dir() -> Path:
    return Path(os.environ.get("LANCE_CORE_TEST_CACHE") or REPO / ".cache" / "old_pylance")


def scripts_hash() -> str:
    h = hashlib.sha256()
    for p in (Path(__file__).resolve(), WRITE):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _run(cmd, log: Path, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, cmd))}\n{r.stdout}{r.stderr}\n")
    return r


def _pip(args, log: Path):
    """`pip <args>` with the test interpreter's pip (its download cache is reused)."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args, "--retries", "1", "--timeout", "60"]
    r = _run(cmd, log)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-3:])
        if any(s in r.stderr for s in UNREACHABLE):
            raise Unavailable(f"cannot install from the package index: {tail}")
        raise RuntimeError(f"pip {' '.join(args)} failed (log {log}):\n{r.stderr[-3000:]}")


def install(version: str, root: Path, log: Path) -> Path:
    target = root / "pylance" / version
    if (target / ".complete").exists():
        return target
    tmp = target.with_name(f"{version}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    _pip(["install", "--quiet", "--no-deps", "--no-compile", "--target", str(tmp), f"pylance=={version}"], log)
    (tmp / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def pinned_python(root: Path, log: Path) -> str:
    venv = root / "pinned-venv"
    py = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        r = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], log)
        if r.returncode != 0:
            raise RuntimeError(f"python -m venv failed: {r.stderr[-2000:]}")
        _pip(["--python", str(py), "install", "--quiet", *PINNED], log)
        (venv / ".complete").touch()
    return str(py)


def _generate(out: Path, python: str, pkgs: dict, logs: Path):
    """Run every job (in parallel where AFTER allows); raise on the first failure."""
    env = {**os.environ, "RUST_BACKTRACE": "0", "PYTHONNOUSERSITE": "1"}

    def job(release, steps):
        args = [f"{name}={action}" for name, action in steps]
        r = _run([python, str(WRITE), str(out), *args], logs / f"write-{release}.log",
                 env={**env, "PYTHONPATH": str(pkgs[release])})
        if r.returncode != 0:
            raise RuntimeError(f"pylance {release} ({python}) failed:\n{r.stdout[-1000:]}{r.stderr[-3000:]}")

    with ThreadPoolExecutor(len(JOBS)) as pool:
        done = {}
        for release in [r for r in JOBS if r not in AFTER] + [r for r in JOBS if r in AFTER]:
            dep = done.get(AFTER.get(release))
            done[release] = pool.submit(lambda r=release, d=dep: (d.result() if d else None, job(r, JOBS[r])))
        for f in done.values():
            f.result()


@contextlib.contextmanager
def _locked(root: Path):
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # concurrent pytest runs share one build
        yield


def build() -> Path:
    """The data directory (`<dir>/<dataset>.lance` for every name in DATASETS), generated
    unless it is already cached. Raises Unavailable when the releases cannot be installed."""
    root = cache_dir()
    data = root / f"data-{scripts_hash()}"
    if (data / ".complete").exists():
        return data
    with _locked(root):
        if (data / ".complete").exists():
            return data
        start = time.monotonic()
        logs = root / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        with ThreadPoolExecutor(len(JOBS)) as pool:  # unpacking is I/O + one core each
            futures = {v: pool.submit(install, v, root, logs / f"install-{v}.log") for v in JOBS}
            pkgs = {v: f.result() for v, f in futures.items()}
        installed = time.monotonic() - start
        tmp = root / f"tmp-data-{os.getpid()}"
        # LANCE_CORE_OLD_PYLANCE_PINNED=1 skips the first attempt (to check the fallback).
        attempts = ["pinned"] if os.environ.get("LANCE_CORE_OLD_PYLANCE_PINNED") else ["host", "pinned"]
        errors = []
        for mode in attempts:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            try:
                python = sys.executable if mode == "host" else pinned_python(root, logs / "pinned-venv.log")
                _generate(tmp, python, pkgs, logs)
                break
            except (RuntimeError, Unavailable) as e:
                errors.append(f"[{mode}] {e}")
        else:
            raise RuntimeError("generating the old-release datasets failed:\n" + "\n".join(errors))
        info = {"mode": mode, "install_s": round(installed, 1), "total_s": round(time.monotonic() - start, 1),
                "datasets": DATASETS}
        (tmp / "build.json").write_text(json.dumps(info, indent=1))
        (tmp / ".complete").touch()
        for old in [*root.glob("data-*"), root / "pylance", root / "pinned-venv"]:
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(data)
        return data


if __name__ == "__main__":
    d = build()
    print(d, (d / "build.json").read_text())
