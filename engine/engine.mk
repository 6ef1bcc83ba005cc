# Engine targets (C rules engine + CPython binding). Included by the top Makefile.
# Owns engine/build/ (git-ignored). See docs/adr/0002-engine-c-core.md.
PY ?= .venv/bin/python
ENGINE_CC ?= cc
ENGINE_FUZZ_CC ?= clang
ENGINE_BUILD := engine/build
ENGINE_CFLAGS := -std=c11 -Wall -Wextra -Werror -Iengine/include
ENGINE_SRCS := engine/src/trix_engine.c engine/src/trix_bot.c
ENGINE_HDRS := engine/include/trix_engine.h
ENGINE_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SECONDS ?= 600
ASAN_FUZZ_ITERS ?= 3000

.PHONY: test-c asan fuzz test-engine engine-ext bench-engine

$(ENGINE_BUILD):
	@mkdir -p $@

$(ENGINE_BUILD)/test_engine: engine/tests/test_engine.c $(ENGINE_SRCS) $(ENGINE_HDRS) | $(ENGINE_BUILD)
	$(ENGINE_CC) $(ENGINE_CFLAGS) -O2 -g -o $@ engine/tests/test_engine.c $(ENGINE_SRCS)

test-c: $(ENGINE_BUILD)/test_engine ## build and run the C engine unit tests
	$(ENGINE_BUILD)/test_engine

asan: | $(ENGINE_BUILD) ## C engine tests + random playouts/restore loop under ASan+UBSan
	$(ENGINE_CC) $(ENGINE_CFLAGS) -O1 -g $(ENGINE_SAN) -o $(ENGINE_BUILD)/test_engine_asan engine/tests/test_engine.c $(ENGINE_SRCS)
	$(ENGINE_BUILD)/test_engine_asan
	$(ENGINE_CC) $(ENGINE_CFLAGS) -O1 -g $(ENGINE_SAN) -DTRIX_FUZZ_STANDALONE -o $(ENGINE_BUILD)/fuzz_engine_asan engine/fuzz/fuzz_engine.c $(ENGINE_SRCS)
	$(ENGINE_BUILD)/fuzz_engine_asan $(ASAN_FUZZ_ITERS)

fuzz: | $(ENGINE_BUILD) ## libFuzzer on actions + restore(bytes) for FUZZ_SECONDS (default 600; needs clang)
	@command -v $(ENGINE_FUZZ_CC) >/dev/null || { echo "fuzz needs clang (apt-get install -y clang)"; exit 2; }
	$(ENGINE_FUZZ_CC) $(ENGINE_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $(ENGINE_BUILD)/fuzz_engine engine/fuzz/fuzz_engine.c $(ENGINE_SRCS)
	@mkdir -p $(ENGINE_BUILD)/fuzz-corpus
	$(ENGINE_BUILD)/fuzz_engine -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 $(ENGINE_BUILD)/fuzz-corpus

engine-ext: ## build the trix.engine._core extension in place (editable install)
	$(PY) -m pip install -q --no-build-isolation -e .

test-engine: engine-ext ## build the extension and run the Python engine tests (tests/engine)
	$(PY) -m pytest -q tests/engine

bench-engine: engine-ext | $(ENGINE_BUILD) ## moves/s: Python API random play and C playouts
	$(ENGINE_CC) $(ENGINE_CFLAGS) -O2 -o $(ENGINE_BUILD)/bench_playout engine/tests/bench_playout.c $(ENGINE_SRCS)
	$(ENGINE_BUILD)/bench_playout
	$(PY) engine/tests/bench_engine.py

.PHONY: test-diff-long
DIFF_GAMES ?= 10000
test-diff-long: ## differential test model vs C engine over DIFF_GAMES random games (default 10,000; CI runs 200)
	TRIX_DIFF_GAMES=$(DIFF_GAMES) $(PY) -m pytest -q -p no:cacheprovider tests/engine/test_differential.py
