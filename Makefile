# fiolake: `make demo` runs the main job end to end, `make test` runs the tests.
# Both install what they need (fio from Debian, a venv with the Python deps).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CACHE ?= $(HOME)/.cache/fiolake
# Python keeps its bytecode, and pytest its rewritten test modules, in __pycache__ even
# where the environment says not to (PYTHONDONTWRITEBYTECODE=1 on this workplace's
# machines): without them every test worker and every `python -m fiolake` a test starts
# compiles again (~8 % of `make test-fast`'s CPU: BENCHMARKS.md, its row).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help setup sysdeps fio venv minio demo test test-fast test-changed heavy-list screenshots lint-imports typecheck lint bench bench-gate bench-otava soak faults-repeat clean images wheels

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# Debian packages the project runs for real: fio (the benchmark), Chromium + ChromeDriver
# (the app's browser tests), faketime (skewed runner clocks), bubblewrap (the runner confined
# as its image confines it), docker-compose (validates compose.yaml; no engine needed),
# Java 17 (Spark, the outside engine the `spark` tier reads the lake with) and the container
# tier's engine: podman + buildah on runc (crun fails on this host's hybrid cgroups),
# mmdebstrap (the base image from Debian packages: no registry needed), uidmap,
# slirp4netns, fuse-overlayfs and catatonit (the pause process of `podman kube play` pods);
# xfsprogs and btrfs-progs: the file systems `run --mkfs` makes (and its tests on loop devices).
# The fio-version tier builds fio 3.28, 3.36 and 3.42 from source (tests/fio_versions.py):
# gcc, make and the headers of the libaio engine (the shipped profiles use it) and zlib.
# --no-install-recommends: docker-compose would otherwise pull in the Docker engine.
DEBS := fio chromium chromium-driver faketime bubblewrap docker-compose openjdk-17-jre-headless \
	podman buildah runc catatonit mmdebstrap uidmap slirp4netns fuse-overlayfs xfsprogs btrfs-progs \
	gcc make libaio-dev zlib1g-dev
DEB_CMDS := fio chromium chromedriver faketime bwrap docker-compose java \
	podman buildah runc catatonit mmdebstrap newuidmap slirp4netns fuse-overlayfs mkfs.xfs mkfs.btrfs \
	gcc make
# Headers are no commands: the files whose absence also means "install DEBS".
DEB_FILES := /usr/include/libaio.h /usr/include/zlib.h

fio: sysdeps
sysdeps: ## install the Debian packages above if any of their commands is missing
	@missing=; for c in $(DEB_CMDS); do command -v $$c >/dev/null || missing="$$missing $$c"; done; \
	for f in $(DEB_FILES); do [ -e $$f ] || missing="$$missing $$f"; done; \
	if [ -n "$$missing" ]; then \
	  echo "missing:$$missing — installing Debian packages: $(DEBS)" >&2; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO apt-get install -y -qq --no-install-recommends $(DEBS) >/dev/null; fi
	@fio --version

$(BIN)/fiolake: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,spark]'
	@touch $@

# fiolake is installed editable, so its modules have no bytecode until a first import
# writes it, and none ever where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines): every `fiolake` process then compiled the ~80 modules a question imports,
# ~0.1 s of the gate's ~1 s. compileall writes only what is stale (0.06 s when none is);
# Python still reads the bytecode with that variable set.
venv: $(BIN)/fiolake ## create .venv with fiolake and its dev deps; fiolake's bytecode compiled
	@$(BIN)/python -m compileall -q fiolake

# The MinIO build needs fiolake's own code and `requests` only, so it runs from a small
# venv of its own, beside the main venv's install: on a fresh 2-core machine the two took
# 80 s (pip, mostly downloads) and 120 s (Go compiling on both cores) one after the other.
GO_VENV := build/go-venv
$(GO_VENV)/bin/python:
	$(PY) -m venv $(GO_VENV)
	$(GO_VENV)/bin/pip install -q requests

minio: $(GO_VENV)/bin/python ## build the pinned MinIO from its Go module into ~/.cache/fiolake (once, ~3 min)
	PYTHONPATH=$(CURDIR) $(GO_VENV)/bin/python -c "import logging; \
	logging.basicConfig(level=logging.INFO); \
	from fiolake.stack.minio import ensure_minio; print(ensure_minio())"

setup: fio ## everything the demo and tests need: the venv and MinIO side by side
	@$(MAKE) --no-print-directory -j2 venv minio

# Containers: every podman/buildah call reads the one containers.conf the project writes
# (runtime runc, ulimits within the host's hard limits, host networking).
export CONTAINERS_CONF := $(CURDIR)/build/containers.conf

images: sysdeps venv ## podman images for compose.yaml and infra/k8s/, one per stage, from two cached Debian bases (no registry)
	CACHE=$(CACHE) PY=$(CURDIR)/$(BIN)/python bash infra/containers/images.sh
	@podman images --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep /fiolake-

wheels: venv ## build/wheels for `docker build -f infra/Dockerfile.X .` (the images install from them)
	CACHE=$(CACHE) PY=$(CURDIR)/$(BIN)/python IMAGES= bash infra/containers/images.sh

demo: setup ## the main job: run the default suite locally and show the summary
	bash infra/demo.sh

# The full tier on four workers (whole files per worker, the container and packaging tests
# on one, the fault histories apart, the long groups first: tests/scheduling.py); each
# worker starts its own MinIO + OpenBao when its first stack test needs them. Tests that
# time a start skew or decide a verdict from a few real fio runs are marked `alone`: they
# run after the rest, by themselves, where the other workers' load cannot blur them.
# `make test TEST_WORKERS=0` runs the main phase serially. mypy runs beside, as in test-fast.
TEST_WORKERS ?= 4
# Every test's CPU goes to build/test-cpu.tsv (tests/cpu_ledger.py); the run ends with
# the test files that cost most: on two cores, CPU over two bounds the wall time below.
test: setup lint lint-imports ## everything: lint, layers, types, then every tier
	@mkdir -p build; rm -f build/test-cpu.tsv; export PYTEST_CPU_LEDGER=$(CURDIR)/build/test-cpu.tsv; \
	$(BIN)/mypy > build/typecheck.log 2>&1 & mypy=$$!; \
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not alone"; tests=$$?; \
	$(BIN)/pytest -q -m alone || tests=1; \
	wait $$mypy; types=$$?; cat build/typecheck.log; \
	$(BIN)/python -m tests.cpu_ledger build/test-cpu.tsv 12 || true; \
	[ $$tests -eq 0 ] && [ $$types -eq 0 ]

# Three workers on two cores: the fast tier waits on fio's timers as much as it computes
# (quiet machine, 2026-11-25: 72 s with two workers, 61 s with three, 60 s with four).
# mypy runs beside pytest, not before it: cold (a fresh clone) it takes ~12 s of one core;
# both always finish, and the tier fails if either did. The full tier stays serial: each
# worker would start its own MinIO + OpenBao.
# Tiers by resource: SERVERLESS needs no server, browser, Spark or podman; FAST is the
# part of it within the CPU budget of tests/heavy.py (the `heavy` tests listed there are
# over it: real fio runs, mkfs, the app's pages). `make test` runs every tier.
SERVERLESS = not stack and not slow and not browser and not spark and not container
FAST = $(SERVERLESS) and not heavy
test-fast: fio venv lint lint-imports ## the fast tier: no MinIO, no OpenBao, no Go; typecheck beside it
	@mkdir -p build; $(BIN)/mypy > build/typecheck.log 2>&1 & mypy=$$!; \
	$(BIN)/pytest -q -n 3 --dist worksteal -m "$(FAST)"; tests=$$?; \
	wait $$mypy; types=$$?; cat build/typecheck.log; \
	[ $$tests -eq 0 ] && [ $$types -eq 0 ]

# Re-measure the fast tier's budget: every serverless test with the CPU ledger, then
# tests/heavy.txt gains those over the budget (tests/heavy.py). Run it twice after a big
# change: a module fixture is charged to the first test that uses it.
heavy-list: fio venv ## add the serverless tests over the fast tier's CPU budget to tests/heavy.txt
	@mkdir -p build; rm -f build/fast-cpu.tsv; \
	PYTEST_CPU_LEDGER=$(CURDIR)/build/fast-cpu.tsv $(BIN)/pytest -q -n 3 --dist worksteal -m "$(SERVERLESS)"; \
	$(BIN)/python -m tests.heavy build/fast-cpu.tsv

# The edit–test loop: the fast tier's tests that import (directly, lazily or through the
# CLI's command table) a module changed since BASE, plus last run's failures
# (tests/changed.py). `make test-changed BASE=main` for a branch.
BASE ?= HEAD
test-changed: fio venv ## the serverless tests (heavy ones too) the change since BASE (default HEAD) can reach, and the last failures
	@files=$$($(BIN)/python -m tests.changed $(BASE)) || exit 2; \
	if [ -z "$$files" ]; then echo "no test reaches the change since $(BASE)"; exit 0; fi; \
	[ "$$files" = "-" ] && files=; \
	echo "$$(echo $$files | wc -w) test files (none listed: all)" >&2; \
	$(BIN)/pytest -q -n 3 --dist worksteal -m "$(SERVERLESS)" $$files; rc=$$?; \
	[ $$rc -eq 5 ] && echo "the change reaches only tests that need a server (make test runs them)" && rc=0; exit $$rc

# Chromium from Debian (sysdeps), driven by Playwright's Python package (never its own
# browser download); the app runs on a lake written by real fio.
screenshots: fio venv ## the app in headless Chromium: browser tests, PNGs in build/test-artifacts/app/
	$(BIN)/pytest -q -m browser tests/app/test_browser.py

# The stage folders live in fiolake/ (the top-level names link to them), so the contract is checked on the tree itself.
lint-imports: venv ## import-linter's layer contracts (pyproject.toml), from the repo root
	$(BIN)/lint-imports --no-cache

typecheck: venv ## mypy: strict on the core (fiolake/*.py), normal on the stages and the CLI
	$(BIN)/mypy

lint: venv ## ruff
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup ## benchmarks under tests/bench (print their figures)
	for b in tests/bench/[a-z]*.py; do \
	  case $$b in *_vs_otava.py) continue;; esac; \
	  $(BIN)/python -m tests.bench.$$(basename $$b .py) || exit 1; done

bench-gate: setup ## gate false alarms and power on this machine: A/A nights with CPU hogs, throttled nights (~5 min)
	$(BIN)/python -m tests.bench.gate_aa

OTAVA_VENV ?= build/otava-venv
bench-otava: ## change points vs Apache Otava, in a throwaway venv (Otava's pins clash with ours)
	python3 -m venv $(OTAVA_VENV) && $(OTAVA_VENV)/bin/pip install -q apache-otava==0.8.0
	$(OTAVA_VENV)/bin/python tests/bench/changepoints_vs_otava.py

SOAK_MINUTES ?= 30
soak: setup ## the fault-injection history test for SOAK_MINUTES (default 30), with a summary table
	SOAK_MINUTES=$(SOAK_MINUTES) $(BIN)/python -m tests.faults.soak

N ?= 10
faults-repeat: setup ## the short-mode history test N times (default 10) with a table: the flake rate
	N=$(N) $(BIN)/python -m tests.faults.repeat

clean: ## remove the venv, build outputs and the demo lake
	rm -rf $(VENV) build lake demo-lake
