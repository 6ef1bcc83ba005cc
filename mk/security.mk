# Security (issue 18): the attacks a compromised service would try on NATS, as every other
# NATS user, on a bare nats-server with the generated permissions and on `trix up`'s own; and
# the public side on `trix up` (two gateway replicas, the Envoy edge): tokens across replicas
# and rotations, limits per player and per address, the stream cap, private tables, and
# scoring's replay of a GameEnded before it settles.

.PHONY: test-security

test-security: $(STAMP_DEV) ## NATS attacks as every user, compromised gateway, tokens across replicas/rotation, edge limits, stream cap, private tables, forged results: one line per attempt
	$(PY) -m pytest -q --timeout=300 -p no:cacheprovider tests/security $(PYTEST_ARGS)
