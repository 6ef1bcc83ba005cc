#!/usr/bin/env python3
"""Per process: share of py-spy samples by function (self and inclusive). usage: analyze.py DIR SECONDS RATE [TOP]"""
import sys, re, collections, os
# usage: analyze.py DIR SECONDS RATE [top]
d, secs, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
top = int(sys.argv[4]) if len(sys.argv) > 4 else 15
names = {}
for line in open(os.path.join(d, "ps.txt")).read().splitlines()[1:]:
    parts = line.split(None, 3)
    pid, cmd = parts[0], parts[3]
    m = re.search(r"-m trix\.(\w+)", cmd)
    names[pid] = m.group(1) if m else ("bots" if "spawn_main" in cmd else ("runner" if "loadtest" in cmd else cmd[:30]))
def short(frame):
    m = re.match(r"(.*) \((.*?):(\d+)\)", frame)
    if not m: return frame
    f = m.group(2)
    f = re.sub(r".*/site-packages/", "", f); f = re.sub(r".*/services/", "", f); f = re.sub(r".*/python3\.11/", "py/", f)
    return f"{f}:{m.group(1)}"
for fn in sorted(os.listdir(d)):
    if not fn.startswith("spy-"): continue
    pid = fn[4:-4]
    selfc = collections.Counter(); incl = collections.Counter(); total = 0
    for line in open(os.path.join(d, fn)):
        line = line.rstrip()
        if not line: continue
        stack, n = line.rsplit(" ", 1); n = int(n)
        frames = [short(f) for f in stack.split(";")]
        # drop thread header frame like "process 123:..." / "thread (0x..)"
        frames = [f for f in frames if not f.startswith("process ") and not f.startswith("thread ")]
        total += n
        if frames: selfc[frames[-1]] += n
        for f in set(frames): incl[f] += n
    if total == 0: continue
    cpu = total / rate / secs
    print(f"=== {names.get(pid, pid)} pid {pid}: {total} samples = {cpu*100:.0f}% of a core (on-CPU Python samples)")
    print("  self:")
    for f, n in selfc.most_common(top): print(f"   {100*n/total:5.1f}%  {f}")
    print("  inclusive:")
    for f, n in incl.most_common(top+10):
        print(f"   {100*n/total:5.1f}%  {f}")
