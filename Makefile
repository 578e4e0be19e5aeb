# Two commands do all the set-up on a fresh machine (Rust toolchain, Python 3.9+ and
# Java 17 present):
#
#   make main    builds lance_core into .venv and runs the main job (a Spark pipeline on local Spark)
#   make test    builds lance_core into .venv, checks formatting and lints (rustfmt, clippy,
#                ruff), then runs every test (cargo test, then pytest; a skipped test fails)
#
# `make wheel` builds a wheel (into dist/) that carries the JVM reader (release profile).
#
# `make bench` runs the benchmarks in benches/ on a release build. Each stage prints its time.
#
# `make docs` builds the documentation site (docs/, mkdocs.yml; the API reference from the
# docstrings) into site/, strictly: a broken link or an unreadable docstring fails it.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# The cargo profile of the extension, the JNI library and the Rust tests: `ci` (opt-level 1,
# no LTO) for the tests and the main job; `release` (thin LTO) for wheels and benchmarks.
# Without LTO the JNI library and the test binaries link the core and the dependencies the
# extension compiled, where LTO redoes a whole-program pass for each of them; and with one
# profile for all three (and the same features: .ci/same_features.py) nothing is compiled twice.
PROFILE ?= ci
STAMP := $(VENV)/.installed-$(PROFILE)
# In the `ci` profile clippy lints the workspace's crates while they are compiled: cargo runs
# clippy-driver in place of rustc for them (as `cargo clippy` does, but generating code), with
# warnings as errors. The extension's build lints the core and the binding, the JNI library's
# the JNI crate, `cargo test`'s the test targets: the lints of `cargo clippy --all-targets`
# without a second, check-only compile of every crate (which took 71 s). clippy-driver skips
# MIR optimizations (LLVM's still run), so `release` (wheels, benchmarks) compiles with rustc.
ifeq ($(PROFILE),ci)
export RUSTC_WORKSPACE_WRAPPER := $(shell rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
ifeq ($(RUSTC_WORKSPACE_WRAPPER),)
$(error clippy-driver not found: `rustup component add clippy`)
endif
else
unexport RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
endif
TIMED := .ci/timed
SOURCES := $(shell find rust python protos java -type f -not -path '*/__pycache__/*' -not -name '*.so' -not -name '*.jar') Cargo.toml Cargo.lock pyproject.toml

.PHONY: setup main test lint test-rust test-python bench clean wheel docs

setup: $(STAMP)

# maturin builds the Rust extension (cargo's progress shown) and installs it in editable mode
# with the test extras; java/build.sh then builds the JVM reader (the jar, against pyspark's
# jars, carrying the JNI library, which reuses the extension's compiled core) into
# python/lance_core/jars/, where the editable install sees it and a wheel picks it up.
#
# maturin installs the test extras first (pip, on one core, about 50 s) and compiles after;
# the JNI library, which shares the core and every dependency with the extension
# (.ci/same_features.py), compiles meanwhile on the other core, and maturin's cargo then
# waits for it and compiles only what the extension adds (pyo3, the binding).
$(STAMP): $(SOURCES)
	test -x $(PY) || python3 -m venv $(VENV)
	$(TIMED) "pip (maturin)" $(PY) -m pip install --quiet --upgrade pip 'maturin>=1.5,<2'
	cargo build --quiet --profile $(PROFILE) -p lance-core-jni & jni=$$!; \
	VIRTUAL_ENV=$(abspath $(VENV)) $(TIMED) "python extension ($(PROFILE)) and test extras" \
		$(VENV)/bin/maturin develop --profile $(PROFILE) --extras tests \
		|| { kill $$jni; exit 1; }; \
	wait $$jni
	$(TIMED) "jvm reader ($(PROFILE))" java/build.sh $(PY) $(PROFILE)
	rm -f $(VENV)/.installed-*
	touch $@

main: setup
	$(TIMED) "main job" $(PY) examples/main_job.py

# The site is built too, so that a docstring or link the docs cannot render fails CI.
test: lint docs test-rust test-python

# Warnings are errors: the tree stays clean for rustfmt, clippy (run by the builds `lint`
# and `test-rust` depend on, see RUSTC_WORKSPACE_WRAPPER above) and ruff; the core's modules
# import in the layers ARCHITECTURE.md lists, without circles (.ci/module_layers.py), and
# the Python package's modules too (import-linter's contract in pyproject.toml).
lint: setup
	cargo fmt --all --check
	python3 .ci/module_layers.py
	$(TIMED) "features (one build of the core)" python3 .ci/same_features.py
	$(VENV)/bin/ruff check python tests benches examples
	$(VENV)/bin/lint-imports

# The Rust tests compile the workspace's crates unoptimized (as plain `cargo test` does)
# against the profile's dependencies: the core is compiled again in test mode anyway, and
# at opt-level 0 that takes 33 s (60 s of CPU) instead of 89 s (160 s), while the tests
# run 21 s instead of 10 s. Only the workspace's crates: a dependency compiled at opt-level
# 0 exports its generic instances (Range::next, ...), which optimized crates then link
# instead of inlining their own (an IVF_PQ build ran 3x slower when sqlparser was at 0).
RUST_TEST_OPT_LEVEL := $(foreach p,lance-core lance-core-jni,--config 'profile.$(PROFILE).package.$(p).opt-level=0')
test-rust: setup
	$(TIMED) "cargo test" cargo test --profile $(PROFILE) -p lance-core -p lance-core-jni $(RUST_TEST_OPT_LEVEL)

# Two pytest workers (the machines have two cores; many tests wait on a JVM or a server);
# tests that share an expensive fixture are grouped onto one worker (xdist_group). Every
# JVM the tests start (Spark drivers, executors, a standalone cluster, Connect servers)
# compiles with C1 only and collects with the serial collector: the tests' Spark jobs are
# short, and C2's compiler threads and the parallel collector cost more CPU than they save
# there (measured on the Spark modules with -n 2: 99 s of CPU instead of 131 s).
TEST_JVM_OPTIONS := -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
test-python: setup
	JAVA_TOOL_OPTIONS="$(TEST_JVM_OPTIONS)" $(TIMED) pytest $(PY) -m pytest tests -q -n 2 --dist loadgroup

bench:
	$(MAKE) setup PROFILE=release
	$(PY) benches/scan_bench.py
	$(PY) benches/write_bench.py
	$(PY) benches/spark_bench.py

# The docs extra of pyproject.toml, installed on its own: mkdocstrings reads the sources
# statically, so the site needs neither the extension nor the JVM reader built.
DOCS_REQUIREMENTS := import sys; t = __import__("tomllib") if sys.version_info >= (3, 11) else \
	__import__("pip._vendor.tomli", fromlist=["loads"]); \
	print("\n".join(t.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]))
docs:
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -c '$(DOCS_REQUIREMENTS)' | xargs -d '\n' $(PY) -m pip install --quiet
	$(TIMED) "mkdocs" $(VENV)/bin/mkdocs build --strict --site-dir site

wheel:
	$(MAKE) setup PROFILE=release
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin build --release --out dist

clean:
	rm -rf $(VENV) target benches/data .cache site
