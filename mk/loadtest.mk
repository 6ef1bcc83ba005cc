# Load test (issue 10): the bot swarm through the public gateway. `trix loadtest --help`.
# Each run writes summary.json, timeline.json, chart.png and the game records under
# loadtest/results/<scenario>-<tables>-<time>/ and prints its summary LAST as one JSON line.
LOADTEST ?= $(VENV)/bin/trix loadtest
LOADTEST_ARGS ?=

.PHONY: loadtest-smoke loadtest-steady loadtest-peak loadtest-churn loadtest-failover

loadtest-smoke: $(STAMP_DEV) ## load-test smoke (CI): 20 tables, 30 s, every game verified, zero errors
	$(LOADTEST) steady --tables 20 --duration 30 --max-errors 0 $(LOADTEST_ARGS)  # = trix.loadtest.scenarios.SMOKE_ARGV

loadtest-steady: $(STAMP_DEV) ## steady: 1000 tables at human pace for 120 s, p99 budget 150 ms (LOADTEST_ARGS="--tables 300")
	$(LOADTEST) steady --tables 1000 --duration 120 --max-p99-ms 150 --max-errors 0 $(LOADTEST_ARGS)

loadtest-peak: $(STAMP_DEV) ## peak: 100 tables as fast as the bots play for 60 s; actions/s vs the bare echo
	$(LOADTEST) peak --tables 100 --duration 60 $(LOADTEST_ARGS)

loadtest-churn: $(STAMP_DEV) ## churn: 100 tables, players cut and resume, guests join and leave the queue, 60 s
	$(LOADTEST) churn --tables 100 --duration 60 $(LOADTEST_ARGS)

loadtest-failover: $(STAMP_DEV) ## failover: table=3 replicas, one SIGKILLed half way through a 60 s window
	$(LOADTEST) failover --tables 50 --duration 60 $(LOADTEST_ARGS)
