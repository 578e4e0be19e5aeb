#!/usr/bin/env python3
"""Fails when the builds of the workspace would compile the core twice.

The Python extension (maturin builds `-p lance-core-python`), the JNI library
(`-p lance-core-jni`) and the tests (`cargo test -p lance-core -p lance-core-jni`, with
dev-dependencies) are separate cargo runs, and cargo resolves features per run: when one
run turns on a feature of a crate the core depends on, that crate, everything above it and
the core itself are compiled again. This asks `cargo tree` for the features each run
resolves and lists every crate the runs share whose features differ; the fix is to ask for
the feature in rust/core/Cargo.toml (see its comment) so that every run resolves it.
"""

import subprocess
import sys
from collections import defaultdict

RUNS = {
    "the Python extension": ["-p", "lance-core-python", "-e", "features,normal,build"],
    "the JNI library": ["-p", "lance-core-jni", "-e", "features,normal,build"],
    "the tests": ["-p", "lance-core", "-p", "lance-core-jni", "-e", "features,normal,build,dev"],
}
OWN = ("lance-core",)  # the workspace's crates differ by design
# The core's dev-dependencies are compiled for the tests alone (next to their build-time copy
# when a build script also uses them): an extra feature set of theirs compiles nothing twice.
TEST_ONLY = {"proptest", "rand", "tempfile"}


def resolved(args):
    done = subprocess.run(
        ["cargo", "tree", "--locked", "--prefix", "none", "-f", "{p} {f}", *args],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"cargo tree {' '.join(args)} failed:\n{done.stderr}")
    out = done.stdout
    crates = defaultdict(set)
    for line in out.splitlines():
        line = line.replace(" (*)", "").replace(" (proc-macro)", "")
        parts = line.split()
        if len(parts) < 2 or parts[0].startswith(OWN) or not parts[1].startswith("v"):
            continue
        crates[(parts[0], parts[1])].add(" ".join(parts[2:]) or "(none)")
    return crates


def main():
    runs = {name: resolved(args) for name, args in RUNS.items()}
    names = list(runs)
    problems = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = runs[first], runs[second]
            for crate in sorted(a.keys() & b.keys()):
                if a[crate] == b[crate]:
                    continue
                if crate[0] in TEST_ONLY and second == "the tests" and a[crate] <= b[crate]:
                    continue
                problems.append(
                    f"{crate[0]} {crate[1]}: {first} resolves {sorted(a[crate])}, "
                    f"{second} {sorted(b[crate])}"
                )
    if problems:
        print("the core would be compiled more than once; features differ:", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        return 1
    print(f"one build of the core serves {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
