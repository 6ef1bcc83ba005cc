"""Helpers of the table tests (and the replicas tests that drive table processes): the
table service as a subprocess, a test client that plays through the API, its tokens."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
from nats.aio.client import Client

from support.keys import SuiteKeys
from support.processes import kill_process, stop_process
from trix import rules
from trix.natsio import subjects
from trix.natsio.permissions import GATEWAY_INBOX_PREFIX
from trix.natsio.seatstream import has_seat_copies
from trix.processes import free_port
from trix.runtime.identity import TOKEN_HEADER
from trix.table.adapters import WRITER_HEADER
from trix.v1 import common_pb2, events_pb2, table_pb2

REPO = Path(__file__).resolve().parents[2]
KEYS = SuiteKeys("table-tests")
DOUBLING = {common_pb2.Contract.Value(f"CONTRACT_{name}"): set(cards) for name, cards in rules.DOUBLING_CARDS.items()}
"""docs/rules.md §7, by proto contract value."""


def table_env(nats_url: str, service: str = "table", **extra: str) -> dict[str, str]:
    """The environment of the table (or `service`) under test, with its own token keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    env.update(
        {
            "TRIX_NATS_URL": nats_url,
            **KEYS.env(service),
            "TRIX_GRPC_PORT": str(free_port()),
            "TRIX_METRICS_PORT": "-1",
            "TRIX_LOG_LEVEL": "warning",
            "TRIX_SHUTDOWN_GRACE_S": "1",
            "TRIX_DRAIN_DELAY_S": "0",
            **extra,
        }
    )
    return env


class TableProcess:
    """`python -m trix.table` (or another service's `module`) as a subprocess (for SIGKILL tests)."""

    def __init__(self, env: dict[str, str], log_path: Path, module: str = "trix.table") -> None:
        self.env = env
        self.log_path = log_path
        self.module = module
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", self.module], env=self.env, stdout=log, stderr=log)

    def kill(self) -> None:
        kill_process(self.proc)

    def stop(self) -> None:
        stop_process(self.proc, grace_s=15)


def token(role: str, name: str) -> str:
    """A player's token, or the service `name`'s own (signed with its own key, ADR 0028)."""
    return KEYS.token(role, name)


class CommandError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass
class GatewayClient:
    """Plays as the gateway would: NATS requests on the table's command subject."""

    nc: Client
    timeout_s: float = 20.0
    sent: int = 0
    latencies: list[float] = field(default_factory=list)

    @classmethod
    async def connect(cls, url: str) -> GatewayClient:
        nc = await nats.connect(url, inbox_prefix=GATEWAY_INBOX_PREFIX.encode(), max_reconnect_attempts=-1)
        return cls(nc)

    async def request(self, table_id: str, command: table_pb2.TableCommand, tok: str) -> table_pb2.TableCommandReply:
        t0 = time.perf_counter()
        msg = await self.nc.request(
            subjects.table_command(table_id),
            command.SerializeToString(),
            timeout=self.timeout_s,
            headers={TOKEN_HEADER: tok},
        )
        self.latencies.append(time.perf_counter() - t0)
        self.sent += 1
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error"):
            raise CommandError(reply.error.kind, reply.error.message)
        return reply

    async def view(self, table_id: str, seat: int, tok: str) -> table_pb2.SeatView:
        cmd = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat))
        return (await self.request(table_id, cmd, tok)).get_seat_view.view


def create_request(
    table_id: str,
    variant: int,
    players: Sequence[str],
    *,
    options: common_pb2.TableOptions | None = None,
    bots: Sequence[int] = (),
    seeds: Sequence[str] = ("", "", "", ""),
    await_seeds: bool = False,
    stake: int = 0,
) -> table_pb2.CreateTableRequest:
    request = table_pb2.CreateTableRequest(
        table_id=table_id,
        variant=common_pb2.Variant.ValueType(variant),
        options=options or common_pb2.TableOptions(),
        seats=[
            common_pb2.Seat(index=s, player_id="" if s in bots else players[s], bot=s in bots, client_seed=seeds[s])
            for s in range(4)
        ],
        await_client_seeds=await_seeds,
    )
    if stake:
        request.stake.coins = stake
    return request


def header(table_id: str, seat: int, action_id: str, last_seen: int) -> table_pb2.ActionHeader:
    return table_pb2.ActionHeader(table_id=table_id, seat=seat, action_id=action_id, last_seen_sequence=last_seen)


def choose_move(view: table_pb2.SeatView, rng: random.Random) -> table_pb2.TableCommand | None:
    """A legal move for the view's seat chosen by the test client, or None if it has nothing to do."""
    turn = view.turn
    h = header(view.table_id, view.seat, f"a{rng.getrandbits(64):x}", view.sequence)
    if turn.client_seeds:
        return table_pb2.TableCommand(
            set_client_seed=table_pb2.SetClientSeedRequest(header=h, client_seed=f"seed-{view.seat}")
        )
    if turn.decision == common_pb2.DECISION_CONTRACT:
        if not view.legal_contracts:
            return None
        contract = rng.choice(list(view.legal_contracts))
        return table_pb2.TableCommand(choose_contract=table_pb2.ChooseContractRequest(header=h, contract=contract))
    if turn.decision == common_pb2.DECISION_DOUBLE:
        if any(d.seat == view.seat for d in view.doubles):
            return None  # answered already
        eligible = [c for c in view.hand if c.id in DOUBLING.get(view.contract, set())]
        cards = [c for c in eligible if rng.random() < 0.5]
        return table_pb2.TableCommand(answer_double=table_pb2.AnswerDoubleRequest(header=h, cards=cards))
    if turn.decision == common_pb2.DECISION_CARD:
        if not view.legal_cards:
            return None
        return table_pb2.TableCommand(
            play_card=table_pb2.PlayCardRequest(header=h, card=rng.choice(list(view.legal_cards)))
        )
    return None


@dataclass
class Acked:
    """An acknowledged action: its id, the command and the sequence the reply carried."""

    action_id: str
    command: table_pb2.TableCommand
    sequence: int


async def play_until(
    client: GatewayClient,
    table_id: str,
    players: Sequence[str],
    rng: random.Random,
    *,
    max_actions: int | None = None,
    acked: list[Acked] | None = None,
    retry: bool = False,
) -> int:
    """Drive a table through the API until it finishes (or `max_actions`); returns the actions sent."""
    admin = token("service", "admin")
    done = 0
    seeded: set[int] = set()
    while max_actions is None or done < max_actions:
        public = await _retrying(lambda: client.view(table_id, -1, admin), retry)
        if public.finished:
            break
        progressed = False
        for seat in list(public.turn.seats):
            if public.turn.client_seeds and seat in seeded:
                continue
            tok = token("player", players[seat])
            view = await _retrying(lambda s=seat, t=tok: client.view(table_id, s, t), retry)  # type: ignore[misc]
            command = choose_move(view, rng)
            if command is None:
                continue
            action_id = getattr(command, command.WhichOneof("command") or "").header.action_id
            reply = await _retrying(lambda c=command, t=tok: client.request(table_id, c, t), retry)  # type: ignore[misc]
            if acked is not None:
                acked.append(Acked(action_id, command, reply.sequence))
            if command.HasField("set_client_seed"):
                seeded.add(seat)
            done += 1
            progressed = True
            break
        if not progressed:
            await asyncio.sleep(0.01)
    return done


async def _retrying(call: Any, retry: bool) -> Any:
    """Retry a request (same bytes, same action id) while the table service restarts."""
    deadline = time.monotonic() + 90
    while True:
        try:
            return await call()
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, TimeoutError):
            if not retry or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def read_events(nc: Client, table_id: str, seat: int, after: int = 0) -> list[events_pb2.Event]:
    """Everything the owner serves a reader of `seat` (-1: the public) after `after` (issue 16:
    `read_events`, asked as a service, the way a gap is filled), all of it."""
    out: list[events_pb2.Event] = []
    while True:
        read = table_pb2.ReadEventsRequest(table_id=table_id, seat=seat, after_sequence=after)
        data = table_pb2.TableCommand(read_events=read).SerializeToString()
        headers = {TOKEN_HEADER: KEYS.token("service", "admin", ttl_s=600)}
        msg = await _retrying(
            lambda data=data, headers=headers: nc.request(  # type: ignore[misc]
                subjects.table_command(table_id), data, timeout=20, headers=headers
            ),
            True,
        )
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        assert not reply.HasField("error"), reply.error
        got = list(reply.read_events.events)
        out += got
        if not got or got[-1].sequence >= reply.read_events.sequence:
            return out
        after = got[-1].sequence


async def read_served(js: Any, table_id: str, seat: int | None = None) -> list[events_pb2.Event]:
    """What the table published of its events, as its owner serves it back: every public copy
    (`seat` None), or only the seat's own copies."""
    if seat is None:
        return await read_events(js._nc, table_id, -1)
    return [e for e in await read_events(js._nc, table_id, seat) if has_seat_copies(e, seat)]


def record_of(events: Sequence[events_pb2.Event]) -> dict[str, Any]:
    ended = [e for e in events if e.HasField("game_ended")]
    assert len(ended) == 1, "one GameEnded"
    record: dict[str, Any] = json.loads(ended[0].game_ended.record_json)
    return record


async def read_log(js: Any, table_id: str) -> list[tuple[str, str]]:
    """(action id, writer header) of every entry of a table's log, in order (the fault runs'
    lost / applied-twice / one-writer checks)."""
    out: list[tuple[str, str]] = []
    seq = 1
    while True:
        try:
            msg = await js.get_msg("TABLE_LOG", seq=seq, subject=subjects.table_log(table_id), next=True)
        except nats.js.errors.NotFoundError:
            return out
        out.append((json.loads(msg.data)["id"], (msg.headers or {}).get(WRITER_HEADER, "")))
        seq = msg.seq + 1
