"""Helpers of the timers tests: a nats-server with one user per service on a free port,
the table and timers services in-process (real NATS, real gRPC on 127.0.0.1, the C
engine) sharing one injected clock, and a client that talks to tables as the gateway
would (NATS requests, presence events)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import nats
from nats.aio.client import Client

from support.clock import ManualClock
from support.keys import SuiteKeys
from trix.natsio import subjects
from trix.natsio.permissions import GATEWAY_INBOX_PREFIX
from trix.natsio.publish import publish_once
from trix.runtime.identity import TOKEN_HEADER
from trix.runtime.server import Runtime
from trix.table.__main__ import build as build_table
from trix.table.config import TableConfig
from trix.table.service import TableService
from trix.timers.__main__ import build as build_timers
from trix.timers.clock import SystemClock
from trix.timers.config import TimersConfig
from trix.timers.entrypoints import TimersNats
from trix.timers.ports import DocStore, TableCommands
from trix.timers.service import TimersService
from trix.v1 import common_pb2, events_pb2, table_pb2

KEYS = SuiteKeys("timers-tests")
"""One set for the table and the timers under test (each given its own: `SuiteKeys.env`)."""
AnyClock = ManualClock | SystemClock


def service_env(service: str, nats_url: str, **extra: str) -> dict[str, str]:
    """The environment of `service` (the table or the timers) under test, its own keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env.update(
        {
            "TRIX_NATS_URL": nats_url,
            **KEYS.env(service),
            "TRIX_GRPC_PORT": "0",
            "TRIX_METRICS_PORT": "-1",
            "TRIX_LOG_LEVEL": "warning",
            "TRIX_SHUTDOWN_GRACE_S": "0.5",
            "TRIX_DRAIN_DELAY_S": "0",
            **extra,
        }
    )
    return env


class InProcessTable:
    """The table service in the test's event loop, on the test's clock."""

    def __init__(self, nats_url: str, clock: AnyClock, seed: int = 7) -> None:
        self.config = TableConfig.from_env(service_env("table", nats_url))
        self.clock = clock
        self.rng = random.Random(seed)
        self.runtime: Any = None
        self.service: TableService | None = None

    async def start(self) -> None:
        new_seed = partial(self.rng.randbytes, 32)
        self.runtime = build_table(self.config, partial(TableService, clock=self.clock.datetime, new_seed=new_seed))
        await self.runtime.start()
        assert isinstance(self.runtime.service, TableService)
        self.service = self.runtime.service

    async def stop(self) -> None:
        if self.runtime is not None:
            await self.runtime.stop()
            self.runtime = None


class InProcessTimers:
    """One timers replica in the test's event loop, on the test's clock."""

    def __init__(
        self,
        nats_url: str,
        clock: AnyClock,
        name: str,
        commands: Callable[[TableCommands], TableCommands] | None = None,
        **env: str,
    ) -> None:
        self.config = TimersConfig.from_env(service_env("timers", nats_url, TRIX_INSTANCE=name, **env))
        self.clock = clock
        self.name = name
        self.commands = commands
        """Wraps the replica's table commands (a test's port that stops answering)."""
        self.runtime: Runtime | None = None
        self.service: TimersService | None = None

    def _new_service(self, config: TimersConfig, store: DocStore, table: TableCommands) -> TimersService:
        table = self.commands(table) if self.commands is not None else table
        return TimersService(config, store, table, clock=self.clock, replica_id=self.name)

    async def start(self) -> None:
        self.runtime = build_timers(self.config, self._new_service)
        await self.runtime.start()
        assert isinstance(self.runtime.service, TimersService)
        self.service = self.runtime.service

    @property
    def running(self) -> TimersNats:
        assert self.runtime is not None and isinstance(self.runtime.running, TimersNats)
        return self.runtime.running

    @property
    def stats(self) -> Any:
        assert self.service is not None
        return self.service.stats

    @property
    def address(self) -> str:
        assert self.runtime is not None
        return self.runtime.address

    async def stop(self) -> None:
        if self.runtime is not None:
            await self.runtime.stop()
            self.runtime = None


def token(role: str, name: str) -> str:
    return KEYS.token(role, name)


ADMIN = "admin"


class CommandError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class Client_:
    """Talks to tables as the gateway would and watches their public copies (on their feeds)."""

    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.events: dict[str, list[events_pb2.Event]] = {}

    @classmethod
    async def connect(cls, url: str) -> Client_:
        nc = await nats.connect(url, inbox_prefix=GATEWAY_INBOX_PREFIX.encode())
        client = cls(nc)
        await nc.subscribe(subjects.all_table_feeds(), cb=client._on_event)  # the gateway's: the tables' feeds
        return client

    async def _on_event(self, msg: Any) -> None:
        for event in events_pb2.TableEventBatch.FromString(msg.data).events:  # one batch per action, its public copies
            seen = self.events.setdefault(event.table_id, [])
            if seen and event.sequence <= seen[-1].sequence:
                continue  # a copy republished by a recovering table owner
            seen.append(event)

    async def request(self, table_id: str, command: table_pb2.TableCommand, tok: str) -> table_pb2.TableCommandReply:
        msg = await self.nc.request(
            subjects.table_command(table_id), command.SerializeToString(), timeout=20, headers={TOKEN_HEADER: tok}
        )
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error"):
            raise CommandError(reply.error.kind, reply.error.message)
        return reply

    async def create(
        self,
        table_id: str,
        players: Sequence[str],
        *,
        variant: int = common_pb2.VARIANT_COMPLEX,
        options: common_pb2.TableOptions | None = None,
        bots: Sequence[int] = (),
        stake: int = 0,
    ) -> None:
        request = table_pb2.CreateTableRequest(
            table_id=table_id,
            variant=common_pb2.Variant.ValueType(variant),
            options=options or common_pb2.TableOptions(),
            seats=[
                common_pb2.Seat(index=s, player_id="" if s in bots else players[s], bot=s in bots) for s in range(4)
            ],
        )
        if stake:
            request.stake.coins = stake
        await self.request(table_id, table_pb2.TableCommand(create_table=request), token("service", "table"))

    async def view(self, table_id: str, seat: int = -1, player: str = "") -> table_pb2.SeatView:
        tok = token("service", ADMIN) if seat == -1 else token("player", player)
        cmd = table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat))
        return (await self.request(table_id, cmd, tok)).get_seat_view.view

    async def presence(self, player: str, connected: bool, session: str = "s1") -> None:
        if connected:
            event = events_pb2.Event(player_connected=events_pb2.PlayerConnected(player_id=player, session_id=session))
        else:
            event = events_pb2.Event(
                player_disconnected=events_pb2.PlayerDisconnected(player_id=player, session_id=session)
            )
        await publish_once(self.nc.jetstream(), subjects.presence(player), event.SerializeToString())

    def of(self, table_id: str, kind: str) -> list[events_pb2.Event]:
        return [e for e in self.events.get(table_id, []) if e.WhichOneof("body") == kind]


def fast_options(ms: int = 50, **extra: Any) -> common_pb2.TableOptions:
    """§9 timers of `ms` milliseconds each (a whole game in seconds)."""
    return common_pb2.TableOptions(contract_timeout_ms=ms, double_timeout_ms=ms, card_timeout_ms=ms, **extra)


def legal_move(view: table_pb2.SeatView, rng: random.Random) -> table_pb2.TableCommand:
    """A legal human move for the view's seat (the view must be that seat's, with a turn)."""
    h = table_pb2.ActionHeader(
        table_id=view.table_id, seat=view.seat, action_id=f"h{rng.getrandbits(48):x}", last_seen_sequence=view.sequence
    )
    decision = view.turn.decision
    if decision == common_pb2.DECISION_CONTRACT:
        return table_pb2.TableCommand(
            choose_contract=table_pb2.ChooseContractRequest(header=h, contract=view.legal_contracts[0])
        )
    if decision == common_pb2.DECISION_DOUBLE:
        return table_pb2.TableCommand(answer_double=table_pb2.AnswerDoubleRequest(header=h, cards=[]))
    return table_pb2.TableCommand(play_card=table_pb2.PlayCardRequest(header=h, card=view.legal_cards[0]))
