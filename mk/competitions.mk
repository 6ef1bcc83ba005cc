# Competitions (issue 43, docs/adr/0026, 0029): the pure core's unit and property tests, the
# service as a process, and the platform end to end through the gateway (bot clients: a paid
# 64-entrant knockout, its prizes paid after the review period, coins conserved; a points
# competition of 16; a paid underfilled one cancelled with full refunds, a leaver before the
# start half; a tampered record refused by `trix verify-competition`). Part of `make test`
# (tests/competitions is CI).
.PHONY: test-competitions

test-competitions: $(STAMP_DEV) ## competitions: core properties, the service, a paid 64-entrant knockout through the gateway (prizes after the review, coins conserved), points of 16, a cancelled one refunded, a tampered record refused
	$(PY) -m pytest -q --timeout=600 -p no:cacheprovider tests/competitions $(PYTEST_ARGS)

.PHONY: test-competitions-web
test-competitions-web: $(STAMP_DEV) web-build ## the competitions web e2e alone (chromium; in make test too): register, play your table, the bracket, the payout
	$(PY) -m pytest -q --timeout=600 -p no:cacheprovider tests/web/test_competitions_web.py $(PYTEST_ARGS)
