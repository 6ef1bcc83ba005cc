"""Helpers of the scoring tests: a real nats-server, the scoring service in-process or as a
subprocess, and a publisher of table events in the events.proto envelope."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nats
from google.protobuf.timestamp_pb2 import Timestamp
from nats.aio.client import Client

from support.keys import SuiteKeys
from support.processes import kill_process, stop_process
from support.scoring import InProcessScoring as SharedScoring
from support.scoring import scoring_env as shared_env
from support.scoring_faults import CRASH_AT_ENV
from trix.natsio import subjects
from trix.natsio.provisioning import provision
from trix.processes import free_port
from trix.runtime.identity import IDENTITY_METADATA, ROLE_PLAYER, sign
from trix.scoring.config import ScoringConfig
from trix.scoring.entrypoints import EventConsumer
from trix.scoring.service import ScoringService
from trix.v1 import common_pb2, events_pb2

REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "test-admin-token"
ADMIN = (("x-trix-admin-token", ADMIN_TOKEN),)
KEYS = SuiteKeys("scoring-tests")
"""The scoring tests' keys: a player's own stake call carries a token under the player-role key,
matchmaking's a service token signed with matchmaking's own key (scoring holds its public key)."""
PLAYERS = ["hal", "ida", "jon", "kim"]


async def until_applied(scoring: InProcessScoring, table_id: str, timeout_s: float = 30.0) -> None:
    """Wait until scoring has applied an event of `table_id` (fails after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while table_id not in scoring.service.state.tables:
        assert time.monotonic() < deadline, f"{table_id} not applied in {timeout_s:.0f}s"
        await asyncio.sleep(0.05)


async def consuming(scoring: InProcessScoring, publisher: EventPublisher, table_id: str) -> EventConsumer:
    """Scoring's consumer once it applied a first table (`table_id`) published now."""
    await publisher.table_created(table_id, PLAYERS)
    await until_applied(scoring, table_id)
    consumer = scoring.consumer
    assert consumer is not None and consumer.pull is not None
    return consumer


def identity(
    player_id: str, key: bytes = KEYS.player, ttl_s: int = 60, role: str = ROLE_PLAYER
) -> tuple[tuple[str, str], ...]:
    """The metadata of a stake call: the player's internal identity token under `key` (or, with
    role `service`, the token of the service `player_id` signed with its own key)."""
    if role == ROLE_PLAYER:
        return ((IDENTITY_METADATA, sign(key, role, player_id, time.time(), ttl_s)),)
    return ((IDENTITY_METADATA, KEYS.token(role, player_id, ttl_s)),)


def scoring_env(nats_url: str, **extra: str) -> dict[str, str]:
    return shared_env(nats_url, admin_token=ADMIN_TOKEN, keys=KEYS, **extra)


class InProcessScoring(SharedScoring):
    """The scoring service in this process (`support.scoring`) with the scoring tests' environment."""

    def __init__(self, nats_url: str, **extra: str) -> None:
        super().__init__(scoring_env(nats_url, **extra))


class ScoringProcess:
    """`python -m trix.scoring` as a subprocess on a fixed free gRPC port (with a crash plan,
    the same service with injected exits: `support.scoring_faults`)."""

    def __init__(self, workdir: Path, nats_url: str, **extra: str) -> None:
        self.grpc_port = free_port()
        self.workdir = workdir
        self.base_env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
        self.base_env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(REPO / "services"), str(REPO / "tests"), os.environ.get("PYTHONPATH")])
        )
        self.base_env.update(scoring_env(nats_url, TRIX_GRPC_PORT=str(self.grpc_port), **extra))
        self.proc: subprocess.Popen[bytes] | None = None
        self.launches = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start(self, crash_at: str = "", **extra: str) -> None:
        env = {**self.base_env, **extra}
        module = "trix.scoring"
        if crash_at:
            env[CRASH_AT_ENV] = crash_at
            module = "support.scoring_faults"
        self.launches += 1
        with open(self.workdir / f"scoring-{self.launches}.log", "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", module], env=env, stdout=log, stderr=log)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> int:
        assert self.proc is not None
        code = kill_process(self.proc)
        assert code is not None
        return code

    def stop(self) -> int | None:
        return stop_process(self.proc, grace_s=20)


class EventPublisher:
    """Publishes table events as the table service does: envelope {table_id, sequence, time, body}."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.js = nc.jetstream(timeout=10)
        self.sequences: dict[str, int] = {}

    @classmethod
    async def connect(cls, url: str) -> EventPublisher:
        nc = await nats.connect(url)
        publisher = cls(nc)
        await provision(publisher.js)
        return publisher

    async def close(self) -> None:
        await self.nc.drain()

    async def publish(
        self, table_id: str, sequence: int | None = None, *, msg_id: str | None = None, **body: Any
    ) -> int:
        if sequence is None:
            sequence = self.sequences.get(table_id, 0) + 1
        self.sequences[table_id] = max(sequence, self.sequences.get(table_id, 0))
        stamp = Timestamp()
        stamp.FromMilliseconds(1_700_000_000_000 + sequence)
        event = events_pb2.Event(table_id=table_id, sequence=sequence, time=stamp, **body)
        await self.js.publish(
            subjects.table_results(table_id),
            event.SerializeToString(),
            headers={"Nats-Msg-Id": msg_id or f"{table_id}:{sequence}"},
        )
        return sequence

    async def table_created(
        self,
        table_id: str,
        players: list[str],
        *,
        variant: int = common_pb2.VARIANT_TRIX,
        stake: int = 0,
        rake_percent: int = 0,
        tickets: list[str] | None = None,
        bots: list[bool] | None = None,
        names: list[str] | None = None,
        private: bool = False,
    ) -> int:
        bots = bots or [False] * 4
        shown = names or [""] * 4
        created = events_pb2.TableCreated(
            variant=variant,
            seats=[
                common_pb2.Seat(index=s, player_id=p, bot=bots[s], display_name=shown[s]) for s, p in enumerate(players)
            ],
            options=common_pb2.TableOptions(rake_percent=rake_percent) if rake_percent else common_pb2.TableOptions(),
            ticket_ids=tickets or [],
            private_table=private,
        )
        if stake:
            created.stake.coins = stake
        return await self.publish(table_id, table_created=created)

    async def deal_scored(
        self, table_id: str, deal_index: int, contract: int, points: list[int], totals: list[int]
    ) -> int:
        return await self.publish(
            table_id,
            deal_scored=events_pb2.DealScored(
                deal_index=deal_index,
                contract=contract,
                points=common_pb2.SeatScores(values=points),
                totals=common_pb2.SeatScores(values=totals),
            ),
        )

    async def game_ended(
        self,
        table_id: str,
        record_json: str,
        totals: list[int],
        ranking: list[int],
        *,
        left_seat: int = -1,
        sequence: int | None = None,
        msg_id: str | None = None,
    ) -> int:
        return await self.publish(
            table_id,
            sequence,
            msg_id=msg_id,
            game_ended=events_pb2.GameEnded(
                record_json=record_json,
                totals=common_pb2.SeatScores(values=totals),
                ranking=ranking,
                left_seat=left_seat,
            ),
        )


class MemoryJournal:
    """`ports.Journal` in memory, with the same dedup and expected-sequence rules as JetStream."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, bytes]] = []

    async def append(self, entry_id: str, payload: bytes, expected_last_sequence: int) -> int:
        from trix.scoring.ports import JournalConflict, JournalDuplicate

        if any(eid == entry_id for eid, _ in self.entries):
            raise JournalDuplicate(entry_id)
        if expected_last_sequence != len(self.entries):
            raise JournalConflict(f"last is {len(self.entries)}")
        self.entries.append((entry_id, payload))
        return len(self.entries)

    async def read_from(self, sequence: int) -> list[tuple[int, bytes]]:
        return [(i + 1, p) for i, (_, p) in enumerate(self.entries) if i + 1 >= sequence]


def memory_service(journal: MemoryJournal | None = None) -> ScoringService:
    config = ScoringConfig.from_env(scoring_env("none"))
    clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 1000))
    return ScoringService(config, journal or MemoryJournal(), clock=lambda: next(clock))
