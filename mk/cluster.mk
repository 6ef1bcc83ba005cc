# NATS cluster targets (issue 19): `trix up --nats-cluster 3`, faults of NATS nodes under
# bot games, the load test on the cluster next to the single node. Included by the top Makefile.
# The CI-sized test (tests/cluster/test_leader_kill.py) runs in `make test`.
FAULTS ?= 20
SLOTS ?= 6
PAID ?= 1
LT_TABLES ?= 100
LT_SECONDS ?= 60

.PHONY: test-cluster fault-nats loadtest-cluster up-cluster

test-cluster: $(STAMP_DEV) ## NATS cluster: the generator of the node configs, SIGKILL of the TABLE_LOG leader mid-game (CI-sized), and the outside_ci tests
	$(PY) -m pytest -q --timeout=900 tests/cluster tests/deploy/test_nats_conf_one_generator.py $(PYTEST_ARGS)

fault-nats: $(STAMP_DEV) ## 3-node NATS cluster, 3 table replicas, 2 gateways, free and paid bot games of the 4 variants, NATS faults of 6 kinds in turn (FAULTS=20; 120 for 20 of each, PAID=1 paid games at once); last line: one JSON summary
	@PYTHONPATH=services:tests:tests/cluster $(PY) tests/cluster/fault_nats.py --faults $(FAULTS) --slots $(SLOTS) --paid-groups $(PAID)

loadtest-cluster: $(STAMP_DEV) ## trix loadtest steady on 1 NATS node, then on the 3-node cluster, same arguments (LT_TABLES, LT_SECONDS); last line: both and the ratios
	@PYTHONPATH=services:tests:tests/cluster $(PY) tests/cluster/loadtest_cluster.py --tables $(LT_TABLES) --duration $(LT_SECONDS)

up-cluster: $(STAMP_RUN) ## `trix up --nats-cluster 3` (UP_ARGS for more)
	$(VENV)/bin/trix up --nats-cluster 3 $(UP_ARGS)
