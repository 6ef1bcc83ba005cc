#!/usr/bin/env python3
"""The chain of each action in a sniff.json: command -> log append -> PubAck -> event copies -> reply (ms)."""
import json, sys, collections, statistics
rows = json.load(open(sys.argv[1]))
# map reply inbox -> time of the reply message
by_subject_time = {}
replies = collections.defaultdict(list)
for t, s, r, n in rows:
    replies[s].append(t)
res = collections.defaultdict(list)
counts = collections.Counter()
i = 0
cmds = [(k, x) for k, x in enumerate(rows) if x[1].startswith("trix.table.cmd.") and x[2]]
for k, (t0, subj, reply, n) in cmds:
    rt = [t for t in replies.get(reply, []) if t > t0]
    if not rt: continue
    t_end = rt[0]
    # messages between request and reply
    inside = [x for x in rows[k+1:] if x[0] <= t_end]
    log = [x for x in inside if x[1].startswith("trix.table.log.")]
    evts = [x for x in inside if x[1].startswith("trix.table.evt.") and x[2] and x[2].startswith("_INBOX")]
    if not log: continue  # view requests etc (no log append)
    tlog = log[0][0]
    logack = [t for t in replies.get(log[0][2], []) if t > tlog]
    res["request->log publish (table: decode, engine, build entry)"].append((tlog - t0) / 1e6)
    if logack:
        res["log publish->log PubAck (fsync)"].append((logack[0] - tlog) / 1e6)
        if evts:
            res["log PubAck->first event publish"].append((evts[0][0] - logack[0]) / 1e6)
    if evts:
        acks = [t for e in evts for t in replies.get(e[2], []) if e[0] < t <= t_end]
        res["first event publish->last event PubAck (events published)"].append(((max(acks) if acks else evts[-1][0]) - evts[0][0]) / 1e6)
        res["last event PubAck->reply"].append((t_end - (max(acks) if acks else evts[-1][0])) / 1e6)
        counts["events"] += len(evts)
        per = collections.Counter(e[1] for e in evts)
        res["longest chain (events on one subject)"].append(max(per.values()))
        # rounds: consecutive publish bursts separated by an ack wait
        res["event copies published"].append(len(evts))
    res["request->reply total"].append((t_end - t0) / 1e6)
    counts["actions"] += 1
for k, v in res.items():
    v = sorted(v)
    print(f"{k:62s} n={len(v):4d} p50={v[len(v)//2]:7.2f} p90={v[int(len(v)*.9)]:7.2f} mean={statistics.mean(v):7.2f}")
print(dict(counts), "events/action", counts["events"] / max(1, counts["actions"]))
subj = collections.Counter(".".join(s.split(".")[:3]) if not s.startswith("_INBOX") else "_INBOX" for _, s, _, _ in rows)
dur = (rows[-1][0] - rows[0][0]) / 1e9
print("msgs/s by prefix:", {k: round(v / dur, 1) for k, v in subj.most_common(12)})
