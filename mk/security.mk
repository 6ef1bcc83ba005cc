# Security (issue 18): the attacks a compromised service would try on NATS, as every other
# NATS user, on a bare nats-server with the generated permissions and on `trix up`'s own.

.PHONY: test-security

test-security: $(STAMP_DEV) ## NATS attacks (mirror, source, direct get, journal write, forged events and matches, consumer deletion) as every user: one line per attempt
	$(PY) -m pytest -q --timeout=300 -p no:cacheprovider tests/security $(PYTEST_ARGS)
