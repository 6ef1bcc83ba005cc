# Scoring targets (issue 8): tests, the wallet fault run, the consumer benchmark.
# Included by the top Makefile; `make help` lists every target with a `## ` comment.
PY ?= .venv/bin/python
PYTEST_ARGS ?=
FAULT_TABLES ?= 1000
FAULT_KILLS ?= 20
FAULT_SEED ?= 8
BENCH_TABLES ?= 300

.PHONY: test-scoring fault-wallet bench-scoring

test-scoring: ## scoring tests: real nats-server and gRPC on loopback, CI-sized fault run (100 tables, 5 kills)
	$(PY) -m pytest -q --timeout=300 tests/scoring $(PYTEST_ARGS)

fault-wallet: ## 1,000 paid tables while the scoring service is killed >= 20 times; last line: one JSON summary
	PYTHONPATH=tests $(PY) tests/scoring/fault_wallet.py --tables $(FAULT_TABLES) --kills $(FAULT_KILLS) --seed $(FAULT_SEED)

bench-scoring: ## scoring consumer benchmark: prints events consumed per second (one JSON line)
	PYTHONPATH=tests $(PY) tests/scoring/bench_scoring.py --tables $(BENCH_TABLES)
