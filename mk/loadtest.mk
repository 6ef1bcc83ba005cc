# Load test (issue 10): the bot swarm through the public gateway. `trix loadtest --help`.
# Each run writes summary.json, timeline.json, chart.png and the game records under
# loadtest/results/<scenario>-<tables>-<time>/ and prints its summary LAST as one JSON line.
LOADTEST ?= $(VENV)/bin/trix loadtest
LOADTEST_ARGS ?=

LOADTEST_SCALE ?= 100 200 300 400 500 600 800 1000
LOADTEST_REPEAT ?= 1
# This VM's speed varies by a quarter between runs (ADR 0010): LOADTEST_REPEAT=3 calls a size
# held when most of its runs are within budget.
LOADTEST_PROFILE ?= peak --tables 20 --duration 40 --no-finish

.PHONY: loadtest-smoke loadtest-steady loadtest-peak loadtest-churn loadtest-failover loadtest-scale loadtest-profile

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

loadtest-scale: $(STAMP_DEV) ## steady at growing sizes (LOADTEST_SCALE, each LOADTEST_REPEAT times) until most runs breach p99 150 ms or errors
	@held=0; log=$$(mktemp); for n in $(LOADTEST_SCALE); do \
	  ok=0; for r in $$(seq 1 $(LOADTEST_REPEAT)); do \
	    $(LOADTEST) steady --tables $$n --duration 60 --no-finish --max-p99-ms 150 --max-errors 0 $(LOADTEST_ARGS) > $$log 2>&1 && ok=$$((ok + 1)); \
	    tail -1 $$log | cut -c1-400; \
	  done; \
	  if [ $$((2 * ok)) -gt $(LOADTEST_REPEAT) ]; then held=$$n; echo "loadtest-scale: $$n tables hold in $$ok of $(LOADTEST_REPEAT) runs (load average $$(cut -d' ' -f1-3 /proc/loadavg))"; \
	  else echo "loadtest-scale: p99 or errors over budget at $$n tables in $$(($(LOADTEST_REPEAT) - ok)) of $(LOADTEST_REPEAT) runs (load average $$(cut -d' ' -f1-3 /proc/loadavg))"; break; fi; \
	done; rm -f $$log; echo "loadtest-scale: largest steady size within p99 150 ms and zero errors in most of $(LOADTEST_REPEAT) runs: $$held tables"

loadtest-profile: $(STAMP_DEV) ## py-spy + top on every process of a run (LOADTEST_PROFILE), then the shares per function (ADR 0010)
	PROF_DIR=/tmp/trix-prof loadtest/profile/profile_run.sh run 25 -- $(LOADTEST_PROFILE)
	$(PY) loadtest/profile/analyze.py /tmp/trix-prof/run 25 50
