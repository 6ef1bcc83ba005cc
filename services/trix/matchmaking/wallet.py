"""The wallet client of the matchmaking service: scoring's HoldStake / ReleaseStake over gRPC.

Owns `ScoringWallet`, the production `Wallet` the service's logic is given (RULES.md §13:
the stake is held when a paid ticket is made and released on cancel or expiry). Maps
scoring's statuses to domain errors: a short balance becomes ResourceExhausted, an
unreachable scoring Unavailable. Calls carry the player's identity token when a key is set.
"""

from __future__ import annotations

import time

import grpc

from trix.errors import ResourceExhausted, Unavailable
from trix.runtime.identity import IDENTITY_METADATA, sign
from trix.v1 import scoring_pb2, scoring_pb2_grpc

SHORT_BALANCE = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED)


class ScoringWallet:
    """`trix.matchmaking.service.Wallet` over `trix.v1.ScoringService`."""

    def __init__(self, target: str, token_key: str = "", timeout_s: float = 5.0) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = scoring_pb2_grpc.ScoringServiceStub(self.channel)
        self.token_key = token_key.encode()
        self.timeout_s = timeout_s

    def _metadata(self, player_id: str) -> tuple[tuple[str, str], ...]:
        if not self.token_key:
            return ()
        return ((IDENTITY_METADATA, sign(self.token_key, player_id, int(time.time()) + 60)),)

    async def hold(self, player_id: str, ticket_id: str, coins: int) -> None:
        request = scoring_pb2.HoldStakeRequest(player_id=player_id, ticket_id=ticket_id, amount=coins)
        try:
            await self.stub.HoldStake(request, timeout=self.timeout_s, metadata=self._metadata(player_id))
        except grpc.aio.AioRpcError as err:
            if err.code() in SHORT_BALANCE:
                raise ResourceExhausted(f"the balance does not cover the stake of {coins} coins") from None
            raise Unavailable("the wallet is unavailable; retry") from None

    async def release(self, player_id: str, ticket_id: str) -> None:
        request = scoring_pb2.ReleaseStakeRequest(player_id=player_id, ticket_id=ticket_id)
        try:
            await self.stub.ReleaseStake(request, timeout=self.timeout_s, metadata=self._metadata(player_id))
        except grpc.aio.AioRpcError as err:
            if err.code() in (grpc.StatusCode.NOT_FOUND,):
                return  # nothing was held for this ticket
            raise Unavailable("the wallet is unavailable; retry") from None

    async def close(self) -> None:
        await self.channel.close()
