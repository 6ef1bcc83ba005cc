# The competitions replicas' fault run (issue 43, docs/adr/0026): not in `make test`.
# Included by the top Makefile; `make help` lists every target with a `## ` comment.
PY ?= .venv/bin/python
ENTRANTS ?= 256
COMPETITION_KILLS ?= 10
COMPETITION_TABLE_KILLS ?= 5

.PHONY: fault-competitions

fault-competitions: ## a paid knockout of ENTRANTS (256; FREE=1: free) on 2 competitions and 2 table replicas, its owner SIGKILLed >= 10 times and a table replica 5 times; last line: one JSON summary
	PYTHONPATH=services:tests:tests/competitions $(PY) tests/competitions/fault_competitions.py --entrants $(ENTRANTS) --kills $(COMPETITION_KILLS) --table-kills $(COMPETITION_TABLE_KILLS) $(if $(filter 1,$(FREE)),--free)
