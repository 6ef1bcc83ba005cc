# Competitions (issue 43, docs/adr/0026, 0029): the pure core's unit and property tests, the
# service as a process, and the platform end to end through the gateway (bot clients: a
# 64-entrant knockout, a points competition of 16, an underfilled one cancelled, a tampered
# record refused by `trix verify-competition`). Part of `make test` (tests/competitions is CI).
.PHONY: test-competitions

test-competitions: $(STAMP_DEV) ## competitions: core properties, the service, a 64-entrant knockout through the gateway, points of 16, a cancelled one, a tampered record refused
	$(PY) -m pytest -q --timeout=600 -p no:cacheprovider tests/competitions $(PYTEST_ARGS)
