"""`trix demo`: one whole game, four bot clients, all through the gateway.

Owns the demo: start the embedded platform (`trix.embedded.EmbeddedPlatform`), sign in four
guests, queue them for one table through their Session streams, let each play quick
legal moves from its own seat view, print progress and the final standings, then check
the game record with `trix replay` and `trix verify` and that scoring's standings equal
the replayed totals. Exit 0 only if the game finished and all of that holds.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import grpc

from trix import tls
from trix.client import (
    VARIANTS,
    GatewayClient,
    SeatState,
    new_action,
    pick,
    wait_for_standings,
)
from trix.embedded import EmbeddedPlatform, temp_state_dir
from trix.v1 import gateway_pb2, matchmaking_pb2

EXIT_OK = 0
EXIT_FAILED = 1
THINK_MS = 50.0
"""Each bot's default pause before it answers its turn: a bot answering at once sends a view
and an action per turn faster than the gateway's per-connection rate limit allows
(TRIX_GATEWAY_RATE_PER_S, 20/s by default)."""


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default="", help="a running gateway (default: start the embedded platform)")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="trix")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the bots' choices")
    parser.add_argument("--timeout", type=float, default=170.0, help="seconds the game may take")
    parser.add_argument("--state-dir", type=Path, default=None, help="data folder (default: a fresh temp folder)")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=THINK_MS,
        help="each bot's pause before it answers (a shorter one raises the embedded gateway's per-connection "
        "rate limit to match; against --server the server's limit holds)",
    )
    tls.add_ca_argument(parser)


class Bot:
    """One bot client: a Session, its seat's view, a quick legal move on each turn."""

    def __init__(
        self, target: str, index: int, seed: int, variant: int, say: bool, think_s: float, ca_file: str | None = None
    ) -> None:
        self.client = GatewayClient(target, ca_file=ca_file)
        self.think_s = think_s
        self.index = index
        self.rng = random.Random(seed * 10 + index)
        self.variant = variant
        self.state = SeatState()
        self.say = say
        self.moves = 0
        self.latencies: list[float] = []
        self.sent_at: dict[str, float] = {}
        self.acted = 0
        """turn_seq of the last turn this bot answered (one answer per turn)."""
        self.acted_at = 0.0
        """When that answer was sent: an answer still unacknowledged after a while is re-sent."""

    def log(self, text: str) -> None:
        if self.say:
            print(text, flush=True)

    async def run(self, run_id: str) -> SeatState:
        await self.client.sign_in(f"demo-device-{run_id}-{self.index:02d}", f"bot{self.index + 1}")
        stream = self.client.open()
        wish = matchmaking_pb2.GameWish(variant=self.variant)  # type: ignore[arg-type]
        self.client.send(gateway_pb2.SessionRequest(find_match=gateway_pb2.FindMatchRequest(wish=wish)))
        st = self.state
        nudge = asyncio.ensure_future(self._nudge())
        try:
            await self._loop(stream)
        finally:
            nudge.cancel()
        await self.client.close()
        return st

    async def _nudge(self) -> None:
        """A turn whose answer got lost (a race between a view and a newer turn) is asked again."""
        while True:
            await asyncio.sleep(1.0)
            st = self.state
            if not st.my_turn() or st.turn is None:
                continue
            if st.turn.turn_seq != self.acted:
                self._view()
            elif time.perf_counter() - self.acted_at > 3.0:
                # Our answer to this turn was sent but the turn is still ours: the answer or
                # its reply was lost. Ask again; the table refuses a second answer to a turn
                # that is over (stale sequence), so at most one answer per turn is applied.
                self.acted = 0
                self._view()

    async def _loop(self, stream: Any) -> None:
        st = self.state
        async for m in stream:
            kind = m.WhichOneof("kind")
            if kind == "ticket" and m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                st.table_id, st.seat = m.ticket.table_id, m.ticket.seat
            elif kind == "event":
                st.apply(m.event)
                body = m.event.WhichOneof("body")
                if body == "turn_started" and st.my_turn():
                    self._view()
                elif body == "deal_scored" and self.index == 0:
                    d = m.event.deal_scored
                    self.log(f"  deal {d.deal_index + 1:>2} scored: points {list(d.points.values)} totals {st.totals}")
                elif body == "game_ended":
                    break
            elif kind == "snapshot":
                st.view = m.snapshot
                st.sequence = max(st.sequence, m.snapshot.sequence)
                turn = m.snapshot.turn
                if st.seat in turn.seats and turn.turn_seq != self.acted and not m.snapshot.finished:
                    st.turn = turn
                    self.acted = turn.turn_seq
                    self.acted_at = time.perf_counter()
                    # A short think, as a phone's player would take (THINK_MS).
                    asyncio.get_running_loop().call_later(self.think_s, self._act)
            elif kind == "accepted":
                sent = self.sent_at.pop(m.accepted.action_id, None)
                if sent is not None:
                    self.latencies.append(time.perf_counter() - sent)
                st.sequence = max(st.sequence, m.accepted.sequence)
            elif kind == "error":
                if not st.table_id:
                    raise RuntimeError(f"bot{self.index + 1}: {m.error.code}: {m.error.message}")
                if st.my_turn():
                    self.acted = 0
                    if m.error.code == "RESOURCE_EXHAUSTED":  # rate limited: ask again after a pause
                        asyncio.get_running_loop().call_later(0.5, self._view)
                    else:
                        self._view()

    def _view(self) -> None:
        self.client.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest(table_id=self.state.table_id)))

    def _act(self) -> None:
        st = self.state
        assert st.view is not None and st.turn is not None
        choice = pick(st.view, st.turn.decision, self.rng)
        if choice is None:
            return
        action = new_action(st)
        action.MergeFrom(choice)
        self.sent_at[action.action_id] = time.perf_counter()
        self.moves += 1
        self.client.send(gateway_pb2.SessionRequest(action=action))


async def _demo(args: argparse.Namespace, target: str) -> int:
    from trix.records import load_record, replay
    from trix.verification import verify_record

    engine = importlib.import_module("trix.engine")  # the C rules engine, as `trix replay` loads it

    run_id = f"{int(time.time())}-{random.Random().randrange(10**6)}"
    bots = [
        Bot(target, i, args.seed, VARIANTS[args.variant], i == 0, args.think_ms / 1000, ca_file=args.ca or None)
        for i in range(4)
    ]
    started = time.monotonic()
    print(f"four bots sign in and ask for a {args.variant} table...", flush=True)
    states = await asyncio.wait_for(asyncio.gather(*(b.run(run_id) for b in bots)), args.timeout)
    took = time.monotonic() - started
    st = states[0]
    ok = True
    if not all(s.ended for s in states) or not st.record_json:
        print("FAIL: the game did not end", flush=True)
        return EXIT_FAILED
    moves = sum(b.moves for b in bots)
    lat = sorted(x for b in bots for x in b.latencies)
    p50 = lat[len(lat) // 2] * 1000 if lat else 0.0
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else 0.0
    print(f"game {st.table_id} finished in {took:.1f}s: {moves} moves, per move p50 {p50:.1f} ms p99 {p99:.1f} ms")
    names = [f"bot{i + 1}" for i in range(4)]
    seat_names = {s.seat: names[i] for i, s in enumerate(states)}
    ranking = json.loads(st.record_json).get("ranking") or [0, 0, 0, 0]
    print("final standings:")
    for seat in sorted(range(4), key=lambda s: (ranking[s], s)):
        print(f"  {ranking[seat]}. seat {seat} {seat_names.get(seat, '?'):<5} {st.totals[seat]:>6}")
    record = load_record(st.record_json)
    result = replay(record, engine.Game, engine.Options)
    replayed = list(result.record.get("totals") or [])
    if result.differences or not result.finished:
        ok = False
        print(f"trix replay: FAIL {result.differences[:3]}")
    else:
        print(f"trix replay: ok, {len(result.record['deals'])} deals, totals {replayed}")
    report = verify_record(record, engine.Game, engine.Options)
    print(f"trix verify: {'ok' if report.ok else 'FAIL'} ({len(report.lines)} checks)")
    ok = ok and report.ok
    scored = await wait_for_standings(
        target,
        bots[0].client.token,
        st.table_id,
        replayed,
        tries=100,
        interval_s=0.2,
        timeout_s=5,
        ca_file=args.ca or None,
    )
    same = scored == replayed == st.totals
    print(f"scoring standings {scored} {'==' if same else '!='} replayed totals {replayed}")
    ok = ok and same
    print("demo: ok" if ok else "demo: FAILED", flush=True)
    return EXIT_OK if ok else EXIT_FAILED


def run_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    platform: EmbeddedPlatform | None = None
    target = args.server
    if not target:
        state_dir = args.state_dir or temp_state_dir("trix-demo-")
        print(f"starting the embedded platform in {state_dir}...", flush=True)
        env = {"TRIX_MATCHMAKING_BOT_FILL_S": "30"}
        if args.think_ms < THINK_MS:  # two messages per own turn at most every think: the limit follows
            env["TRIX_GATEWAY_RATE_PER_S"] = f"{max(20.0, 2000.0 / max(args.think_ms, 1.0)):.0f}"
        platform = EmbeddedPlatform(state_dir, fresh=True, env=env)
        try:
            target = platform.start()
        except RuntimeError as err:
            platform.stop()
            print(f"trix demo: {err}", file=sys.stderr)
            return EXIT_FAILED
        print(f"platform ready in {time.monotonic() - started:.1f}s, gateway at {target}", flush=True)
    try:
        code = asyncio.run(_demo(args, target))
    except TimeoutError:
        print(f"trix demo: the game did not finish within {args.timeout:.0f}s", file=sys.stderr)
        code = EXIT_FAILED
    except grpc.aio.AioRpcError as err:
        print(f"trix demo: {err.code().name}: {err.details()}", file=sys.stderr)
        code = EXIT_FAILED
    except RuntimeError as err:
        print(f"trix demo: {err}", file=sys.stderr)
        code = EXIT_FAILED
    finally:
        if platform is not None:
            platform.stop()
    print(f"trix demo: {'passed' if code == 0 else 'failed'} in {time.monotonic() - started:.1f}s", flush=True)
    return code
