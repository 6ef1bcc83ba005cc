"""The one in-process scoring service of the tests: the production wiring
(`trix.scoring.__main__.build`) in the test's event loop, real NATS, real gRPC on loopback,
and a stub to it. Each `start` builds a new runtime from `env` (a restart is a new process's
start); `stop` may be called again, or before `start`. `scoring_env` is the environment of a
scoring under test (in this process or as a subprocess).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc

from support.keys import SuiteKeys
from trix.runtime.identity import IDENTITY_METADATA, PLAYER_METADATA, ROLE_PLAYER, ROLE_SERVICE
from trix.runtime.server import Runtime
from trix.scoring import entrypoints
from trix.scoring.__main__ import build
from trix.scoring.config import ScoringConfig
from trix.scoring.service import ScoringService
from trix.v1 import scoring_pb2, scoring_pb2_grpc


def scoring_env(nats_url: str, *, admin_token: str, keys: SuiteKeys, **extra: str) -> dict[str, str]:
    """A scoring's environment: no metrics port, short shutdown, warnings only, and the keys the
    callers of the test sign with (a stake call carries a token signed with one of them)."""
    env = {
        "TRIX_NATS_URL": nats_url,
        "TRIX_METRICS_PORT": "-1",
        "TRIX_SCORING_ADMIN_TOKEN": admin_token,
        **keys.env("scoring"),
        "TRIX_SHUTDOWN_GRACE_S": "1",
        "TRIX_DRAIN_DELAY_S": "0",
        "TRIX_LOG_LEVEL": "warning",
        # The tests publish hand-made records (no seeds, one play); the replay of real records
        # before settling or rating is proven in tests/security (issue 18).
        "TRIX_SCORING_REPLAY_RECORDS": "0",
    }
    env.update(extra)
    return env


class InProcessScoring:
    """The scoring service (see the module docstring)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.config = ScoringConfig.from_env(self.env)
        self.runtime: Runtime | None = None
        self.channel: grpc.aio.Channel | None = None
        self._stub: scoring_pb2_grpc.ScoringServiceStub | None = None

    @property
    def address(self) -> str:
        assert self.runtime is not None, "scoring is not started"
        return self.runtime.address

    @property
    def stub(self) -> scoring_pb2_grpc.ScoringServiceStub:
        assert self._stub is not None, "scoring is not started"
        return self._stub

    @property
    def service(self) -> ScoringService:
        """The service the runtime built (once started; kept after a stop)."""
        assert self.runtime is not None and isinstance(self.runtime.service, ScoringService)
        return self.runtime.service

    @property
    def consumer(self) -> entrypoints.EventConsumer | None:
        running = self.runtime.running if self.runtime is not None else None
        return running if isinstance(running, entrypoints.EventConsumer) else None

    async def start(self) -> scoring_pb2_grpc.ScoringServiceStub:
        self.config = ScoringConfig.from_env(self.env)
        self.runtime = build(self.config)
        await self.runtime.start()
        self.channel = grpc.aio.insecure_channel(self.runtime.address)
        self._stub = scoring_pb2_grpc.ScoringServiceStub(self.channel)
        return self._stub

    async def stop(self) -> None:
        if self.channel is not None:
            await self.channel.close()
            self.channel = None
        if self.runtime is not None:
            await self.runtime.stop()


async def balances(
    stub: scoring_pb2_grpc.ScoringServiceStub, admin_token: str, players: Sequence[str]
) -> list[tuple[int, int]]:
    """Each player's (available, held) coins, read as the scoring admin."""
    metadata = (("x-trix-admin-token", admin_token),)
    out = []
    for p in players:
        b = await stub.GetBalance(scoring_pb2.GetBalanceRequest(player_id=p), metadata=metadata)
        out.append((b.available, b.held))
    return out


async def hold_stakes(
    stub: scoring_pb2_grpc.ScoringServiceStub, keys: SuiteKeys, players: Sequence[str], stake: int, prefix: str
) -> list[str]:
    """Each player's stake held for a ticket of theirs as matchmaking holds it (its service
    token, with the player's own token of the call it serves, issue 42); the ticket ids."""
    tickets = [f"{prefix}-{p}" for p in players]
    for player, ticket in zip(players, tickets, strict=True):
        metadata = (
            (IDENTITY_METADATA, keys.token(ROLE_SERVICE, "matchmaking", 60)),
            (PLAYER_METADATA, keys.token(ROLE_PLAYER, player, 60)),
        )
        hold = scoring_pb2.HoldStakeRequest(player_id=player, ticket_id=ticket, amount=stake)
        await stub.HoldStake(hold, metadata=metadata)
    return tickets
