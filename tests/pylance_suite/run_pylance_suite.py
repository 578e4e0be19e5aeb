#!/usr/bin/env python
"""Run pylance's own Python test suite against pylance and against lance_core.

A developer script, not part of CI (pytest of our suite collects nothing here). It
exports `python/python/tests` (and `python/pyproject.toml`, pylance's pytest settings)
from a Lance source checkout or git mirror into a temporary directory, runs each test
file there twice, with pylance (unchanged) and with lance_core behind lance_shim.py (a
name map only: `import lance` gives lance_core), and reports, per file, how many of the
tests that pass with pylance also pass with lance_core, and the commonest reasons why
not.

    .venv/bin/python tests/pylance_suite/run_pylance_suite.py                 # everything
    .venv/bin/python tests/pylance_suite/run_pylance_suite.py --scope headline
    .venv/bin/python tests/pylance_suite/run_pylance_suite.py --files test_dataset.py test_fragment.py
    .venv/bin/python tests/pylance_suite/run_pylance_suite.py --baseline /tmp/pylance_suite.json  # reuse pylance's results
    .venv/bin/python tests/pylance_suite/run_pylance_suite.py --report-from /tmp/pylance_suite.json

What is counted:
- headline: tests of the files not listed in EXCLUDED_FILES, whose names have none of
  EXCLUDED_KEYWORDS (indices, vectors, blobs, full-text search: reported apart), that
  pass with pylance; the percentage is the share of those that also pass with lance_core.
- excluded: the same counts for those files and tests, reported but not in the headline.
- not run: files that need software that is not installed, the network, or that start
  interpreters the shim cannot reach (NOT_RUN, DEPENDS_ON, SHIM_BYPASS).

Each file runs in its own pytest process (nice'd, one at a time unless --jobs), with
pytest-timeout's per-test limit when it is installed, and a watchdog that kills a
process that reports nothing for a while; the test it was running is counted as hung,
and the file is run again without it. Outcomes come from suite_recorder.py (a plugin
that streams each report, so a crash loses nothing); each run also writes --junitxml
files beside them for a human to read.

Needs, beyond the project's test extras: pytest-timeout (per-test limit), and for
pylance's tests polars, duckdb, ml_dtypes (pip install them into the venv; they are not
project dependencies).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_SOURCE = "/work/.mirror/Sherlock999xxx+lance/repo"
TESTS = "python/python/tests"
TARGETS = ("pylance", "lance_core")
EXTRA_PATHS = ["python/pyproject.toml", "test_data"]

# Files about indices, blobs, the file API and full-text search: run and reported, not in the headline.
EXCLUDED_FILES = {
    "test_vector_index.py": "vector index",
    "test_scalar_index.py": "scalar index / full-text search",
    "test_indices.py": "index building",
    "test_blob.py": "blobs",
    "test_file.py": "file API (lance.file)",
    "test_hnsw.py": "vector index",
    "test_kmeans.py": "vector index",
    "test_ivf_centroids.py": "vector index",
    "test_vector.py": "vector index",
    "test_create_empty_index.py": "index",
    "test_commit_index.py": "index",
}
# Inside the other files, a test whose name (class, function or parameters), split into
# words, has one of these is excluded as well.
EXCLUDED_KEYWORDS = {
    "index", "indices", "indexes", "indexed", "reindex", "fts", "vector", "vectors", "blob", "blobs",
    "nearest", "ann", "knn", "ivf", "pq", "sq", "hnsw", "inverted", "ngram", "btree", "bitmap", "zonemap",
    "bloomfilter", "fulltext", "tokenizer", "label_list", "labellist", "full_text", "zone_map", "bloom_filter",
}
# Files never run, and why.
NOT_RUN = {
    "test_s3_ddb.py": "needs S3 and DynamoDB (network)",
    "test_namespace_integration.py": "needs S3 (network)",
    "test_memory_leaks.py": "memory-leak soak test",
    "test_tracing.py": "starts interpreters with a replaced environment: the shim cannot reach them",
    "compat/": "upgrade/downgrade compatibility: installs old pylance releases into virtualenvs (network)",
    "recurring/": "recurring soak test on 1M rows (a scheduled job in pylance's CI)",
}
# Files that need modules which may be missing: not run when one is.
DEPENDS_ON = {
    "test_torch.py": ["torch"],
    "torch_tests/": ["torch"],
    "test_f16.py": ["torch"],
    "test_tf.py": ["tensorflow"],
    "test_huggingface.py": ["datasets", "PIL"],
    "test_geo.py": ["geoarrow.rust.core"],
    "test_table_provider.py": ["datafusion"],
    "test_dataset.py": ["polars"],
    "test_arrow.py": ["ml_dtypes"],
    "test_integration.py": ["duckdb"],
    "test_memory.py": ["memtest"],
}
# Tests deselected in both runs: they start an interpreter with a replaced environment,
# which would import pylance itself, whatever the shim.
SHIM_BYPASS = {
    "test_log.py": ["test_lance_log_file", "test_lance_log_file_with_directory_creation",
                    "test_lance_log_file_invalid_path", "test_timestamp_precision"],
}

# An import error from a lance_core extension being rebuilt meanwhile: wait and run the file again.
HALF_WRITTEN_SO = re.compile(r"_lance_core.*(file too short|invalid ELF|undefined symbol|cannot open shared object|"
                             r"No such file|not a dynamic executable)|(file too short|invalid ELF header).*_lance_core",
                             re.S)


# ---------------------------------------------------------------------------------------
# Classification


def _rel(nodeid: str) -> str:
    """'python/tests/sub/test_x.py::T::t[p]' -> 'sub/test_x.py'."""
    path = nodeid.split("::", 1)[0]
    prefix = "python/tests/"
    return path[len(prefix):] if path.startswith(prefix) else path


def _matches(rel: str, key: str) -> bool:
    return rel.startswith(key) if key.endswith("/") else rel == key


def not_run_reason(rel: str) -> Optional[str]:
    for key, reason in NOT_RUN.items():
        if _matches(rel, key):
            return reason
    for key, modules in DEPENDS_ON.items():
        if _matches(rel, key):
            missing = [m for m in modules if not _importable(m)]
            if missing:
                return f"needs {', '.join(missing)} (not installed)"
    return None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def file_category(rel: str) -> Optional[str]:
    return EXCLUDED_FILES.get(Path(rel).name)


def _words(text: str) -> List[str]:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)  # CamelCase -> Camel_Case
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def keyword_hit(nodeid: str) -> Optional[str]:
    """The excluded keyword in a test's name (class, function, parameters), if any."""
    name = nodeid.split("::", 1)[1] if "::" in nodeid else ""
    words = _words(name)
    joined = "_" + "_".join(words) + "_"
    for word in words:
        if word in EXCLUDED_KEYWORDS:
            return word
    for keyword in EXCLUDED_KEYWORDS:
        if "_" in keyword and f"_{keyword}_" in joined:
            return keyword
    return None


# ---------------------------------------------------------------------------------------
# Export


def export_tests(source: str, rev: str, dest: Path) -> str:
    """Copies the tests, pylance's pyproject.toml (its pytest settings) and the repository's
    test_data/ (old datasets some tests open) into dest; returns what was exported."""
    src = Path(source)
    dest.mkdir(parents=True, exist_ok=True)
    if (src / TESTS).is_dir():  # a checkout with a work tree: take it as it is
        shutil.copytree(src / TESTS, dest / TESTS)
        for extra in EXTRA_PATHS:
            if (src / extra).is_dir():
                shutil.copytree(src / extra, dest / extra)
            elif (src / extra).exists():
                shutil.copy2(src / extra, dest / extra)
        return f"{src} (work tree)"
    git = ["git", "-C", str(src)]
    commit = subprocess.run(git + ["rev-parse", rev], check=True, capture_output=True, text=True).stdout.strip()
    paths = [TESTS] + [extra for extra in EXTRA_PATHS
                       if subprocess.run(git + ["cat-file", "-e", f"{commit}:{extra}"], capture_output=True).returncode
                       == 0]
    archive = subprocess.Popen(git + ["archive", commit] + paths, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    archive.stdout.close()
    if archive.wait() != 0:
        raise SystemExit(f"git archive failed in {src}")
    when = subprocess.run(git + ["show", "-s", "--format=%cd", "--date=short", commit], capture_output=True,
                          text=True).stdout.strip()
    return f"{src} @ {commit[:12]} ({when})"


def list_test_files(root: Path) -> List[str]:
    tests = root / TESTS
    return sorted(str(p.relative_to(tests)) for p in tests.rglob("test_*.py"))


# ---------------------------------------------------------------------------------------
# Running one file


class FileRun:
    """Runs one test file in one target, again without the tests that hung or crashed."""

    def __init__(self, args, target: str, root: Path, work: Path, rel: str, env: Dict[str, str]):
        self.args, self.target, self.root, self.rel = args, target, root, rel
        safe = rel.replace("/", "__")
        self.record = work / "records" / target / f"{safe}.jsonl"
        self.env = dict(env, PYLANCE_SUITE_RECORD=str(self.record))
        self.junit = work / "junit" / target / f"{safe}.xml"
        self.basetemp = work / "basetemp" / target / safe
        self.record.parent.mkdir(parents=True, exist_ok=True)
        self.junit.parent.mkdir(parents=True, exist_ok=True)
        self.basetemp.parent.mkdir(parents=True, exist_ok=True)
        self.killed: Dict[str, str] = {}  # nodeid -> "hung ..." / "crashed ..."
        self.attempts = 0
        self.leftovers = 0  # processes of the run (forked by tests) still there when pytest exited

    def command(self) -> List[str]:
        cmd = ["nice", "-n", str(self.args.nice)] if self.args.nice else []
        python = self.args.shim_python if self.target == "lance_core" else self.args.python
        cmd += [python, "-m", "pytest", f"python/tests/{self.rel}", "-q", "-p", "no:cacheprovider",
                "-p", "suite_recorder", f"--junitxml={self.junit}", f"--basetemp={self.basetemp}",
                "-o", "junit_family=xunit1"]
        if self.args.timeout and _importable("pytest_timeout"):
            cmd += [f"--timeout={self.args.timeout}", "--timeout-method=signal"]
        for name in SHIM_BYPASS.get(self.rel, []):
            cmd += ["--deselect", f"python/tests/{self.rel}::{name}"]
        for nodeid in self.killed:
            cmd += ["--deselect", nodeid]
        return cmd

    def run(self) -> dict:
        started = time.monotonic()
        if self.record.exists():
            self.record.unlink()
        so_retries = 0
        while True:
            self.attempts += 1
            status = self._run_once()
            records = _read_records(self.record)
            collect = [r for r in records if r["event"] == "collect"]
            if collect and any(HALF_WRITTEN_SO.search(r.get("message", "")) for r in collect) \
                    and so_retries < self.args.so_retries:
                so_retries += 1
                print(f"    [{self.target}] {self.rel}: lance_core's extension failed to load (being rebuilt?); "
                      f"retrying in 30 s", flush=True)
                time.sleep(30)
                self.record.unlink()
                continue
            if status is None:
                break
            # Killed (stall) or crashed: the test that was running is blamed, the others run again.
            running = _running_test(records)
            if running is None or running in self.killed or len(self.killed) >= self.args.max_kills:
                self.killed.setdefault(running or f"python/tests/{self.rel}", status)
                break
            self.killed[running] = status
            print(f"    [{self.target}] {running}: {status}; running the file again without it", flush=True)
            self.record.rename(self.record.with_suffix(f".{self.attempts}.jsonl"))
        shutil.rmtree(self.basetemp, ignore_errors=True)
        if self.leftovers:
            print(f"    [{self.target}] {self.rel}: {self.leftovers} process(es) forked by the tests were still "
                  f"running when pytest exited (killed)", flush=True)
        return {"seconds": round(time.monotonic() - started, 1), "attempts": self.attempts,
                "leftover_processes": self.leftovers}

    def _run_once(self) -> Optional[str]:
        """None when pytest finished; else why it did not (stall or crash)."""
        last_size, last_change = -1, time.monotonic()
        proc = subprocess.Popen(self.command(), cwd=self.root / "python", env=self.env, start_new_session=True,
                                stdout=subprocess.DEVNULL if not self.args.verbose else None,
                                stderr=subprocess.DEVNULL if not self.args.verbose else None)
        stall = self.args.stall or (self.args.timeout + 120)
        while True:
            try:
                code = proc.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                pass
            size = self.record.stat().st_size if self.record.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > stall:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return f"hung (no report for {stall} s; killed)"
        # Processes a test forked (os.fork, multiprocessing) and left behind share pytest's process group.
        time.sleep(0.5)
        left = _group_members(proc.pid)
        if left:
            self.leftovers += len(left)
            os.killpg(proc.pid, signal.SIGKILL)
        records = _read_records(self.record)
        if any(r["event"] == "finish" for r in records):
            return None
        return f"crashed (pytest exited with {code} before the end)"


def _group_members(pgid: int) -> List[int]:
    """The live processes of a process group (Linux /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _read_records(path: Path) -> List[dict]:
    records = []
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line cut by a kill
    return records


def _running_test(records: List[dict]) -> Optional[str]:
    done = {r["nodeid"] for r in records if r["event"] == "report" and r["when"] == "teardown"}
    started = [r["nodeid"] for r in records if r["event"] == "start"]
    pending = [n for n in started if n not in done]
    return pending[-1] if pending else None


def outcomes(record_files: List[Path], killed: Dict[str, str]) -> Tuple[Dict[str, dict], List[str], dict]:
    """Per test: its outcome and the failure message; the collection errors; the session facts."""
    tests: Dict[str, dict] = {}
    collect_errors: List[str] = []
    session = {"pylance_leaks": []}
    for path in record_files:
        for r in _read_records(path):
            if r["event"] == "collect":
                collect_errors.append(f"{r['nodeid']}: {r['message']}")
            elif r["event"] == "finish":
                session["pylance_leaks"] = sorted(set(session["pylance_leaks"]) | set(r.get("pylance_leaks", [])))
            elif r["event"] == "report":
                t = tests.setdefault(r["nodeid"], {"outcome": "passed", "message": ""})
                if r["outcome"] == "failed" and t["outcome"] != "failed":
                    t["outcome"], t["message"] = "failed", (f"[{r['when']}] " if r["when"] != "call" else "") + \
                        r["message"]
                elif r["outcome"] == "skipped" and t["outcome"] == "passed":
                    t["outcome"], t["message"] = ("xfailed" if r["xfail"] else "skipped"), r["message"]
                elif r["outcome"] == "passed" and r["when"] == "call" and r["xfail"]:
                    t["outcome"] = "xpassed"
    for nodeid, why in killed.items():
        if "::" in nodeid:
            tests[nodeid] = {"outcome": "failed", "message": f"{why}"}
        else:
            collect_errors.append(f"{nodeid}: {why}")
    return tests, collect_errors, session


# ---------------------------------------------------------------------------------------
# The runs


def environment(work: Path, target: str, pylance_dir: str) -> Dict[str, str]:
    plugins = work / "plugins"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "PYTHONPATH"}
    path = [str(plugins)]
    if target == "lance_core":
        path.insert(0, str(work / "shim"))
    env.update({
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYLANCE_SUITE_TARGET": target,
        "PYLANCE_SUITE_PYLANCE_DIR": pylance_dir,
        # No test may reach the network.
        "AWS_EC2_METADATA_DISABLED": "true",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    })
    return env


def prepare_plugins(work: Path) -> None:
    (work / "plugins").mkdir(parents=True, exist_ok=True)
    shutil.copy2(HERE / "suite_recorder.py", work / "plugins" / "suite_recorder.py")
    (work / "shim").mkdir(parents=True, exist_ok=True)
    shutil.copy2(HERE / "lance_shim.py", work / "shim" / "lance_shim.py")
    # Every interpreter started with this PYTHONPATH (pytest, and the processes its tests spawn
    # with the environment they inherit) maps `lance` to lance_core before anything imports it.
    (work / "shim" / "sitecustomize.py").write_text("import lance_shim\n\nlance_shim.install()\n")


def shim_interpreter(work: Path, python: str) -> str:
    """The interpreter of the lance_core runs: a venv whose site-packages has a .pth file
    that adds `python`'s packages and installs the shim. Every process a test starts with
    `sys.executable` maps `lance` to lance_core, even with an environment of its own (no
    PYTHONPATH), so no test can pass because pylance itself ran in a subprocess."""
    venv = work / "shim_venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    ask = "import json, site, sys; print(json.dumps(site.getsitepackages()))"
    packages = json.loads(subprocess.run([python, "-c", ask], check=True, capture_output=True, text=True).stdout)
    exe = str(venv / "bin" / "python")
    own = json.loads(subprocess.run([exe, "-c", ask], check=True, capture_output=True, text=True).stdout)[0]
    line = (f"import site, sys; list(map(site.addsitedir, {packages!r})); "
            f"sys.path[:0] = [{str(work / 'shim')!r}, {str(work / 'plugins')!r}]; "
            "import lance_shim; lance_shim.install()\n")
    (Path(own) / "zz_lance_shim.pth").write_text(line)
    return exe


def run_all(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="pylance_suite_", dir=args.tmp))
    print(f"work directory: {work}", flush=True)
    prepare_plugins(work)
    args.shim_python = shim_interpreter(work, args.python) if "lance_core" in args.targets else args.python
    roots = {}
    source_desc = ""
    for target in args.targets:
        roots[target] = work / target
        source_desc = export_tests(args.source, args.rev, roots[target])
    files = list_test_files(next(iter(roots.values())))
    if args.files:
        wanted = [f.removeprefix(TESTS + "/").removeprefix("python/tests/") for f in args.files]
        files = [f for f in files if any(f == w or f.startswith(w.rstrip("/") + "/") for w in wanted)]
        if not files:
            raise SystemExit(f"no test file matches {args.files}")
    baseline = json.loads(Path(args.baseline).read_text())["files"] if args.baseline else {}

    spec = importlib.util.find_spec("lance")
    pylance_dir = str(Path(spec.origin).parent) if spec and spec.origin else ""
    result = {
        "source": source_desc, "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [sys.executable] + sys.argv),
        "versions": versions(), "timeout": args.timeout, "files": {}, "seconds": {t: 0.0 for t in TARGETS},
    }
    plan = []
    for rel in files:
        entry = {"category": file_category(rel), "not_run": not_run_reason(rel), "runs": {}}
        result["files"][rel] = entry
        if entry["not_run"]:
            continue
        if args.scope == "headline" and entry["category"]:
            entry["not_run"] = "excluded file, not run (--scope headline)"
            continue
        plan.append(rel)
    plan.sort(key=lambda rel: (bool(result["files"][rel]["category"]), rel))  # the headline first
    if "lance_core" in args.targets:
        result["blockers"] = import_blockers(roots["lance_core"], plan, work, args.shim_python)

    lock = threading.Lock()

    def one(rel: str) -> None:
        for target in args.targets:
            if target == "pylance" and rel in baseline and "pylance" in baseline[rel].get("runs", {}):
                with lock:
                    result["files"][rel]["runs"]["pylance"] = dict(baseline[rel]["runs"]["pylance"], reused=True)
                continue
            run = FileRun(args, target, roots[target], work, rel, environment(work, target, pylance_dir))
            facts = run.run()
            # The last attempt ran every test but those killed before (earlier attempts are kept beside it).
            tests, collect_errors, session = outcomes([run.record], run.killed)
            counts = collections.Counter(t["outcome"] for t in tests.values())
            with lock:
                result["files"][rel]["runs"][target] = dict(facts, tests=tests, collect_errors=collect_errors,
                                                            **session)
                result["seconds"][target] += facts["seconds"]
                summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test"
                extra = f"; collection errors: {len(collect_errors)}" if collect_errors else ""
                leak = f"; PYLANCE LEAKED: {session['pylance_leaks'][:3]}" if session["pylance_leaks"] else ""
                print(f"  [{target:10}] {rel}: {summary}{extra}{leak} ({facts['seconds']} s)", flush=True)
                save_json(result, args.json)

    print(f"{len(plan)} files to run ({len(files) - len(plan)} not run), targets: {', '.join(args.targets)}",
          flush=True)
    if args.jobs > 1:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, plan))
    else:
        for rel in plan:
            one(rel)
    result["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    result["versions_after"] = versions()
    save_json(result, args.json)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def blockers_for(result: dict, args) -> Dict[str, Dict[str, str]]:
    """import_blockers for a run saved without them (the tests exported again from --source)."""
    work = Path(tempfile.mkdtemp(prefix="pylance_suite_", dir=args.tmp))
    try:
        prepare_plugins(work)
        export_tests(args.source, args.rev, work / "lance_core")
        files = [rel for rel, e in result["files"].items() if not e.get("not_run")
                 and (work / "lance_core" / TESTS / rel).exists()]
        return import_blockers(work / "lance_core", files, work, args.python)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def versions() -> dict:
    code = ("import json, os, importlib.metadata as m, importlib.util as u\n"
            "s = u.find_spec('lance_core._lance_core')\n"
            "print(json.dumps({'pylance': m.version('pylance'), 'lance_core': m.version('lance_core'),\n"
            "  'lance_core_so': s.origin if s else None,\n"
            "  'lance_core_so_mtime': os.path.getmtime(s.origin) if s else None}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    try:
        facts = json.loads(out.stdout)
    except json.JSONDecodeError:
        return {"error": out.stderr[-500:]}
    if facts.get("lance_core_so_mtime"):
        facts["lance_core_so_mtime"] = datetime.datetime.fromtimestamp(facts["lance_core_so_mtime"]).isoformat(
            timespec="seconds")
    return facts


def save_json(result: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(result, out, indent=1, sort_keys=True)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------
# Names imported at the top of the test files


_CHECK_IMPORTS = """
import importlib, json, sys
out = {}
for module, name in json.load(sys.stdin):
    key = module + (":" + name if name else "")
    try:
        found = importlib.import_module(module)
        if name and not hasattr(found, name):  # as `from module import name` does
            try:
                importlib.import_module(module + "." + name)
            except ModuleNotFoundError:
                raise ImportError(f"cannot import name {name!r} from {module!r}") from None
        out[key] = ""
    except Exception as exc:
        out[key] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""


def top_level_imports(path: Path) -> List[Tuple[str, str]]:
    """The (module, name) pairs a test file imports from `lance` at module level: one that
    fails makes the whole file fail to import."""
    import ast

    pairs: List[Tuple[str, str]] = []
    seen = {path}

    def lance(module: str) -> bool:
        return module == "lance" or module.startswith("lance.")

    def local(module: str) -> None:  # a helper module beside the tests (e.g. helper.py): its imports count too
        helper = path.parent / f"{module.replace('.', '/')}.py"
        if helper.exists() and helper not in seen:
            seen.add(helper)
            visit(ast.parse(helper.read_text(encoding="utf-8")).body)

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                pairs.extend((a.name, "") for a in node.names if lance(a.name))
                for a in node.names:
                    local(a.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if lance(node.module):
                    pairs.extend((node.module, a.name) for a in node.names)
                else:
                    local(node.module)
            elif isinstance(node, ast.If):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return pairs


def import_blockers(root: Path, files: List[str], work: Path, python: str) -> Dict[str, Dict[str, str]]:
    """Per file, each module-level `lance` import that fails with lance_core behind the shim,
    and its error (all of them, where a collection error shows only the first)."""
    per_file = {rel: top_level_imports(root / TESTS / rel) for rel in files}
    pairs = sorted({pair for pairs in per_file.values() for pair in pairs})
    out = subprocess.run([python, "-c", _CHECK_IMPORTS], input=json.dumps(pairs), capture_output=True, text=True,
                         env=environment(work, "lance_core", ""), cwd=str(work))
    try:
        errors = json.loads(out.stdout)
    except json.JSONDecodeError:
        print(f"warning: could not check the imports: {out.stderr[-500:]}", flush=True)
        return {}
    blockers = {}
    for rel, file_pairs in per_file.items():
        failing = {}
        for module, name in file_pairs:
            key = module + (":" + name if name else "")
            if errors.get(key):
                failing[f"{module}.{name}" if name else module] = errors[key]
        if failing:
            blockers[rel] = failing
    return blockers


# ---------------------------------------------------------------------------------------
# The report


_RAISED = re.compile(r"^E\s+((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)\b.*)")


def reason(message: str) -> str:
    """A failure message reduced to what groups alike failures: its first line, without
    paths, addresses and long literals."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    text = lines[0] if lines else "(no message)"
    if text.count("'") % 2:  # a quoted value (a filter, a path) that goes on over lines
        text = " ".join(lines[:3])
    # A collection error is a traceback: its exception is the last "E   SomeError: ..." line.
    raised = [m.group(1) for m in (_RAISED.match(ln) for ln in lines) if m]
    if raised:
        text = raised[-1]
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    text = re.sub(r"(/tmp|/work|/root|file://)[^\s'\",)]*", "<path>", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>", text)
    text = re.sub(r"\s+", " ", text)
    return text[:160] + ("…" if len(text) > 160 else "")


def analyse(result: dict) -> dict:
    """Per file and overall: the tests passing with pylance, and of those with lance_core."""
    rows, reasons, reasons_excluded = [], collections.Counter(), collections.Counter()
    total = {"headline": [0, 0], "excluded": [0, 0]}
    only_lance_core = []
    for rel, entry in sorted(result["files"].items()):
        runs = entry.get("runs", {})
        if entry.get("not_run") or "pylance" not in runs or "lance_core" not in runs:
            continue
        base, ours = runs["pylance"]["tests"], runs["lance_core"]["tests"]
        collect = runs["lance_core"]["collect_errors"]
        row = {"file": rel, "category": entry["category"], "headline": [0, 0], "excluded": [0, 0],
               "pylance_total": len(base), "collect_error": reason(collect[0].split(": ", 1)[-1]) if collect else "",
               "leaks": runs["lance_core"].get("pylance_leaks", [])}
        left = runs["lance_core"].get("leftover_processes", 0) - runs["pylance"].get("leftover_processes", 0)
        if left > 0:
            row["collect_error"] = (row["collect_error"] + " " if row["collect_error"] else "") + \
                f"⚠ {left} process(es) forked by the tests still running at the end (see below)"
        for nodeid, t in base.items():
            if t["outcome"] != "passed":
                continue
            kind = "excluded" if entry["category"] or keyword_hit(nodeid) else "headline"
            mine = ours.get(nodeid)
            passed = bool(mine and mine["outcome"] == "passed")
            row[kind][0] += 1
            row[kind][1] += passed
            if not passed:
                if mine is None:
                    why = (reason(collect[0].split(": ", 1)[-1]) if collect else "not collected with lance_core")
                    why = why if why.startswith("not collected") or not collect else f"(collection) {why}"
                else:
                    why = reason(mine["message"]) if mine["outcome"] == "failed" else f"({mine['outcome']}) " + \
                        reason(mine["message"])
                (reasons if kind == "headline" else reasons_excluded)[why] += 1
        for nodeid, t in ours.items():
            if t["outcome"] == "passed" and base.get(nodeid, {}).get("outcome") != "passed":
                only_lance_core.append(f"{nodeid} (pylance: {base.get(nodeid, {}).get('outcome', 'absent')})")
        for kind in total:
            total[kind][0] += row[kind][0]
            total[kind][1] += row[kind][1]
        rows.append(row)
    return {"rows": rows, "total": total, "reasons": reasons, "reasons_excluded": reasons_excluded,
            "only_lance_core": only_lance_core}


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f}%" if b else "–"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def markdown(result: dict, top: int) -> str:
    a = analyse(result)
    h, x = a["total"]["headline"], a["total"]["excluded"]
    v = result.get("versions", {})
    out = [
        "# pylance's test suite against lance_core",
        "",
        "Generated by `tests/pylance_suite/run_pylance_suite.py` (a developer script, not CI); do not edit by hand.",
        "",
        f"- tests from: {result['source']}",
        f"- pylance {v.get('pylance')}; lance_core {v.get('lance_core')} "
        f"(extension built {v.get('lance_core_so_mtime')})",
        f"- run: {result['started']} – {result.get('finished', '(unfinished)')}; pylance run "
        f"{_minutes(result['seconds'].get('pylance', 0))}, lance_core run "
        f"{_minutes(result['seconds'].get('lance_core', 0))}; per-test timeout {result['timeout']} s",
        f"- command: `{result['command']}`",
        "",
        f"**Headline: {h[1]} of the {h[0]} tests that pass with pylance also pass with lance_core: "
        f"{_pct(h[1], h[0])}.** (Excluded — indices, vectors, blobs, file API, full-text search: "
        f"{x[1]} of {x[0]}, {_pct(x[1], x[0])}.)",
        "",
        "A test counts when it passes with pylance 14.0.2 (tests newer than that release may fail there too, "
        "and are left out). With lance_core, `import lance` is `lance_core` behind `lance_shim.py`, a map of "
        "module names only: a name lance_core lacks stays missing, so a file that imports one at the top fails "
        "whole (its tests count as failed, for the collection error shown).",
        "",
        "## Per file (headline)",
        "",
        "Tests whose names mention indices, vectors, blobs or full-text search are counted apart "
        "(the excluded columns).",
        "",
        "| file | pass with pylance | also with lance_core | % | excluded: pylance | excluded: lance_core "
        "| lance_core collection error |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in a["rows"]:
        if row["category"]:
            continue
        hh, xx = row["headline"], row["excluded"]
        out.append(f"| {row['file']} | {hh[0]} | {hh[1]} | {_pct(hh[1], hh[0])} | {xx[0]} | {xx[1]} | "
                   f"{_md(row['collect_error'])} |")
    out += [f"| **total** | **{h[0]}** | **{h[1]}** | **{_pct(h[1], h[0])}** | | | |", ""]
    excluded_rows = [row for row in a["rows"] if row["category"]]
    if excluded_rows:
        out += ["## Excluded files (not in the headline)", "",
                "| file | about | pass with pylance | also with lance_core | % | lance_core collection error |",
                "| --- | --- | ---: | ---: | ---: | --- |"]
        for row in excluded_rows:
            xx = row["excluded"]
            out.append(f"| {row['file']} | {row['category']} | {xx[0]} | {xx[1]} | {_pct(xx[1], xx[0])} | "
                       f"{_md(row['collect_error'])} |")
        out.append("")
    out += [f"## Top {top} reasons why a headline test fails with lance_core", "",
            "Counted over the headline tests that pass with pylance and not with lance_core. "
            "\"(collection)\" is an error importing the test file: it fails all of that file's tests.", "",
            "| tests | reason |", "| ---: | --- |"]
    out += [f"| {n} | {_md(why)} |" for why, n in a["reasons"].most_common(top)]
    out.append("")
    if a["reasons_excluded"]:
        out += ["## Top 10 reasons in the excluded tests", "", "| tests | reason |", "| ---: | --- |"]
        out += [f"| {n} | {_md(why)} |" for why, n in a["reasons_excluded"].most_common(10)]
        out.append("")
    out += blockers_section(result, a)
    not_run = [(rel, e["not_run"]) for rel, e in sorted(result["files"].items()) if e.get("not_run")]
    unfinished = [rel for rel, e in sorted(result["files"].items())
                  if not e.get("not_run") and len(e.get("runs", {})) < 2]
    out += ["## Not run", "", "| file | why |", "| --- | --- |"]
    out += [f"| {rel} | {_md(why)} |" for rel, why in not_run]
    out += [f"| {rel} | the run did not reach it |" for rel in unfinished]
    for rel, names in SHIM_BYPASS.items():
        out.append(f"| {rel}: {', '.join(names)} | start interpreters with a replaced environment (the shim "
                   "cannot reach them); deselected in both runs |")
    out.append("")
    left = [(rel, e["runs"]["lance_core"].get("leftover_processes", 0), e["runs"].get("pylance", {})
             .get("leftover_processes", 0)) for rel, e in sorted(result["files"].items())
            if e.get("runs", {}).get("lance_core", {}).get("leftover_processes")]
    if left:
        out += ["Processes forked by tests and still running when pytest exited (killed; the test itself "
                "may still count as passed, since pytest does not wait for them):", ""]
        out += [f"- {rel}: {n} with lance_core ({m} with pylance)" for rel, n, m in left]
        out.append("")
    leaks = [row["file"] for row in a["rows"] if row["leaks"]]
    if leaks:
        out += [f"**Warning: pylance itself was imported in the lance_core run of: {', '.join(leaks)}.**", ""]
    if a["only_lance_core"]:
        out += [f"## Passing with lance_core, not with pylance ({len(a['only_lance_core'])})", ""]
        out += [f"- `{n}`" for n in a["only_lance_core"][:30]]
        if len(a["only_lance_core"]) > 30:
            out.append(f"- … and {len(a['only_lance_core']) - 30} more")
        out.append("")
    return "\n".join(out)


def blockers_section(result: dict, a: dict) -> List[str]:
    """Missing names imported at the top of test files: each alone fails its files whole."""
    blockers = result.get("blockers") or {}
    if not blockers:
        return []
    weight = {row["file"]: row["headline"][0] for row in a["rows"]}
    excluded = {row["file"]: row["excluded"][0] for row in a["rows"]}
    names: Dict[str, dict] = {}
    for rel, failing in blockers.items():
        for name, error in failing.items():
            entry = names.setdefault(name, {"error": error, "files": [], "tests": 0, "excluded": 0})
            entry["files"].append(rel)
            entry["tests"] += weight.get(rel, 0)
            entry["excluded"] += excluded.get(rel, 0)
    out = ["## Names lance_core lacks that test files import at the top", "",
           "Each one alone keeps every test of the files that import it from running (a collection error "
           "shows only the first). \"tests\" counts the headline tests passing with pylance in those files "
           "(excluded ones in brackets); files that lack several names are counted under each.", "",
           "| name | tests | files | error with lance_core |", "| --- | ---: | --- | --- |"]
    for name, e in sorted(names.items(), key=lambda kv: (-kv[1]["tests"], -kv[1]["excluded"], kv[0])):
        out.append(f"| `{name}` | {e['tests']} ({e['excluded']}) | {', '.join(sorted(e['files']))} | "
                   f"{_md(reason(e['error']))} |")
    unblocked = [row for row in a["rows"] if row["file"] not in blockers and not row["category"]]
    held, passing = sum(r["headline"][0] for r in unblocked), sum(r["headline"][1] for r in unblocked)
    out += ["", f"The headline files with no such import ({len(unblocked)}) hold {held} of the "
            f"{a['total']['headline'][0]} headline tests; {passing} of those pass with lance_core "
            f"({_pct(passing, held)}).", ""]
    return out


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help="a Lance source checkout (its work tree is used) or git directory (default: %(default)s)")
    parser.add_argument("--rev", default="HEAD", help="the commit to export from a git directory (default: HEAD)")
    parser.add_argument("--files", nargs="+", help="only these test files (paths under python/python/tests, "
                        "e.g. test_dataset.py or torch_tests/)")
    parser.add_argument("--scope", choices=["all", "headline"], default="all",
                        help="headline: do not run the excluded files (indices, blobs, file API)")
    parser.add_argument("--targets", default="pylance,lance_core", help="comma-separated: pylance,lance_core")
    parser.add_argument("--baseline", help="a previous --json: reuse its pylance results instead of running pylance")
    parser.add_argument("--timeout", type=int, default=180, help="per-test limit in seconds (default: %(default)s)")
    parser.add_argument("--stall", type=int, default=0,
                        help="kill a pytest process that reports nothing for this long (default: timeout + 120 s)")
    parser.add_argument("--max-kills", type=int, default=5, help="hung or crashed tests per file before giving up")
    parser.add_argument("--so-retries", type=int, default=3,
                        help="runs again of a file whose lance_core extension failed to load (being rebuilt)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at a time (default: 1)")
    parser.add_argument("--nice", type=int, default=10, help="niceness of the pytest processes (default: 10)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"), help="the markdown report (default: %(default)s)")
    parser.add_argument("--json", default="/tmp/pylance_suite.json", help="the raw results (default: %(default)s)")
    parser.add_argument("--top", type=int, default=25, help="failure reasons listed (default: %(default)s)")
    parser.add_argument("--report-from", help="write the report from a previous --json, running nothing")
    parser.add_argument("--tmp", default=None, help="where the work directory goes (default: the system's)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (records, junit xml)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    args = parser.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    if any(t not in TARGETS for t in args.targets):
        parser.error(f"--targets: one of {TARGETS}")

    if args.report_from:
        result = json.loads(Path(args.report_from).read_text())
        if "blockers" not in result:
            result["blockers"] = blockers_for(result, args)
    else:
        result = run_all(args)
    Path(args.out).write_text(markdown(result, args.top) + "\n", encoding="utf-8")
    h = analyse(result)["total"]["headline"]
    print(f"headline: {h[1]} / {h[0]} = {_pct(h[1], h[0])}; report: {args.out}; raw: "
          f"{args.report_from or args.json}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
