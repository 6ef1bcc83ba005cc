"""The bot swarm's worker process: many asyncio clients of the public gateway.

Owns `worker_main` (one OS process, started by `trix.loadtest.runner` through
multiprocessing) and `SwarmBot` (one mobile-like player: guest sign-in, one Session
stream, quick match, a think time before each move, resume from its last sequence
after a cut). Reuses the gateway client of `trix play` (`GatewayClient`, `SeatState`,
`pick`, `new_action`). Reports to the parent once a second through a queue: actions
and their client-seen latency, errors by status code, connected players, tables seen,
finished games with their record.

Bounded: every bot stops at `stop_at` (wall clock), after `max_actions`, or at its
game's end; the parent's `fast` event switches every bot to full speed (the finish
phase after the measured window).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from typing import Any

import grpc

from trix import tls
from trix.client import GatewayClient, SeatState, pick, pick_from_turn
from trix.loadtest.chat import CHAT_REQUEST_PREFIX, TableChat
from trix.loadtest.worker import ERROR_SAMPLES, Stats, WorkerConfig
from trix.runtime import eventloop
from trix.v1 import common_pb2, events_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2

TICK_S = 1.0
NUDGE_S = 5.0
SWEEP_S = 1.0
"""The worker's one sweeper visits its live bots this often (each bot's check is due every
0.5-1.5 NUDGE_S): one loop for all bots instead of one sleeping task per bot. It is
only the safety net (a turn whose answer never came): the stop and the churn cuts have their
own timers (`Swarm.stop_all`, `SwarmBot._churn`), so it can be slow and cost little per action
(at a visit a second per bot it was a tenth of the bots' CPU)."""
LAG_PROBE_S = 0.05
"""The event-loop lag probe: how late a LAG_PROBE_S sleep wakes up is how long any message
waited in this worker before a bot saw it (the swarm's own share of the latency)."""
CONNECT_RETRIES = 8
RETRIES = 6
RETRYABLE = ("UNAVAILABLE", "DEADLINE_EXCEEDED")
"""Codes the platform asks the caller to retry with the same action id (table/service.py)."""


class Swarm:
    """What the bots of one worker share."""

    def __init__(self, cfg: WorkerConfig, fast: Any) -> None:
        self.cfg = cfg
        self.fast = fast
        self.stats = Stats()
        self.connected = 0
        self.tables_seen: set[str] = set()
        self.tables_reported: set[str] = set()
        self.finished = 0
        self.live: set[SwarmBot] = set()
        """Bots with an open session: the sweeper checks them (lost turn, churn cut, stop)."""
        self.gate = asyncio.Semaphore(cfg.ramp_concurrency) if cfg.ramp_concurrency > 0 else None
        self.loop = asyncio.get_running_loop()
        """Kept: `asyncio.get_running_loop()` calls getpid on Python 3.11, per action."""
        self.going_fast = False
        """`fast`, read once a second (`look_fast`): a multiprocessing Event takes a lock per look."""

    def look_fast(self) -> bool:
        self.going_fast = self.fast.is_set()
        return self.going_fast

    def think(self, rng: random.Random) -> float:
        if self.going_fast or self.cfg.think_max_s <= 0:
            return 0.0
        return rng.uniform(self.cfg.think_min_s, self.cfg.think_max_s)

    def stop_all(self) -> None:
        """`stop_at` has come: cut every open session (the bots then stop, see `SwarmBot._session`)."""
        for bot in list(self.live):
            self.live.discard(bot)
            bot._cut()


CHANNEL_OPTIONS = (
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.http2.bdp_probe", 0),
)
"""Each bot's channel: its own TCP connection, like a phone (no shared subchannel), and no
HTTP/2 BDP probing. gRPC's C core (this Python client) sends a BDP PING on the data it
receives, answered by the gateway, to size its flow-control window for bulk transfers; the
clients this swarm stands for do not (the browser's gRPC-Web goes through Envoy, which does
not probe, and a stream of small game messages never fills the default window). Measured
(`trix loadtest steady --tables 400`, two workers of four with it, same run): a
quarter of the bots' CPU per action, and the pings the gateway answered for them."""


class LoadClient(GatewayClient):
    """`trix play`'s client with the swarm's channel (`CHANNEL_OPTIONS`) when `separate`."""

    def __init__(self, target: str, separate: bool, ca_file: str | None = None) -> None:
        super().__init__(target, ca_file=ca_file)
        if separate:
            self.channel = tls.aio_channel(target, ca_file, CHANNEL_OPTIONS)
            self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)


class SwarmBot:
    """One player: sign in, quick match, play with a think time, resume after a cut."""

    def __init__(self, swarm: Swarm, index: int, guest: bool) -> None:
        self.swarm = swarm
        cfg = swarm.cfg
        self.index = index
        self.guest = guest
        self.rng = random.Random(cfg.seed * 1_000_003 + cfg.worker * 100_003 + index)
        self.client = LoadClient(cfg.target, cfg.separate_connections, cfg.ca_file or None)
        self.state = SeatState()
        self.acted = 0
        """turn_seq of the last turn this bot answered."""
        self.sent_at: dict[str, float] = {}
        self.inflight: dict[str, tuple[gateway_pb2.Action, int]] = {}
        """Actions sent and not yet accepted, with their retry count."""
        self.match_retries = 0
        self.view_sent = 0.0
        self.actions = 0
        self.pending: asyncio.TimerHandle | None = None
        """The planned move (one loop timer per bot, no sleeping task)."""
        self.cutter: asyncio.TimerHandle | None = None
        """The churn cut of the open session."""
        self.cut_at = self._next_cut()
        self.ticket_id = ""
        self.cutting = False
        self.next_check = 0.0
        self.gated = False
        """Holds a place of the ramp gate (from sign-in to the first ticket)."""
        partnership = cfg.variant in (common_pb2.VARIANT_TRIX_PARTNERSHIP, common_pb2.VARIANT_COMPLEX_PARTNERSHIP)
        self.chat = TableChat(
            cfg.chat_every_s, lambda: swarm.stats, self.rng, phrases=partnership, chatting=cfg.chatting
        )

    def _next_cut(self) -> float:
        rate = self.swarm.cfg.disconnect_per_min
        if rate <= 0:
            return float("inf")
        return self.swarm.loop.time() + self.rng.expovariate(rate / 60.0)

    def _error(self, code: str) -> None:
        self.swarm.stats.errors[code] += 1

    async def run(self) -> None:
        cfg = self.swarm.cfg
        await asyncio.sleep(self.rng.uniform(0.0, cfg.ramp_s))
        if self.swarm.gate is not None:
            await self.swarm.gate.acquire()
            self.gated = True
        kind = "guest" if self.guest else "bot"
        try:
            for attempt in range(CONNECT_RETRIES):
                try:
                    await self.client.sign_in(f"lt-{cfg.run_id}-{cfg.worker}-{kind}{self.index}", f"{kind}{self.index}")
                    break
                except grpc.aio.AioRpcError as err:
                    self._error(err.code().name)
                    await asyncio.sleep(0.5 * (attempt + 1))
            else:
                return
            await self._session(first=True)
        finally:
            self._ungate()
            self.chat.stop()
            if self.pending is not None:
                self.pending.cancel()
            with contextlib.suppress(Exception):
                await self.client.close()

    def _ungate(self) -> None:
        if self.gated and self.swarm.gate is not None:
            self.gated = False
            self.swarm.gate.release()

    async def _session(self, first: bool) -> None:
        st = self.state
        cfg = self.swarm.cfg
        while not st.ended and time.time() < cfg.stop_at and self.actions < cfg.max_actions:
            call = self.client.open_call()  # read with call.read(): no generator per message
            self.swarm.connected += 1
            if first:
                self._find_match()
                first = False
                if self.guest:
                    self.swarm.loop.call_later(self.rng.uniform(0.05, 1.0), self._cancel_ticket)
            else:
                self.swarm.stats.reconnects += 1
                self.inflight.clear()  # their answers went with the cut stream: the view decides again
                resume = gateway_pb2.EventsRequest(table_id=st.table_id, after_sequence=st.sequence)
                self.client.send(gateway_pb2.SessionRequest(resume=resume))
                self._view()
            self.next_check = time.monotonic() + NUDGE_S * (0.5 + self.rng.random())
            self.swarm.live.add(self)
            self.cutting = False
            if self.cut_at != float("inf"):
                self.cutter = self.swarm.loop.call_at(self.cut_at, self._churn)
            try:
                cut = await self._loop(call)
            except asyncio.CancelledError:
                if not self.cutting:
                    raise
                cut = True
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.CANCELLED:
                    self._error(err.code().name)
                cut = True
                await asyncio.sleep(0.2)
            finally:
                self.swarm.live.discard(self)
                self.swarm.connected -= 1
                if self.cutter is not None:
                    self.cutter.cancel()
                    self.cutter = None
            if not cut or (self.guest and not st.table_id):
                return
            if not st.table_id:  # cut before the match: nothing to resume, queue again
                first = True

    def _find_match(self) -> None:
        if self.state.table_id:
            return
        wish = matchmaking_pb2.GameWish(variant=self.swarm.cfg.variant)  # type: ignore[arg-type]
        if self.swarm.cfg.turn_timeout_s:
            limit = self.swarm.cfg.turn_timeout_s
            wish.options.contract_timeout_s = wish.options.double_timeout_s = wish.options.card_timeout_s = limit
        request = gateway_pb2.FindMatchRequest(wish=wish, client_seed=f"lt{self.index}")
        self.client.send(gateway_pb2.SessionRequest(find_match=request))

    def _cancel_ticket(self) -> None:
        if not self.state.table_id and self.ticket_id:
            req = gateway_pb2.CancelMatchRequest(ticket_id=self.ticket_id)
            self.client.send(gateway_pb2.SessionRequest(cancel_match=req))

    def _churn(self) -> None:
        """The churn time of the open session: cut it (a network cut), unless not seated yet
        or finishing (then look again later)."""
        self.cutter = None
        if self not in self.swarm.live:
            return
        if not self.state.table_id or self.swarm.going_fast:
            self.cutter = self.swarm.loop.call_later(NUDGE_S, self._churn)
            return
        self.cut_at = self._next_cut()
        self.swarm.live.discard(self)
        self._cut()

    def check(self, now: float, wall: float) -> None:
        """The sweeper's visit (every 0.5-1.5 NUDGE_S): stop after max_actions (and at the
        deadline, should its timer be late); re-ask a lost turn."""
        self.next_check = now + NUDGE_S * (0.5 + self.rng.random())
        st = self.state
        if wall >= self.swarm.cfg.stop_at or self.actions >= self.swarm.cfg.max_actions:
            self.swarm.live.discard(self)
            self._cut()
            return
        waiting = self.pending is None and not self.inflight  # nothing planned, no answer on its way
        if st.my_turn() and st.turn is not None and st.turn.turn_seq != self.acted and waiting:
            self._view()

    def _cut(self) -> None:
        self.cutting = True
        self.client.cut()

    def _on_event(self, event: events_pb2.Event) -> bool:
        """One table event; True when the game ended (the session is done)."""
        st = self.state
        swarm = self.swarm
        body = event.WhichOneof("body")
        st.apply(event, body)
        if body == "turn_started" and st.my_turn():
            self._on_turn()
        elif body == "game_ended":
            swarm.finished += 1
            if st.table_id not in swarm.tables_reported:
                swarm.tables_reported.add(st.table_id)
                swarm.stats.games.append(
                    {
                        "table_id": st.table_id,
                        "record_json": st.record_json,
                        "totals": st.totals,
                        "token": self.client.token,
                    }
                )
            return True
        return False

    def _on_accepted(self, accepted: gateway_pb2.SubmitActionResponse) -> None:
        self.inflight.pop(accepted.action_id, None)
        sent = self.sent_at.pop(accepted.action_id, None)
        if sent is not None:
            self.swarm.stats.latencies_ms.append((time.perf_counter() - sent) * 1000)
            self.swarm.stats.actions += 1
            if self.swarm.cfg.keep_accepted:
                self.swarm.stats.accepted.append((self.state.table_id, accepted.action_id))
        st = self.state
        st.sequence = max(st.sequence, accepted.sequence)
        if not self.inflight and st.my_turn() and st.turn is not None and st.turn.turn_seq != self.acted:
            self._on_turn()  # a turn that came while the answer was on its way (see `_on_turn`)

    async def _loop(self, call: Any) -> bool:
        """Handle the session's messages; True when the stream was cut (resume), False when done."""
        st = self.state
        swarm = self.swarm
        while True:
            m = await call.read()
            if m is grpc.aio.EOF:
                break
            kind = m.WhichOneof("kind")
            if kind == "event_batch":  # one message per action: no flattening
                for event in m.event_batch.events:
                    if self._on_event(event):
                        return False
                if m.event_batch.HasField("accepted"):
                    self._on_accepted(m.event_batch.accepted)
            elif kind == "event":
                if self._on_event(m.event):
                    return False
            elif kind == "snapshot":
                if self.view_sent:
                    swarm.stats.view_ms.append((time.perf_counter() - self.view_sent) * 1000)
                    self.view_sent = 0.0
                st.view = m.snapshot
                st.sequence = max(st.sequence, m.snapshot.sequence)
                if m.snapshot.finished:
                    continue
                turn = m.snapshot.turn
                if st.seat in turn.seats and turn.turn_seq != self.acted and self.pending is None and not self.inflight:
                    st.turn = turn
                    self._plan(turn.turn_seq)
            elif kind == "accepted":
                self._on_accepted(m.accepted)
            elif kind == "ticket":
                t = m.ticket
                self.ticket_id = t.ticket_id
                self._ungate()
                if t.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                    st.table_id, st.seat = t.table_id, t.seat
                    self.chat.start(t.seat, t.table_id, self.client.send)
                    if t.table_id not in swarm.tables_seen:
                        swarm.tables_seen.add(t.table_id)
                        swarm.stats.new_tables.append(t.table_id)
                elif t.state == matchmaking_pb2.TICKET_STATE_CANCELLED and self.guest:
                    return False
            elif kind in ("social", "social_event") or m.request_id.startswith(CHAT_REQUEST_PREFIX):
                self.chat.on_message(kind, m)  # nothing of chat counts as an action or its error
            elif kind == "error":
                code = m.error.code or "UNKNOWN"
                loop = swarm.loop
                failed = self.inflight.pop(m.error.action_id, None)
                if failed is not None and code in RETRYABLE and failed[1] < RETRIES:
                    # the documented contract: retry with the same action id (counted, not an error)
                    swarm.stats.retried[code] += 1
                    self.inflight[m.error.action_id] = (failed[0], failed[1] + 1)
                    loop.call_later(0.2 * (failed[1] + 1), self._resend, m.error.action_id)
                    continue
                if not st.table_id:
                    self._ungate()
                if not st.table_id and not self.guest and code in RETRYABLE and self.match_retries < RETRIES:
                    # the quick match failed: ask again after a pause, as a phone would
                    self.match_retries += 1
                    swarm.stats.retried[code] += 1
                    loop.call_later(1.0 + self.rng.random() * 2, self._find_match)
                    continue
                if not st.table_id and self.match_retries and code == "ALREADY_EXISTS":
                    swarm.stats.retried[code] += 1  # the earlier quick match did get through: keep waiting
                    continue
                self._error(code)
                if len(swarm.stats.error_samples) < ERROR_SAMPLES:
                    turn = st.turn.turn_seq if st.turn is not None else 0
                    sample = f"{code}: {m.error.message[:160]} (turn {turn}, seq {st.sequence})"
                    swarm.stats.error_samples.append(sample)
                self.sent_at.pop(m.error.action_id, None)
                if st.my_turn():
                    self.acted = 0
                    if code == "RESOURCE_EXHAUSTED":
                        # Rate limited: ask again after a pause, as a phone would; asking at
                        # once turns one refusal into a storm of them.
                        loop.call_later(0.5 + self.rng.random(), self._view)
                    else:
                        self._view()
        return not st.ended

    def _on_turn(self) -> None:
        st = self.state
        assert st.turn is not None
        if st.turn.client_seeds:  # docs/rules.md §11: a seed before the first deal, no view needed
            if st.turn.turn_seq != self.acted:
                self.acted = st.turn.turn_seq
                action = self._new_action()
                action.client_seed = f"lt-{self.index}"
                self._send_action(action)
            return
        if st.turn.seat_copies:
            # The seat's own copy carries its legal moves (ADR 0003 decision 15): act after
            # the think time without asking for a view (one round trip less per action).
            if st.turn.turn_seq != self.acted and not self.inflight:
                if self.pending is not None:
                    self.pending.cancel()  # an older turn's move, not made: that turn is over
                self._plan(st.turn.turn_seq)
            # With an answer of this seat on its way, a new turn that still names the seat (a
            # doubling turn started again for the seats left, after another seat answered)
            # waits for it: answering again would be refused, "not your turn", once the first
            # answer lands (seen under load, when answers take seconds). `_on_accepted` looks
            # again; the sweeper's view and a view's snapshot wait the same way.
            return
        self._view()  # events from before the change: the legal moves come with the view

    def _plan(self, turn_seq: int) -> None:
        """Answer this turn after the scenario's think time."""
        self.acted = turn_seq
        delay = self.swarm.think(self.rng)
        self.pending = self.swarm.loop.call_later(delay, self._act, turn_seq)

    def _view(self) -> None:
        if not self.state.table_id:
            return
        self.view_sent = time.perf_counter()
        self.client.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest(table_id=self.state.table_id)))

    def _act(self, turn_seq: int) -> None:
        self.pending = None
        st = self.state
        if st.turn is None or st.turn.turn_seq != turn_seq or not st.my_turn():
            return
        choice = pick_from_turn(st.turn, self.rng)  # the own TurnStarted's legal moves, if it has them
        if choice is None:
            if st.view is None or st.view.turn.turn_seq != turn_seq:
                self.acted = 0  # no legal moves at hand: ask for a view (its snapshot acts)
                self._view()
                return
            choice = pick(st.view, st.turn.decision, self.rng)
        if choice is None:
            return
        action = self._new_action()
        action.MergeFrom(choice)
        self._send_action(action)

    def _new_action(self) -> gateway_pb2.Action:
        """`trix.client.new_action` with the id from this bot's generator (as unique within a
        table, without uuid4's os.urandom call per action)."""
        st = self.state
        action_id = f"{self.rng.getrandbits(80):020x}"
        return gateway_pb2.Action(table_id=st.table_id, action_id=action_id, last_seen_sequence=st.sequence)

    def _send_action(self, action: gateway_pb2.Action) -> None:
        self.sent_at[action.action_id] = time.perf_counter()
        self.inflight[action.action_id] = (action, 0)
        self.actions += 1
        self.client.send(gateway_pb2.SessionRequest(action=action))

    def _resend(self, action_id: str) -> None:
        sent = self.inflight.get(action_id)
        if sent is not None and not self.state.ended:
            self.client.send(gateway_pb2.SessionRequest(action=sent[0]))


async def _tick(swarm: Swarm, out: Any, bots: list[SwarmBot]) -> None:
    while True:
        await asyncio.sleep(TICK_S)
        _report(swarm, out, bots)


async def _sweep(swarm: Swarm) -> None:
    """Every bot's periodic check, from one task (see SwarmBot.check)."""
    while True:
        await asyncio.sleep(SWEEP_S)
        swarm.look_fast()
        now, wall = time.monotonic(), time.time()
        for bot in list(swarm.live):
            if now >= bot.next_check:
                bot.check(now, wall)


class _LagProbe:
    """How late this worker's loop runs a callback: the swarm's own delay on every message.
    One loop timer re-armed from its own callback (no task, no future per probe)."""

    def __init__(self, swarm: Swarm) -> None:
        self.swarm = swarm
        self.due = swarm.loop.time() + LAG_PROBE_S
        self.handle = swarm.loop.call_at(self.due, self.fire)

    def fire(self) -> None:
        loop = self.swarm.loop
        now = loop.time()
        self.swarm.stats.lag_ms.append(max(0.0, (now - self.due) * 1000))
        self.due = now + LAG_PROBE_S
        self.handle = loop.call_at(self.due, self.fire)

    def cancel(self) -> None:
        self.handle.cancel()


def _report(swarm: Swarm, out: Any, bots: list[SwarmBot]) -> None:
    data = swarm.stats.take()
    data.update(
        worker=swarm.cfg.worker,
        at=time.time(),
        connected=swarm.connected,
        matched=sum(1 for b in bots if b.state.table_id),
        finished_bots=sum(1 for b in bots if b.state.ended),
    )
    out.put(("tick", data))


async def _worker(cfg: WorkerConfig, out: Any, fast: Any) -> None:
    swarm = Swarm(cfg, fast)
    bots = [SwarmBot(swarm, i, guest=False) for i in range(cfg.players)]
    bots += [SwarmBot(swarm, cfg.players + i, guest=True) for i in range(cfg.guests)]
    helpers = [
        asyncio.ensure_future(_tick(swarm, out, bots)),
        asyncio.ensure_future(_sweep(swarm)),
    ]
    probe = _LagProbe(swarm)
    loop = swarm.loop
    stopper = loop.call_at(loop.time() + max(0.0, cfg.stop_at - time.time()), swarm.stop_all)
    try:
        await asyncio.gather(*(b.run() for b in bots), return_exceptions=False)
    finally:
        stopper.cancel()
        probe.cancel()
        for helper in helpers:
            helper.cancel()
        _report(swarm, out, bots)
        out.put(("done", {"worker": cfg.worker}))


def worker_main(cfg: WorkerConfig, out: Any, fast: Any) -> None:
    """The worker process's entry point (multiprocessing, spawn)."""
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_worker(cfg, out, fast))


def new_run_id() -> str:
    return uuid.uuid4().hex[:10]
