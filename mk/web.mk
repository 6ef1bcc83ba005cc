# The browser client (issue 20): web/ (TypeScript strict, Preact, Vite, Vitest), its ES code
# generated from proto/ by buf + protoc-gen-es (committed under web/src/gen, never edited),
# and the browser tests in tests/web (pytest + playwright driving Debian's chromium).
# The Verify page's rules engine is engine/src compiled to WebAssembly by zig's clang (the
# `ziglang` package of the dev extras, ADR 0025) into web/build/trix_engine.wasm.
# Included by the top Makefile.
NPM ?= npm
ZIG ?= $(PY) -m ziglang
WEB_WASM := web/build/trix_engine.wasm
WASM_CFLAGS := -target wasm32-wasi -mexec-model=reactor -std=c11 -Wall -Wextra -Werror -Iengine/include -O2 -s
WEB_STAMP := web/node_modules/.trix-npm-ci
# The Arabic page's font (issue 39): @fontsource's Noto Sans Arabic (pinned in package.json)
# subset by fonttools (dev extras) to the Arabic block (U+0600-06FF: letters, digits,
# punctuation, harakat) and the joiners, every layout feature kept (GSUB shapes the letters'
# joined forms, GPOS places the marks): 21 KB instead of 48 KB on the Arabic page's first load.
WEB_FONT := web/build/noto-sans-arabic-400.woff2
WEB_FONT_SRC := web/node_modules/@fontsource/noto-sans-arabic/files/noto-sans-arabic-arabic-400-normal.woff2
WEB_FONT_RANGE := U+0600-06FF,U+200C-200E,U+2010-2011
WEB_SOURCES := $(shell find web/src web/public web/scripts web/index.html web/vite.config.ts web/tsconfig.json -type f 2>/dev/null)
WEB_DIST := web/dist/index.html

.PHONY: web web-install web-proto web-proto-check web-build web-wasm web-font test-web

$(WEB_STAMP): web/package.json web/package-lock.json
	cd web && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

web-install: $(WEB_STAMP) ## npm ci in web/ (the committed package-lock.json)

web-proto: $(WEB_STAMP) $(STAMP_DEV) ## regenerate web/src/gen from proto/ (buf generate + protoc-gen-es)
	rm -rf web/src/gen
	cd web && PATH="$$PWD/node_modules/.bin:$$PATH" ../$(BUF) generate --template buf.gen.yaml ../proto

web-proto-check: $(WEB_STAMP) $(STAMP_DEV) ## fail if web/src/gen differs from a fresh generation
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	cd web && PATH="$$PWD/node_modules/.bin:$$PATH" ../$(BUF) generate --template buf.gen.yaml -o "$$tmp" ../proto && \
	diff -r "$$tmp/src/gen" src/gen && echo "web-proto-check: generated ES code is up to date"

$(WEB_WASM): engine/wasm/trix_wasm.c $(ENGINE_SRCS) $(ENGINE_HDRS) $(STAMP_DEV)
	@mkdir -p $(@D)
	$(ZIG) cc $(WASM_CFLAGS) -o $@ engine/wasm/trix_wasm.c $(ENGINE_SRCS)

$(WEB_FONT): $(WEB_STAMP) $(STAMP_DEV) mk/web.mk
	@mkdir -p $(@D)
	$(PY) -m fontTools.subset $(WEB_FONT_SRC) --unicodes="$(WEB_FONT_RANGE)" --layout-features='*' \
		--flavor=woff2 --output-file=$@

web-font: $(WEB_FONT) ## the Arabic font subset for the web app (web/build/noto-sans-arabic-400.woff2)

web-wasm: $(WEB_WASM) ## the C rules engine as WebAssembly for the Verify page (web/build/trix_engine.wasm)

$(WEB_DIST): $(WEB_STAMP) $(WEB_SOURCES) $(WEB_WASM) $(WEB_FONT)
	cd web && $(NPM) run --silent build

web-build: $(WEB_DIST) ## build web/dist when its sources changed (prints the gzipped first-load size)

web: $(WEB_STAMP) $(WEB_WASM) $(WEB_FONT) ## the web app: npm ci, the engine as WebAssembly, type check (tsc strict), Vitest unit tests, build (size figure)
	cd web && $(NPM) run --silent typecheck
	cd web && $(NPM) run --silent test
	cd web && $(NPM) run --silent build

test-web: web-build $(STAMP_DEV) ## browser tests: tests/web (playwright + /usr/bin/chromium against `trix up`)
	$(PY) -m pytest -q --timeout=600 tests/web $(PYTEST_ARGS)
