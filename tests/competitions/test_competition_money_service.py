"""Paid competitions (issue 43, docs/adr/0030, docs/rules.md §13): the entry fees held by
scoring's ledger in the competition's escrow, refunds and prizes paid out of it exactly once.
Real nats-server with one user per service, the real table service and C engine, the real
scoring and competitions services on gRPC: a paid 16-entrant knockout pays its prizes only
after the review period, to humans only, coins conserved; a leaver before the start gets half
the fee back; an underfilled competition refunds everyone in full; a player without the coins
is refused before anything is held or stored; scoring down when the review period ends, a
competitions process killed after a post and before storing it, and a scoring process dead
after storing a payout and before answering pay every entry once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from competition_money_support import FEE, GRANT, DiesAfterPosting, MoneyPlatform, ScoringChild
from competitions_service_support import admin, player

from support.nats import AuthNats
from support.scoring_faults import CRASH_EXIT_CODE
from trix.v1 import competitions_pb2 as pb
from trix.v1 import scoring_pb2

HUMANS = [f"p{i:02d}" for i in range(12)]
KINDS = {
    scoring_pb2.COMPETITION_ENTRY_KIND_FEE: "hold",
    scoring_pb2.COMPETITION_ENTRY_KIND_REFUND: "refund",
    scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE: "prize",
    scoring_pb2.COMPETITION_ENTRY_KIND_HOUSE: "house",
}


@pytest.fixture
async def platform(auth_nats: AuthNats, tmp_path: Path) -> AsyncIterator[MoneyPlatform]:
    async with MoneyPlatform(auth_nats, tmp_path / "digests") as p:
        yield p


def _posted(account: scoring_pb2.GetCompetitionAccountResponse) -> list[tuple[str, str, str, int]]:
    return sorted((e.key, KINDS[e.kind], e.player_id, e.coins) for e in account.entries)


def _planned(p: MoneyPlatform, cid: str) -> list[tuple[str, str, str, int]]:
    """The ledger the competition's published file lists (`money.plan`)."""
    document = json.loads((p.digest_dir / f"{cid}.json").read_text())
    return sorted((e["key"], e["kind"], e["player"], e["coins"]) for e in document["ledger"] if e["coins"] > 0)


async def _conserved(p: MoneyPlatform, account: scoring_pb2.GetCompetitionAccountResponse) -> None:
    assert account.fees == account.refunds + account.prizes + account.house + account.escrow
    assert len({e.key for e in account.entries}) == len(account.entries)  # every key once
    t = await p.totals()
    assert t.available + t.held + t.pots + t.house + t.escrow == t.granted


async def _play_to_review(p: MoneyPlatform, request_id: str) -> tuple[str, pb.GetBracketResponse]:
    await p.grant(HUMANS)
    cid = await p.create_paid(request_id)
    await p.register(cid, HUMANS)
    assert [await p.available(h) for h in HUMANS] == [GRANT - FEE] * 12
    p.clock.ms += 60_000  # the start: 12 of 16 (75 %), bots fill the rest
    await p.until_state(cid, {pb.COMPETITION_STATE_REVIEW})
    bracket = await p.stub.GetBracket(pb.GetBracketRequest(competition_id=cid), metadata=admin())
    return cid, bracket


async def test_a_paid_knockout_pays_its_prizes_to_humans_only_after_the_review_period(platform: MoneyPlatform) -> None:
    cid, bracket = await _play_to_review(platform, "paid-1")
    held = await platform.account(cid)
    assert (held.fees, held.prizes, held.escrow) == (12 * FEE, 0, 12 * FEE)  # prizes held during the review
    platform.clock.ms += 600_000  # the review period ends
    account = await platform.until_account(cid, escrow=0)
    await platform.until_state(cid, {pb.COMPETITION_STATE_FINISHED})
    assert _posted(account) == _planned(platform, cid)  # the ledger is the published plan, each entry once
    pool = 12 * FEE
    house_fee = pool * 10 // 100
    assert (account.fees, account.refunds, account.house) == (pool, 0, house_fee)
    shares = [(pool - house_fee) * s // 100 for s in (60, 30, 10)]
    shares[0] += pool - house_fee - sum(shares)
    humans_ranked = [unit for unit in bracket.ranking if not unit.startswith("bot-")]
    winners = humans_ranked[:3]  # a place a bot would take goes to the next human
    prizes = {e.player_id: e.coins for e in account.entries if e.kind == scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE}
    assert prizes == dict(zip(winners, shares, strict=True))
    for h in HUMANS:
        assert await platform.available(h) == GRANT - FEE + prizes.get(h, 0)
    await _conserved(platform, account)


async def test_a_player_who_leaves_before_the_start_gets_half_the_fee_back(platform: MoneyPlatform) -> None:
    await platform.grant(["p00", "p01"])
    cid = await platform.create_paid("leave-1")
    await platform.register(cid, ["p00", "p01"])
    left = await platform.stub.LeaveCompetition(pb.LeaveCompetitionRequest(competition_id=cid), metadata=player("p00"))
    assert left.refund == FEE // 2
    assert await platform.available("p00") == GRANT - FEE + FEE // 2
    account = await platform.account(cid)
    assert (account.fees, account.refunds, account.escrow) == (2 * FEE, FEE // 2, 2 * FEE - FEE // 2)
    platform.clock.ms += 60_000  # 1 of 16: cancelled, the one still in gets it all back
    account = await platform.until_account(cid, escrow=0)
    assert await platform.available("p00") == GRANT - FEE // 2  # the other half stays: the house's
    assert await platform.available("p01") == GRANT
    assert (account.refunds, account.house) == (FEE // 2 + FEE, FEE - FEE // 2)
    await _conserved(platform, account)


async def test_an_underfilled_competition_refunds_every_entrant_in_full(platform: MoneyPlatform) -> None:
    players = HUMANS[:11]  # 75 % of 16 is 12
    await platform.grant(players)
    cid = await platform.create_paid("underfilled-1")
    await platform.register(cid, players)
    platform.clock.ms += 60_000
    await platform.until_state(cid, {pb.COMPETITION_STATE_CANCELLED})
    account = await platform.until_account(cid, escrow=0)
    assert (account.fees, account.refunds, account.prizes, account.house) == (11 * FEE, 11 * FEE, 0, 0)
    assert [await platform.available(p) for p in players] == [GRANT] * 11
    assert _posted(account) == _planned(platform, cid)
    await _conserved(platform, account)


async def test_a_player_without_the_coins_is_refused_before_anything_is_held(platform: MoneyPlatform) -> None:
    await platform.grant(["poor"], coins=FEE - 1)
    cid = await platform.create_paid("poor-1")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await platform.register(cid, ["poor"])
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "short of the entry fee" in (refused.value.details() or "")
    assert await platform.available("poor") == FEE - 1
    assert (await platform.account(cid)).entries == []  # nothing held
    assert list((await platform.state(cid)).entrants) == []  # nothing stored
    fixed = (await platform.state(cid)).options
    fixed.ClearField("pool")
    fixed.fixed.coins.append(12 * FEE + 1)  # more than the fees of the 12 it may start with
    with pytest.raises(grpc.aio.AioRpcError) as unpaid:
        await platform.stub.CreateCompetition(pb.CreateCompetitionRequest(options=fixed), metadata=admin())
    assert unpaid.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "prize" in (unpaid.value.details() or "")


async def test_payouts_interrupted_by_a_dead_scoring_and_a_killed_owner_are_paid_exactly_once(
    platform: MoneyPlatform,
) -> None:
    cid, _ = await _play_to_review(platform, "killed-1")
    await platform.stop_scoring()  # scoring dies: the payouts decided, no ledger call gets through
    platform.clock.ms += 600_000
    await platform.until_state(cid, {pb.COMPETITION_STATE_FINISHED})  # PayoutsSettled stored: the intent
    # The owner posts two entries, then dies before storing that scoring took them.
    real = platform.service.payments.ledger
    assert real is not None
    platform.service.payments.ledger = DiesAfterPosting(real, posts=2)
    await platform.start_scoring()  # rebuilt from its journal, on the same address
    deadline = asyncio.get_running_loop().time() + 60
    while len((await platform.account(cid)).entries) < 12 + 2:
        assert asyncio.get_running_loop().time() < deadline, "the owner posted nothing after scoring came back"
        await asyncio.sleep(0.05)
    await platform.stop_competitions()
    assert len((await platform.account(cid)).entries) == 12 + 2
    await platform.start_competitions()  # re-drives every entry not confirmed; the keys dedupe
    account = await platform.until_account(cid, escrow=0)
    assert _posted(account) == _planned(platform, cid)
    await _conserved(platform, account)
    await platform.stop_scoring()  # and a restarted scoring still knows every key: nothing doubles
    await platform.start_scoring()
    assert _posted(await platform.account(cid)) == _posted(account)


async def test_a_scoring_process_dead_after_storing_a_prize_before_answering_pays_it_once(
    auth_nats: AuthNats, tmp_path: Path
) -> None:
    """Scoring as its own process, dying (an abrupt exit) right after its journal stored the
    first payout and before it answered: the competitions owner re-drives it against the
    restarted scoring, whose journal has the key, so it is paid once."""
    wallet_entries = 2 * len(HUMANS)  # the grants, then the fees
    first_payout = f"after_append:wallet:{wallet_entries + 1}"
    async with MoneyPlatform(auth_nats, tmp_path / "digests", workdir=tmp_path, crash_at=first_payout) as p:
        cid, _ = await _play_to_review(p, "crashed-1")
        assert isinstance(p.scoring, ScoringChild) and p.scoring.proc is not None
        p.clock.ms += 600_000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while p.scoring.proc.poll() is None:  # the owner's first payout reaches it, and it dies
            assert loop.time() < deadline, "scoring never reached its crash point"
            await asyncio.sleep(0.05)
        assert p.scoring.proc.returncode == CRASH_EXIT_CODE
        await p.start_scoring()  # no crash plan: rebuilt from its journal
        account = await p.until_account(cid, escrow=0)
        assert _posted(account) == _planned(p, cid)
        await _conserved(p, account)
