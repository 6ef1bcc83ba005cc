#!/bin/bash
# Profile every process of a load-test run (issue 10, ADR 0010 "Where the time goes").
# usage: loadtest/profile/profile_run.sh NAME SECONDS -- <trix loadtest arguments>
# Starts the run, waits for its measured window, then records every Python process it
# started (services, bot workers, the runner) with py-spy for SECONDS (raw collapsed
# stacks, 50 Hz, --nonblocking) and `top` for the CPU of each (nats-server included).
# Then: python loadtest/profile/analyze.py $PROF_DIR/NAME SECONDS 50
set -u
name=$1; secs=$2; shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${PROF_DIR:-/tmp/prof}/$name; rm -rf "$out"; mkdir -p "$out"
cd "$root"
.venv/bin/trix loadtest "$@" --out "$out/run" > "$out/log.txt" 2>&1 &
lt=$!
for _ in $(seq 1 600); do grep -q "window starts" "$out/log.txt" && break; sleep 1; done
sleep 3
uptime > "$out/uptime-start.txt"
pids=$(ps -o pid= --ppid $lt)
ps -o pid,ppid,pcpu,args -p "$(echo $lt $pids | tr ' ' ',')" > "$out/ps.txt"
for p in $lt $pids; do
  case "$(ps -o args= -p "$p")" in
    *nats-server*) ;;
    *) .venv/bin/py-spy record --nonblocking -r 50 -d "$secs" -f raw -o "$out/spy-$p.txt" --pid "$p" >/dev/null 2>&1 & ;;
  esac
done
top -b -d 5 -n $((secs / 5)) > "$out/top.txt" &
wait $(jobs -p | grep -v "^$lt\$")
uptime > "$out/uptime-end.txt"
wait $lt
echo "profiled: $out"
