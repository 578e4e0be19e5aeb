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
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
# The cargo profile of the extension, the JNI library and the Rust tests: `ci` (optimized,
# no LTO) for the tests and the main job; `release` (thin LTO) for wheels and benchmarks.
# Without LTO the JNI library and the test binaries link the core and the dependencies the
# extension compiled, where LTO redoes a whole-program pass for each of them; and with one
# profile for all three (and the same features: .ci/same_features.py) nothing is compiled twice.
PROFILE ?= ci
STAMP := $(VENV)/.installed-$(PROFILE)
TIMED := .ci/timed
SOURCES := $(shell find rust python protos java -type f -not -path '*/__pycache__/*' -not -name '*.so' -not -name '*.jar') Cargo.toml Cargo.lock pyproject.toml

.PHONY: setup main test lint test-rust test-python bench clean wheel

setup: $(STAMP)

# maturin builds the Rust extension (cargo's progress shown) and installs it in editable mode
# with the test extras; java/build.sh then builds the JVM reader (the jar, against pyspark's
# jars, carrying the JNI library, which reuses the extension's compiled core) into
# python/lance_core/jars/, where the editable install sees it and a wheel picks it up.
$(STAMP): $(SOURCES)
	test -x $(PY) || python3 -m venv $(VENV)
	$(TIMED) "pip (maturin)" $(PY) -m pip install --quiet --upgrade pip 'maturin>=1.5,<2'
	VIRTUAL_ENV=$(abspath $(VENV)) $(TIMED) "python extension ($(PROFILE)) and test extras" \
		$(VENV)/bin/maturin develop --profile $(PROFILE) --extras tests
	$(TIMED) "jvm reader ($(PROFILE))" java/build.sh $(PY) $(PROFILE)
	rm -f $(VENV)/.installed-*
	touch $@

main: setup
	$(TIMED) "main job" $(PY) examples/main_job.py

test: lint test-rust test-python

# Warnings are errors: the tree stays clean for rustfmt, clippy and ruff; the core's modules
# import in the layers ARCHITECTURE.md lists, without circles (.ci/module_layers.py), and
# the Python package's modules too (import-linter's contract in pyproject.toml).
lint: setup
	cargo fmt --all --check
	python3 .ci/module_layers.py
	$(TIMED) "features (one build of the core)" python3 .ci/same_features.py
	$(TIMED) clippy cargo clippy --profile $(PROFILE) --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples
	$(VENV)/bin/lint-imports

test-rust: setup
	$(TIMED) "cargo test" cargo test --profile $(PROFILE) -p lance-core -p lance-core-jni

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

wheel:
	$(MAKE) setup PROFILE=release
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin build --release --out dist

clean:
	rm -rf $(VENV) target benches/data .cache
