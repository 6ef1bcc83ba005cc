"""`make fault-competitions` (issue 43, docs/adr/0026): one knockout of ENTRANTS entrants (256 by
default: 4 rounds, 85 tables) on 2 competitions replicas and 2 table replicas, real processes on
one real nats-server, while the competition's owner (the replica holding its shard's lease) is
SIGKILLed again and again (at least `--kills`, spread over the competition's events) and a table
replica `--table-kills` times (at each round's start, then between), each restarted at once.

The entrants register through the CompetitionsService API (either replica, owner or not; the
gateway's competition RPCs are not on main yet); their seats are played by the table's bot
(docs/rules.md §10's seat of a player not there; a player reclaims it through the gateway).
Paid by default (docs/adr/0030: scoring runs, every entrant is granted coins and pays the fee
into the competition's escrow; prizes, the house's share and refunds come out of it after the
final): `coins_conserved` says that the escrow took in every fee and paid out exactly that, each
key once, and that the wallets' totals still add up to what was granted. `--free` (FREE=1):
entry fee 0, scoring not run, `coins_conserved` null.

A kill comes only while the competition runs (its last stored event is not the final's);
`takeover_s` is from a kill to another replica holding the competition's lease. Measured from what is stored:
rounds started twice, entrants seated twice in a round (in the RoundStarted events and at the
tables really created), entrants lost (accepted at the start, not in the final ranking), tables
created twice, every table's record checked by `trix verify-competition` (trix verify's
whole-record checks, then the whole competition re-run), the competition finished and settled,
the kills by kind.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from competition_money_support import ADMIN, ADMIN_TOKEN, FEE, GRANT, ScoringChild
from competition_replicas import Replicas, audit, competitions_replicas, owner, reader, stub
from competition_support import trix_verify_competition
from competitions_service_support import admin, free_knockout, player

from support.nats import AuthNats
from support.ports import wait_port
from support.scoring import scoring_env
from support.table import KEYS
from trix.natsio import names, subjects
from trix.processes import free_port
from trix.v1 import competitions_pb2 as pb
from trix.v1 import scoring_pb2, scoring_pb2_grpc

REGISTER_AT_ONCE = 16


async def _register(stubs: list[Any], cid: str, entrants: int) -> None:
    """Every entrant registered through either replica (a fenced append is retried)."""

    async def one(i: int) -> None:
        request = pb.RegisterEntrantRequest(competition_id=cid, display_name=f"p{i}")
        for attempt in range(50):
            try:
                await stubs[(i + attempt) % len(stubs)].RegisterEntrant(request, metadata=player(f"p{i:03d}"))
                return
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                await asyncio.sleep(0.05 * (attempt + 1))
        raise RuntimeError(f"p{i:03d} never registered")

    for start in range(0, entrants, REGISTER_AT_ONCE):
        await asyncio.gather(*(one(i) for i in range(start, min(entrants, start + REGISTER_AT_ONCE))))


async def _grant(ledger: Any, entrants: int) -> None:
    async def one(i: int) -> None:
        grant = scoring_pb2.GrantRequest(player_id=f"p{i:03d}", amount=GRANT, grant_id=f"grant-p{i:03d}")
        await ledger.Grant(grant, metadata=ADMIN, wait_for_ready=True, timeout=60)

    for start in range(0, entrants, REGISTER_AT_ONCE):
        await asyncio.gather(*(one(i) for i in range(start, min(entrants, start + REGISTER_AT_ONCE))))


async def _conserved(ledger: Any, cid: str, entrants: int, events: list[pb.CompetitionEvent]) -> bool:
    """The escrow took every fee once and paid out exactly the settlement (each key once, the
    payouts posted by the owner's ticks after PayoutsSettled: waited for), the wallets' totals
    still what was granted."""
    settled = [e.payouts_settled for e in events if e.HasField("payouts_settled")]
    if not settled:
        return False
    planned = {e.key: int(e.coins) for e in settled[-1].entries}
    deadline = time.monotonic() + 120
    while True:
        account = await ledger.GetCompetitionAccount(
            scoring_pb2.GetCompetitionAccountRequest(competition_id=cid), metadata=ADMIN, timeout=60
        )
        if account.escrow == 0 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    keys = [e.key for e in account.entries]
    posted = {e.key: int(e.coins) for e in account.entries}
    totals = await ledger.GetWalletTotals(scoring_pb2.GetWalletTotalsRequest(), metadata=ADMIN, timeout=60)
    return (
        len(keys) == len(set(keys))
        and posted == planned
        and account.fees == FEE * entrants
        and account.fees == account.refunds + account.prizes + account.house
        and account.escrow == 0
        and totals.granted == GRANT * entrants
        and totals.granted == totals.available + totals.held + totals.pots + totals.house + totals.escrow
    )


class Faults:
    """Watches the competition's stored events and kills on them: the owner after every few
    events its owner appended (spread over what is left), a table replica at each round's start
    and after every second owner kill."""

    def __init__(
        self, args: argparse.Namespace, comps: Replicas, tables: Replicas, cid: str, tables_total: int
    ) -> None:
        self.args = args
        self.comps = comps
        self.tables = tables
        self.cid = cid
        self.rng = random.Random(args.seed)
        self.expected = tables_total + args.rounds + 2  # every table ended, every round, finished, settled
        self.read = 0
        self.started = 0
        """The stream sequence of round 1's RoundStarted (0: not yet): the owner is killed only after it."""
        self.kill_seq = 0
        self.every = 1
        self.killed_at: tuple[float, str] | None = None
        """The last owner kill not taken over yet: when, and the killed replica."""
        self.takeovers: list[float] = []
        self.finished = False
        self.settled = False

    def _next_every(self, now_seq: int) -> None:
        left_kills = max(1, self.args.kills - self.comps.kills)
        left_events = max(1, self.expected - (now_seq - self.started))
        self.every = self.rng.randint(1, max(1, left_events // (2 * left_kills)))

    def _kill_table(self) -> None:
        if self.tables.kills < self.args.table_kills:
            self.tables.restart(self.rng.randrange(self.tables.count))

    async def _kill_owner(self, nc: Any, now_seq: int) -> None:
        current = await owner(nc, self.cid)
        index = None if current is None else self.comps.index_of(current)
        if index is None:
            return  # changing hands: again on the next look
        self.comps.restart(index)
        self.killed_at = (time.monotonic(), str(current))
        self.kill_seq = now_seq
        self._next_every(now_seq)
        if self.comps.kills % 2 == 0:
            self._kill_table()

    async def _read(self, nc: Any, upto: int) -> None:
        """The events stored up to `upto` not read yet: the round starts."""
        js = nc.jetstream()
        subject = subjects.competition_events(self.cid)
        while self.read < upto:
            msg = await js.get_msg(names.COMPETITIONS_STREAM, seq=self.read + 1, subject=subject, next=True)
            self.read = int(msg.seq or 0)
            event = pb.CompetitionEvent.FromString(msg.data or b"")
            self.finished = self.finished or event.HasField("finished")
            self.settled = self.settled or event.HasField("payouts_settled")
            if event.HasField("round_started"):
                self.started = self.started or self.read
                self._kill_table()

    async def run(self, nc: Any, deadline: float) -> None:
        js = nc.jetstream()
        subject = subjects.competition_events(self.cid)
        while time.monotonic() < deadline:
            last = await js.get_last_msg(names.COMPETITIONS_STREAM, subject)
            now_seq = int(last.seq or 0)
            await self._read(nc, now_seq)
            if self.killed_at is not None and (await owner(nc, self.cid)) not in (None, self.killed_at[1]):
                self.takeovers.append(time.monotonic() - self.killed_at[0])  # another replica holds the lease
                self.killed_at = None
            if self.settled:
                return
            if not self.started or self.finished or self.comps.kills >= self.args.kills:
                await asyncio.sleep(0.05)
                continue
            if not self.kill_seq:
                self.kill_seq = self.started
                self._next_every(now_seq)
            if now_seq - self.kill_seq >= self.every:
                await self._kill_owner(nc, now_seq)
            await asyncio.sleep(0.05)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    began = time.monotonic()
    server = AuthNats(workdir)
    server.start()
    digests = workdir / "digests"
    scoring_port = free_port()
    scoring = ScoringChild(
        scoring_env(server.url("scoring"), admin_token=ADMIN_TOKEN, keys=KEYS, TRIX_GRPC_PORT=str(scoring_port)),
        workdir,
    )
    paid = {} if args.free else {"TRIX_SCORING_TARGET": f"127.0.0.1:{scoring_port}"}
    comps = competitions_replicas(server, workdir, digests, tick_s=0.2, **paid)
    tables = Replicas(server, workdir, "table", "trix.table", 2, {"TRIX_TABLE_SNAPSHOT_EVERY": "13"})
    channels: list[grpc.aio.Channel] = []
    nc = None
    try:
        if not args.free:
            scoring.start()
            wait_port(scoring_port, 60)
        tables.start_all()
        comps.start_all()
        nc = await reader(server)
        stubs = []
        for i in range(comps.count):
            channel, s = stub(comps.port(i))
            channels.append(channel)
            stubs.append(s)
        now = time.time_ns() // 1_000_000
        lead_ms = 10_000 + 60 * args.entrants
        options = free_knockout(now, capacity=4**args.rounds, rounds=args.rounds)
        options.registration_closes_at_ms, options.starts_at_ms = now + lead_ms - 1_000, now + lead_ms
        if not args.free:
            options.entry_fee = FEE
            options.pool.shares_percent.extend([60, 30, 10])
            options.pool.house_fee_percent = 10
            channels.append(grpc.aio.insecure_channel(f"127.0.0.1:{scoring_port}"))
            ledger = scoring_pb2_grpc.ScoringServiceStub(channels[-1])
            await _grant(ledger, args.entrants)
        created = await stubs[0].CreateCompetition(
            pb.CreateCompetitionRequest(options=options, request_id="fault-competitions"), metadata=admin()
        )
        cid = created.competition.competition_id
        await _register(stubs, cid, args.entrants)
        tables_total = sum(4**r for r in range(args.rounds))
        faults = Faults(args, comps, tables, cid, tables_total)
        await faults.run(nc, began + args.timeout)
        for i in range(comps.count):  # the last restarted replicas answer before the audit
            wait_port(comps.port(i), 60)
        result = await audit(nc, cid)
        coins = None if args.free else await _conserved(ledger, cid, args.entrants, result["events"])
        path = digests / f"{cid}.json"
        verified = False
        if result["finished"] and path.exists():
            checked = await asyncio.to_thread(trix_verify_competition, path)
            verified = checked.returncode == 0
            if not verified:
                print(checked.stdout[-2000:], checked.stderr[-2000:], file=sys.stderr)
        return {
            "entrants": args.entrants,
            "rounds": args.rounds,
            "mode": "free" if args.free else f"paid, fee {FEE}",
            "played_by": "CompetitionsService API; seats played by the table's bot",
            "entrants_lost": result["entrants_lost"],
            "entrants_seated_twice": result["entrants_seated_twice"],
            "rounds_started_twice": result["rounds_started_twice"],
            "tables_created_twice": result["tables_created_twice"],
            "coins_conserved": coins,
            "records_verified": verified,
            "tables": result["tables"],
            "tables_ended": result["tables_ended"],
            "finished": result["finished"] and result["settled"],
            "kills": {"competitions_owner": comps.kills, "table": tables.kills},
            "takeover_s": {
                "max": round(max(faults.takeovers, default=0.0), 2),
                "median": round(sorted(faults.takeovers)[len(faults.takeovers) // 2], 2) if faults.takeovers else 0.0,
            },
            "seconds": round(time.monotonic() - began, 1),
        }
    finally:
        for channel in channels:
            await channel.close()
        if nc is not None:
            await nc.close()
        comps.stop_all()
        tables.stop_all()
        scoring.stop()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entrants", type=int, default=256, help="entrants (4, 16, 64 or 256: a full knockout)")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs of the competition's owner (at least)")
    parser.add_argument("--table-kills", type=int, default=5, help="SIGKILLs of a table replica")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--timeout", type=float, default=1200.0, help="the run's bound in seconds")
    parser.add_argument("--free", action="store_true", help="entry fee 0, no scoring (default: paid)")
    args = parser.parse_args()
    rounds = round(math.log(args.entrants, 4)) if args.entrants > 1 else 0
    if args.entrants < 4 or 4**rounds != args.entrants or rounds > 4:
        parser.error("--entrants: 4, 16, 64 or 256 (a full knockout of tables of four)")
    args.rounds = rounds
    with tempfile.TemporaryDirectory(prefix="trix-fault-competitions-") as tmp:
        report = asyncio.run(run(args, Path(tmp)))
    ok = (
        report["finished"]
        and report["records_verified"]
        and report["kills"]["competitions_owner"] >= args.kills
        and report["kills"]["table"] >= args.table_kills
        and not any(report[k] for k in ("entrants_lost", "entrants_seated_twice", "rounds_started_twice"))
        and not report["tables_created_twice"]
        and report["coins_conserved"] is not False
        and report["tables"] == report["tables_ended"] == sum(4**r for r in range(rounds))
    )
    print(json.dumps(report, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
