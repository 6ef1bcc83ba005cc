# Timers targets (issue 7). Included by the top Makefile.
.PHONY: test-timers bench-timers

test-timers: ## timers tests: injected-clock deadlines, restart, replicas, real games (real NATS, gRPC, C engine)
	$(PY) -m pytest -q --timeout=300 -p no:cacheprovider tests/timers $(PYTEST_ARGS)

bench-timers: ## timers bench: deadline firing lateness and throughput on a real NATS (prints figures)
	$(PY) -m pytest -q -s --timeout=300 -p no:cacheprovider tests/timers/bench_timers.py $(PYTEST_ARGS)
