"""The scoring clients of the matchmaking service: the wallet (HoldStake / ReleaseStake) and
the players' ratings (the leaderboard row), over gRPC.

Owns `ScoringWallet`, the production `Wallet` the service's logic is given (docs/rules.md §13:
the stake is held when a paid ticket is made and released on cancel or expiry). Maps
scoring's statuses to domain errors: a short balance (scoring's FAILED_PRECONDITION) becomes
ResourceExhausted, the status `trix.errors` gives an insufficient balance; an unreachable
scoring Unavailable. Calls carry the player's identity token when a key is set.

Owns `ScoringRatings`, the production `RatingSource`: scoring's rating of a player in a
variant (the leaderboard's conservative estimate mu - 3 sigma, ADR 0004) mapped onto the
matchmaking's scale, `default + scale * rating`, so a new player (no row, or the model's
starting estimate 0) gets the default. Known ratings are cached for a minute; after a
failure scoring is not asked again for a few seconds, so a slow or dead scoring costs an
enqueue nothing and matching goes on with default ratings.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import grpc
import structlog

from trix import tls
from trix.errors import ResourceExhausted, Unavailable
from trix.runtime.identity import IDENTITY_METADATA, PLAYER_METADATA, PLAYER_TOKEN, ServiceSigner
from trix.v1 import scoring_pb2, scoring_pb2_grpc

SHORT_BALANCE = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED)

log = structlog.get_logger("trix.matchmaking.wallet")


class LazyStub:
    """A scoring stub whose channel is opened on first use, inside the serving event loop: a
    grpc.aio channel made before it (the service is built before the loop runs) is bound to
    another loop and every call on it fails."""

    def __init__(self, target: str, ca_file: str = "") -> None:
        self.target = target
        self.ca_file = ca_file
        """Verify scoring's TLS certificate against this CA; empty: plain text."""
        self.channel: grpc.aio.Channel | None = None
        self._stub: scoring_pb2_grpc.ScoringServiceAsyncStub | None = None

    def stub(self) -> scoring_pb2_grpc.ScoringServiceAsyncStub:
        if self._stub is None:
            self.channel = tls.aio_channel(self.target, self.ca_file)
            self._stub = scoring_pb2_grpc.ScoringServiceStub(self.channel)
        return self._stub

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
        self.channel = None
        self._stub = None


class ScoringWallet:
    """`trix.matchmaking.ports.Wallet` over `trix.v1.ScoringService`."""

    configured = True

    def __init__(
        self, target: str, signer: ServiceSigner | None = None, timeout_s: float = 5.0, *, ca_file: str = ""
    ) -> None:
        self.lazy = LazyStub(target, ca_file)
        self.signer = signer
        """Matchmaking's own tokens (its key, its name: `Keys.signer`); None sends none."""
        self.timeout_s = timeout_s

    def _metadata(self, player_id: str) -> tuple[tuple[str, str], ...]:
        """A service-role token (`service.matchmaking`): matchmaking holds and releases a
        player's stake for them, also when no call of that player is in flight (retention)."""
        if self.signer is None:
            return ()
        return ((IDENTITY_METADATA, self.signer.token()),)

    async def hold(self, player_id: str, ticket_id: str, coins: int) -> None:
        """Held on the player's own request: their token of the call being served goes along
        (scoring holds nothing on matchmaking's word alone)."""
        request = scoring_pb2.HoldStakeRequest(player_id=player_id, ticket_id=ticket_id, amount=coins)
        own = PLAYER_TOKEN.get()
        metadata = self._metadata(player_id) + (((PLAYER_METADATA, own),) if own else ())
        try:
            await self.lazy.stub().HoldStake(request, timeout=self.timeout_s, metadata=metadata)
        except grpc.aio.AioRpcError as err:
            if err.code() in SHORT_BALANCE:
                raise ResourceExhausted(f"the balance does not cover the stake of {coins} coins") from None
            raise Unavailable("the wallet is unavailable; retry") from None

    async def release(self, player_id: str, ticket_id: str) -> None:
        request = scoring_pb2.ReleaseStakeRequest(player_id=player_id, ticket_id=ticket_id)
        try:
            await self.lazy.stub().ReleaseStake(request, timeout=self.timeout_s, metadata=self._metadata(player_id))
        except grpc.aio.AioRpcError as err:
            if err.code() in (grpc.StatusCode.NOT_FOUND,):
                return  # nothing was held for this ticket
            raise Unavailable("the wallet is unavailable; retry") from None

    async def close(self) -> None:
        await self.lazy.close()


class ScoringRatings:
    """`trix.matchmaking.ports.RatingSource` over `trix.v1.ScoringService.GetLeaderboard`."""

    def __init__(
        self,
        target: str,
        *,
        default: float = 1500.0,
        scale: float = 20.0,
        timeout_s: float = 0.3,
        cache_s: float = 60.0,
        backoff_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        ca_file: str = "",
    ) -> None:
        self.lazy = LazyStub(target, ca_file)
        self.default = default
        self.scale = scale
        self.timeout_s = timeout_s
        self.cache_s = cache_s
        self.backoff_s = backoff_s
        self.clock = clock
        self.cache: dict[tuple[str, int], tuple[float, float | None]] = {}
        self.down_until = 0.0
        self.failures = 0

    async def rating(self, player_id: str, variant: int) -> float | None:
        now = self.clock()
        hit = self.cache.get((player_id, variant))
        if hit is not None and hit[0] > now:
            return hit[1]
        if now < self.down_until:
            return None  # scoring failed a moment ago: the default, without waiting
        request = scoring_pb2.GetLeaderboardRequest(variant=variant, page_size=1, around_player_id=player_id)  # type: ignore[arg-type]
        try:
            response = await self.lazy.stub().GetLeaderboard(request, timeout=self.timeout_s)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:  # no rated game yet: a new player
                value = None
            else:
                self.failures += 1
                self.down_until = now + self.backoff_s
                log.warning("scoring ratings unavailable; default ratings for a while", code=err.code().name)
                return None
        else:
            row = next((e for e in response.entries if e.player_id == player_id), None)
            value = None if row is None else self.default + self.scale * row.rating
        if len(self.cache) > 100_000:
            self.cache.clear()
        self.cache[(player_id, variant)] = (now + self.cache_s, value)
        return value

    async def close(self) -> None:
        await self.lazy.close()
