# Table service targets (issue 4). Included by the top Makefile.
PY ?= .venv/bin/python

.PHONY: test-table bench-table
test-table: ## table service integration + leak tests (real NATS, gRPC, C engine), with a summary line
	@start=$$(date +%s); \
	$(PY) -m pytest -q -p no:cacheprovider tests/table; rc=$$?; \
	echo "test-table: $$( [ $$rc -eq 0 ] && echo PASS || echo FAIL ) in $$(( $$(date +%s) - start ))s (tests/table: games of 4 variants, §14 leak check, commands, permissions, recovery, SIGKILL, expiry after scoring's archive, paid leave before the first card, turn deadlines, event publishing)"; \
	exit $$rc

bench-table: ## per-action cost of the table service on loopback: latency, actions/s, JetStream messages and CPU per action, event publishing before/after (ADR 0003 §13; BENCH_ROUNDS, BENCH_TABLES, BENCH_ACTIONS)
	@PYTHONPATH=services:tests:tests/table $(PY) tests/table/bench_table.py $(BENCH_GAMES)
