#!/usr/bin/env python3
"""NATS messages per second and per action (log appends), by kind, from a sniff.json."""
import json, collections, sys
rows = json.load(open(sys.argv[1]))
dur = (rows[-1][0]-rows[0][0])/1e9
actions = sum(1 for t,s,r,n in rows if s.startswith('trix.table.log.') and r and r.startswith('_INBOX'))
inbox_kind = {}
for t,s,r,n in rows:
    if r and r.startswith('_INBOX'):
        if s.startswith('trix.table.cmd'): inbox_kind[r]='command reply'
        elif s.startswith('$KV.table_leases') or s.startswith('$KV.table_replicas'): inbox_kind[r]='table lease PubAck'
        elif s.startswith('$KV.match'): inbox_kind[r]='matchmaking KV PubAck'
        elif s.startswith('$KV.timer'): inbox_kind[r]='timers KV PubAck'
        elif s.startswith('trix.table.evt'): inbox_kind[r]='event PubAck'
        elif s.startswith('trix.table.log'): inbox_kind[r]='log PubAck'
        elif s.startswith('$JS.API.STREAM.MSG.GET'): inbox_kind[r]='KV get reply'
c = collections.Counter()
for t,s,r,n in rows:
    if s.startswith('trix.table.evt'):
        k = 'event publish' if (r and r.startswith('_INBOX')) else 'event delivery to a consumer'
    elif s.startswith('$KV.table_'):
        k = 'table lease/replica KV write' if (r and r.startswith('_INBOX')) else 'table lease watch delivery'
    elif s.startswith('$KV.match'):
        k = 'matchmaking KV write' if (r and r.startswith('_INBOX')) else 'matchmaking KV watch delivery'
    elif s.startswith('$KV.timer'):
        k = 'timers KV write' if (r and r.startswith('_INBOX')) else 'timers KV watch delivery'
    elif s.startswith('$JS.ACK'): k = 'consumer ack'
    elif s.startswith('$JS.API.CONSUMER.MSG.NEXT'): k = 'pull request (fetch)'
    elif s.startswith('$JS.API.STREAM.MSG.GET'): k = 'KV get request'
    elif s.startswith('$JS.API'): k = 'other JS API'
    elif s.startswith('trix.table.cmd'): k = 'table command request'
    elif s.startswith('trix.table.log'): k = 'log append'
    elif s.startswith('_INBOX'):
        base = s
        k = inbox_kind.get(s, 'other reply (' + ('PubAck/API' ) + ')')
    else: k = s.split('.')[0] + '.' + (s.split('.')[1] if '.' in s else '')
    c[k] += 1
print(f"{dur:.1f}s, {actions} actions ({actions/dur:.1f}/s), {len(rows)} messages ({len(rows)/dur:.0f}/s, {len(rows)/max(1,actions):.1f} per action)")
for k,v in c.most_common(): print(f"{v/dur:8.1f}/s {v/max(1,actions):6.2f}/action  {k}")
