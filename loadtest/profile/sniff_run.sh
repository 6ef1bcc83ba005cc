#!/bin/bash
# One action's path through NATS (issue 10, ADR 0010 "Where the time goes").
# usage: loadtest/profile/sniff_run.sh NAME SECONDS -- <trix loadtest arguments>   (e.g. peak --tables 1)
# During the window: every NATS message with its time (sniff.py, a '>' subscriber) and
# 10 s of strace on nats-server's fsyncs. Then: python loadtest/profile/chain.py DIR/sniff.json
# (command -> log append -> events -> reply) and msgs.py DIR/sniff.json (messages per action).
# The sniffer receives every message once more: it adds NATS work, so read ratios, not totals.
set -u
name=$1; secs=$2; shift 3
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
out=${PROF_DIR:-/tmp/prof}/$name; rm -rf "$out"; mkdir -p "$out"
cd "$root"
.venv/bin/trix loadtest "$@" --out "$out/run" --state-dir "$out/state" > "$out/log.txt" 2>&1 &
lt=$!
for _ in $(seq 1 600); do grep -q "window starts" "$out/log.txt" && break; sleep 1; done
sleep 2
port=$(grep -o 'listen: 127.0.0.1:[0-9]*' "$out/state/nats.conf" | cut -d: -f3)
natspid=$(pgrep -f "nats-server -c $out/state/nats.conf")
uptime > "$out/uptime.txt"
timeout 10 strace -f -T -e trace=fsync,fdatasync -o "$out/strace.txt" -p "$natspid" &
.venv/bin/python "$here/sniff.py" "nats://127.0.0.1:$port" "$secs" "$out/sniff.json"
wait
uptime >> "$out/uptime.txt"
echo "sniffed: $out"
