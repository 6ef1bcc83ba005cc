# The gateway API's conformance client (issue 40): conformance/ (TypeScript strict on Node 20,
# @grpc/grpc-js, the protos loaded at run time) and its test in tests/conformance, which plays
# every variant through the edge of a real `trix up`. Included by the top Makefile.
NPM ?= npm
CONFORMANCE_STAMP := conformance/node_modules/.trix-npm-ci
CONFORMANCE_SOURCES := $(wildcard conformance/src/*.ts)
CONFORMANCE_CLIENT := conformance/dist/client.js

.PHONY: conformance conformance-install conformance-build

$(CONFORMANCE_STAMP): conformance/package.json conformance/package-lock.json
	cd conformance && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

conformance-install: $(CONFORMANCE_STAMP) ## npm ci in conformance/ (the committed package-lock.json)

$(CONFORMANCE_CLIENT): $(CONFORMANCE_STAMP) $(CONFORMANCE_SOURCES) conformance/tsconfig.json
	cd conformance && $(NPM) run --silent build

conformance-build: $(CONFORMANCE_CLIENT) ## type check (tsc strict) and build the conformance client when its sources changed

conformance: conformance-build $(STAMP_DEV) ## the conformance client: four variants through the edge of a fresh `trix up`, its JSON summary asserted
	$(PY) -m pytest -q -s --timeout=600 tests/conformance $(PYTEST_ARGS)
