# Two commands do all the set-up on a fresh machine (Rust toolchain, Python 3.9+ and
# Java 17 present):
#
#   make main    builds lance_core into .venv and runs the main job (a Spark pipeline on local Spark)
#   make test    builds lance_core into .venv, checks formatting and lints (rustfmt, clippy,
#                ruff), then runs every test (cargo test, then pytest; a skipped test fails)
#
# `make wheel` builds a wheel (into dist/) that carries the JVM reader.
#
# `make bench` runs the benchmarks in benches/.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
SOURCES := $(shell find rust python protos java -type f -not -path '*/__pycache__/*' -not -name '*.so' -not -name '*.jar') Cargo.toml Cargo.lock pyproject.toml

.PHONY: setup main test lint test-rust test-python bench clean wheel

setup: $(VENV)/.installed

# maturin builds the Rust extension (release profile, cargo's progress shown) and installs
# it in editable mode with the test extras; `cargo test --release` then reuses the same
# compiled dependencies, so the workspace's dependencies are compiled once. java/build.sh
# then builds the JVM reader (the jar, against pyspark's jars, carrying the JNI library) into
# python/lance_core/jars/, where the editable install sees it and a wheel picks it up.
$(VENV)/.installed: $(SOURCES)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip 'maturin>=1.5,<2'
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release --extras tests
	java/build.sh $(PY) release
	touch $@

main: setup
	$(PY) examples/main_job.py

test: lint test-rust test-python

# Warnings are errors: the tree stays clean for rustfmt, clippy and ruff.
lint: setup
	cargo fmt --all --check
	cargo clippy --release --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples

test-rust: setup
	cargo test --release -p lance-core -p lance-core-jni

test-python: setup
	$(PY) -m pytest tests -q

bench: setup
	$(PY) benches/scan_bench.py
	$(PY) benches/write_bench.py
	$(PY) benches/spark_bench.py

wheel: setup
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin build --release --out dist

clean:
	rm -rf $(VENV) target benches/data .cache
