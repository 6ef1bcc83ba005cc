"""The social part of the platform (issue 44, ADR 0026): friends, presence, invitations and
chat, with moderation that needs no moderator online.

So far its pure domain, the core the `social` service will be built on: `normalise` (the
text the filter reads), `wordfilter` (Arabic, Arabizi and English; its word list is the data
file `words.txt`), `names` (display names cleaned and judged), `moderation` (rate limits,
repeated lines, length limit, automatic timeouts, on an injected clock), `friends` (the
friendship state machine and the block rules), `channels` (who writes and reads which
channel, docs/rules.md §15) and `phrases` (quick phrases in English and Arabic). None of it
imports grpc, nats or another service.
"""
