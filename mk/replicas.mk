# Table replicas targets (issue 5): leases, routing, failover. Included by the top Makefile.
PY ?= .venv/bin/python

.PHONY: test-replicas fault-replicas fault-tables rebalance-tables bench-tables
test-replicas: ## table replicas: lease plan, startup fair share, CI SIGKILL fault run (3 kills), SIGSTOP/SIGCONT owner, SIGTERM handover, and (not in CI) a 64-table rebalance; bound 12 s, the make targets below assert 5 s
	@start=$$(date +%s); \
	$(PY) -m pytest -q -p no:cacheprovider tests/replicas; rc=$$?; \
	echo "test-replicas: $$( [ $$rc -eq 0 ] && echo PASS || echo FAIL ) in $$(( $$(date +%s) - start ))s"; \
	exit $$rc

fault-replicas: ## 3 replicas, concurrent bot games, >= 20 SIGKILLs of table owners (asserts resume <= 5 s); last line: one JSON summary
	@PYTHONPATH=services:tests $(PY) tests/replicas/fault.py --kills $${KILLS:-20} --slots $${SLOTS:-8}

fault-tables: ## the issue's name: the pause/handover tests, then fault-replicas (JSON last)
	@$(PY) -m pytest -q -p no:cacheprovider tests/replicas/test_handover.py >&2
	@$(MAKE) --no-print-directory fault-replicas

rebalance-tables: ## 1 replica with 300 running tables, 2 join: asserts spread within 20 % of even and no game interrupted > 5 s (TABLES=300); last line: JSON
	@PYTHONPATH=services:tests $(PY) tests/replicas/rebalance.py --tables $${TABLES:-300}

bench-tables: ## actions/s with 1 and 3 table replicas under the same load, and the scaling factor (a benchmark, not a test; TABLES=24 BENCH_S=20); last line: JSON
	@PYTHONPATH=services:tests $(PY) tests/replicas/bench_replicas.py --tables $${TABLES:-24} --seconds $${BENCH_S:-20}
