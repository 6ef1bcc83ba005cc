"""The wallet fault test (issue 8): paid tables settle while the scoring service is killed.

A real nats-server and `python -m trix.scoring` as a subprocess. This process plays
matchmaking and the table service: it grants coins, holds stakes over gRPC (and holds
and releases other tickets concurrently, as cancelled tickets), and publishes each
table's TableCreated, DealScored and GameEnded events (some redelivered, some repeated
under a new sequence, some leavers, some tables that never start). Meanwhile the
service is killed: SIGKILL at random moments, and injected exits
(`support.scoring_faults`) before the journal append, after it, and after the projection
update. After the run, the journal is audited on its own and against the service:

- coins_accounted (balances + held + pots + house, from the service) == coins_granted;
- applied_twice: settlements (or postings, or entries) found twice in the journal;
- negative_balances: accounts that went below zero at any posting;
- every player's balance equals this process's own model of docs/rules.md §13;
- a clean restart rebuilds the same totals and balances.

`python tests/scoring/fault_wallet.py --tables 1000 --kills 20` is `make fault-wallet`;
its last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from scoring_support import ADMIN, EventPublisher, ScoringProcess, identity

from support.nats import NatsServer
from support.scoring_faults import CRASH_EXIT_CODE, CRASH_KINDS, CRASH_POINTS
from trix.scoring.adapters import JetStreamJournal
from trix.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc

RETRY_CODES = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
PARTNERSHIP = {common_pb2.VARIANT_TRIX_PARTNERSHIP, common_pb2.VARIANT_COMPLEX_PARTNERSHIP}
STARTED_RECORD = json.dumps({"format": "trix-game/1", "deals": [{"plays": [{"seat": 0, "card": "2C"}]}]})
NEVER_STARTED_RECORD = json.dumps({"format": "trix-game/1", "deals": []})


class ShortBalance(Exception):
    pass


@dataclass
class Model:
    """This process's own bookkeeping of docs/rules.md §13, to compare with the service."""

    available: dict[str, int] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)
    granted: int = 0
    house: int = 0

    def move(self, player: str, available: int, held: int) -> None:
        self.available[player] = self.available.get(player, 0) + available
        self.held[player] = self.held.get(player, 0) + held


class Harness:
    def __init__(self, workdir: Path, tables: int, kills: int, seed: int, players: int) -> None:
        self.workdir = workdir
        self.tables = tables
        self.kills = kills
        self.rng = random.Random(seed)
        self.players = [f"p{i:03d}" for i in range(players)]
        self.nats = NatsServer(workdir)
        self.proc: ScoringProcess | None = None
        self.model = Model()
        self.crashes = 0
        self.sigkills = 0
        self.injected = 0
        self.paid_tables = 0
        self.skipped = 0
        self.done = False
        self.errors: list[str] = []
        self.stub: scoring_pb2_grpc.ScoringServiceStub | None = None
        self.launch_plan = ""
        self.kill_at = 0.0

    # -- the service under test --------------------------------------------------------

    def launch(self) -> None:
        assert self.proc is not None
        plan = ""
        self.kill_at = 0.0
        if self.crashes < self.kills:
            if self.rng.random() < 0.5:
                point = self.rng.choice(CRASH_POINTS)
                kind = self.rng.choice(CRASH_KINDS)
                plan = f"{point}:{kind}:{self.rng.randint(1, 12)}"
                self.kill_at = time.monotonic() + 8.0  # fallback if the plan is not reached
            else:
                self.kill_at = time.monotonic() + self.rng.uniform(1.2, 3.5)
        self.launch_plan = plan
        self.proc.start(crash_at=plan)

    async def supervise(self) -> None:
        assert self.proc is not None
        while not self.done:
            await asyncio.sleep(0.02)
            if not self.proc.alive():
                rc = self.proc.proc.returncode if self.proc.proc else None
                if rc == CRASH_EXIT_CODE:
                    self.injected += 1
                elif rc == -9:
                    self.sigkills += 1
                else:
                    self.errors.append(f"scoring exited with {rc} (plan {self.launch_plan!r})")
                self.crashes += 1
                self.launch()
            elif self.kill_at and time.monotonic() >= self.kill_at and self.crashes < self.kills:
                self.proc.kill()

    async def call(self, method: str, request: Any, *, admin: bool = False) -> Any:
        assert self.stub is not None
        deadline = time.monotonic() + 120
        while True:
            # a stake call carries its player's identity token, as matchmaking signs it
            metadata = (
                ADMIN if admin else identity(request.player_id) if "Stake" in method or "Balance" in method else None
            )
            try:
                return await getattr(self.stub, method)(request, metadata=metadata, timeout=5)
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    raise ShortBalance(err.details()) from None
                if err.code() not in RETRY_CODES or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    # -- matchmaking and tables ------------------------------------------------------------

    async def grant_all(self, amount: int) -> None:
        for player in self.players:
            await self.call(
                "Grant", scoring_pb2.GrantRequest(player_id=player, amount=amount, grant_id=f"g-{player}"), admin=True
            )
            self.model.move(player, amount, 0)
            self.model.granted += amount

    async def hold(self, player: str, ticket: str, amount: int) -> bool:
        try:
            await self.call(
                "HoldStake", scoring_pb2.HoldStakeRequest(player_id=player, ticket_id=ticket, amount=amount)
            )
        except ShortBalance:
            return False
        self.model.move(player, -amount, amount)
        return True

    async def release(self, player: str, ticket: str, amount: int) -> None:
        await self.call("ReleaseStake", scoring_pb2.ReleaseStakeRequest(player_id=player, ticket_id=ticket))
        self.model.move(player, amount, -amount)

    async def cancelled_tickets(self) -> None:
        """Tickets held and released concurrently with the tables (cancelled or expired)."""
        rng = random.Random(self.rng.random())
        n = 0
        while not self.done:
            n += 1
            player = rng.choice(self.players)
            amount = rng.randint(1, 30)
            ticket = f"x{n}"
            if await self.hold(player, ticket, amount):
                await asyncio.sleep(rng.uniform(0, 0.05))
                await self.release(player, ticket, amount)
            await asyncio.sleep(rng.uniform(0, 0.02))

    @staticmethod
    def places(values: list[int]) -> list[int]:
        return [1 + sum(1 for v in values if v > mine) for mine in values]

    def outcome(self, variant: int, left: int) -> tuple[list[int], list[int]]:
        totals = [self.rng.choice((-100, -25, 0, 50, 75)) for _ in range(4)]
        if variant in PARTNERSHIP:
            teams = [totals[0] + totals[2], totals[1] + totals[3]]
            if left >= 0:  # §10: the leaver's team is ranked last
                teams[left % 2] = -(10**6)
            team_place = self.places(teams)
            return totals, [team_place[s % 2] for s in range(4)]
        if left >= 0:  # §10: the leaver is 4, the others ranked among themselves
            ranking = self.places([t if s != left else -(10**6) for s, t in enumerate(totals)])
            return totals, ranking
        return totals, self.places(totals)

    async def table(self, pub: EventPublisher, i: int) -> None:
        table = f"T{i:05d}"
        seats = self.rng.sample(self.players, 4)
        stake = self.rng.choice((10, 25, 33, 50, 100))
        rake = self.rng.choice((0, 0, 5, 10))
        variant = self.rng.choice(list(common_pb2.Variant.values())[1:])
        tickets = [f"{table}-{s}" for s in range(4)]
        for seat, player in enumerate(seats):
            if not await self.hold(player, tickets[seat], stake):
                for back in range(seat):
                    await self.release(seats[back], tickets[back], stake)
                self.skipped += 1
                return
        await pub.table_created(table, seats, variant=variant, stake=stake, rake_percent=rake, tickets=tickets)
        for p in seats:
            self.model.move(p, 0, -stake)
        pot = 4 * stake
        self.paid_tables += 1
        roll = self.rng.random()
        if roll < 0.1:  # §13: ended before its first deal was dealt -> every stake refunded
            await pub.game_ended(table, NEVER_STARTED_RECORD, [0, 0, 0, 0], [])
            for p in seats:
                self.model.move(p, stake, 0)
            return
        left = self.rng.randrange(4) if roll < 0.2 else -1
        totals, ranking = self.outcome(variant, left)
        await pub.deal_scored(table, 0, common_pb2.CONTRACT_KING, totals, totals)
        await pub.game_ended(table, STARTED_RECORD, totals, ranking, left_seat=left)
        if self.rng.random() < 0.1:  # redelivered under the same sequence
            await pub.game_ended(table, STARTED_RECORD, totals, ranking, sequence=3, msg_id=f"{table}:again")
        if self.rng.random() < 0.05:  # a second GameEnded under a new sequence: settles nothing
            await pub.game_ended(table, STARTED_RECORD, totals, [1, 1, 1, 1])
        # §13: rake to the house, the prize split among the seats ranked 1, the
        # remainder to the lowest winning seat.
        rake_coins = pot * rake // 100
        winners = [s for s in range(4) if ranking[s] == 1]
        share, remainder = divmod(pot - rake_coins, len(winners))
        self.model.house += rake_coins
        for k, s in enumerate(winners):
            self.model.move(seats[s], share + (remainder if k == 0 else 0), 0)

    # -- the run ------------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        started = time.monotonic()
        self.nats.start()
        self.proc = ScoringProcess(self.workdir, self.nats.url)
        pub = await EventPublisher.connect(self.nats.url)
        channel = grpc.aio.insecure_channel(self.proc.address)
        self.stub = scoring_pb2_grpc.ScoringServiceStub(channel)
        try:
            self.launch()
            supervisor = asyncio.ensure_future(self.supervise())
            await self.grant_all(10_000)
            side = asyncio.ensure_future(self.cancelled_tickets())
            for i in range(self.tables):
                # Spread the kills over the run: never more than one behind schedule.
                while self.crashes < self.kills * i // self.tables - 1:  # noqa: ASYNC110 - polls the supervisor's count
                    await asyncio.sleep(0.02)
                await self.table(pub, i)
            while self.crashes < self.kills:  # noqa: ASYNC110 - polls the supervisor's count
                await asyncio.sleep(0.05)
            self.done = True
            await asyncio.gather(side, supervisor)
            if not self.proc.alive():
                self.launch()
            result = await self.check(pub)
        finally:
            self.done = True
            await channel.close()
            await pub.close()
            if self.proc.proc is not None:
                self.proc.stop()
            self.nats.stop()
        result["seconds"] = round(time.monotonic() - started, 1)
        return result

    async def totals(self) -> Any:
        return await self.call("GetWalletTotals", scoring_pb2.GetWalletTotalsRequest(), admin=True)

    async def settled(self) -> Any:
        deadline = time.monotonic() + 120
        while True:
            t = await self.totals()
            if t.settlements == self.paid_tables and t.running_tables == 0:
                return t
            if time.monotonic() > deadline:
                raise TimeoutError(f"settled {t.settlements} of {self.paid_tables}")
            await asyncio.sleep(0.1)

    async def balances(self) -> dict[str, tuple[int, int]]:
        out = {}
        for p in self.players:
            b = await self.call("GetBalance", scoring_pb2.GetBalanceRequest(player_id=p))
            out[p] = (b.available, b.held)
        return out

    async def check(self, pub: EventPublisher) -> dict[str, Any]:
        live = await self.settled()
        live_balances = await self.balances()
        audit = await audit_journal(pub)
        expected = {p: (self.model.available.get(p, 0), self.model.held.get(p, 0)) for p in self.players}
        mismatches = sum(1 for p in self.players if live_balances[p] != expected[p])
        if self.model.house != live.house:
            mismatches += 1
        accounted = sum(a + h for a, h in live_balances.values()) + live.pots + live.house
        # A clean restart rebuilds the same state from the journal.
        assert self.proc is not None
        self.proc.stop()
        self.launch()
        rebuilt = await self.settled()
        rebuilt_balances = await self.balances()
        restart_equal = rebuilt == live and rebuilt_balances == live_balances
        return {
            "tables": self.tables,
            "paid_tables_settled_expected": self.paid_tables,
            "tables_skipped_short_balance": self.skipped,
            "sigkills": self.sigkills,
            "injected_exits": self.injected,
            "model_mismatches": mismatches,
            "restart_equal": restart_equal,
            "journal_entries": audit["entries"],
            "coins_granted_journal": audit["granted"],
            "coins_accounted_journal": audit["accounted"],
            "errors": self.errors,
            "settlements": live.settlements,
            "crashes": self.crashes,
            "coins_granted": live.granted,
            "coins_accounted": accounted,
            "applied_twice": audit["applied_twice"],
            "negative_balances": audit["negative_balances"],
        }


async def audit_journal(pub: EventPublisher) -> dict[str, int]:
    """Re-add every posting of the journal on its own, in order."""
    entries = await JetStreamJournal(pub.js).read_from(1)
    balances: dict[str, int] = {}
    negative: set[str] = set()
    settlements: dict[str, int] = {}
    entry_ids: dict[str, int] = {}
    posting_ids: dict[str, int] = {}
    for _, payload in entries:
        entry = json.loads(payload)
        entry_ids[entry["id"]] = entry_ids.get(entry["id"], 0) + 1
        if entry.get("settlement"):
            settlements[entry["settlement"]] = settlements.get(entry["settlement"], 0) + 1
        for p in entry.get("postings", []):
            posting_ids[p["id"]] = posting_ids.get(p["id"], 0) + 1
            balances[p["debit"]] = balances.get(p["debit"], 0) - p["amount"]
            balances[p["credit"]] = balances.get(p["credit"], 0) + p["amount"]
            for account in (p["debit"], p["credit"]):
                if account != "mint" and balances[account] < 0:
                    negative.add(account)
    twice = sum(1 for n in settlements.values() if n > 1)
    twice += sum(1 for n in posting_ids.values() if n > 1) + sum(1 for n in entry_ids.values() if n > 1)
    return {
        "entries": len(entries),
        "granted": -balances.get("mint", 0),
        "accounted": sum(v for k, v in balances.items() if k != "mint"),
        "applied_twice": twice,
        "negative_balances": len(negative),
    }


def run_fault(workdir: Path, *, tables: int, kills: int, seed: int, players: int = 40) -> dict[str, Any]:
    return asyncio.run(Harness(workdir, tables, kills, seed, players).run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--players", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fault-wallet-") as tmp:
        result = run_fault(Path(tmp), tables=args.tables, kills=args.kills, seed=args.seed, players=args.players)
    ok = (
        result["coins_accounted"] == result["coins_granted"] == result["coins_granted_journal"]
        and result["applied_twice"] == 0
        and result["negative_balances"] == 0
        and result["model_mismatches"] == 0
        and result["restart_equal"]
        and not result["errors"]
        and result["crashes"] >= args.kills
        and result["settlements"] == result["paid_tables_settled_expected"]
    )
    summary_keys = ("settlements", "crashes", "coins_granted", "coins_accounted", "applied_twice", "negative_balances")
    print(json.dumps({k: v for k, v in result.items() if k not in summary_keys}), file=sys.stderr)
    print(json.dumps({k: result[k] for k in summary_keys}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
