# Trix platform. `make help` lists the targets. Engine targets live in engine/engine.mk,
# platform targets in mk/platform.mk; this file only wires them together.
PY ?= .venv/bin/python
.DEFAULT_GOAL := help

include engine/engine.mk
-include mk/*.mk

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'
