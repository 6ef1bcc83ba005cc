#!/usr/bin/env python3
"""Subscribe to '>' and log (t_ns, subject, reply, size) for SECONDS; then analyse one table's command chain."""
import asyncio, sys, time, json, collections, statistics
import nats

async def main(url, seconds, out):
    nc = await nats.connect(url)
    rows = []
    async def cb(msg):
        rows.append((time.perf_counter_ns(), msg.subject, msg.reply, len(msg.data)))
    await nc.subscribe(">", cb=cb)
    await asyncio.sleep(seconds)
    await nc.close()
    json.dump(rows, open(out, "w"))
    print("rows", len(rows))

asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3]))
