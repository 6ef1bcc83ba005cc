# Gateway (issue 9): auth matrix, malformed input, `trix play` through a pty, `trix demo`.

.PHONY: test-gateway demo

test-gateway: $(STAMP_DEV) ## gateway tests: auth matrix, malformed input, trix play (pty), trix demo (real processes)
	$(PY) -m pytest -q --timeout=300 tests/gateway $(PYTEST_ARGS)

demo: $(STAMP_DEV) ## trix demo: one whole game of four bot clients through the gateway, replayed and verified
	$(VENV)/bin/trix demo
