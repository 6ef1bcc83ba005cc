# Matchmaking targets (issue 6). Included by the top Makefile.
MM_FIGURES_DIR ?= .state

.PHONY: test-matchmaking bench-matchmaking

test-matchmaking: $(STAMP_DEV) ## matchmaking: 10,000 tickets (paid ones through a real scoring), 3 replicas, one killed; figures as one JSON line last
	@mkdir -p $(MM_FIGURES_DIR)
	$(PY) -m pytest -q --timeout=900 tests/matchmaking $(PYTEST_ARGS)
	MM_TICKETS=10000 MM_FIGURES=$(MM_FIGURES_DIR)/matchmaking-figures.json \
		$(PY) -m pytest -q --timeout=900 tests/matchmaking/test_replicas.py $(PYTEST_ARGS)
	@cat $(MM_FIGURES_DIR)/matchmaking-figures.json

bench-matchmaking: $(STAMP_DEV) ## matchmaking: tickets matched/s, p50/p99 wait, enqueue errors, leases lost at a steady arrival rate (one JSON line; BENCH_ARGS="--rate 60")
	PYTHONPATH=tests $(PY) tests/matchmaking/bench.py $(BENCH_ARGS)
