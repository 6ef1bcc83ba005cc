"""Competitions through the gateway (issue 43, docs/adr/0029), end to end: the whole platform
as processes (real nats-server, every service, real gRPC, the C engine), bot clients that
sign in, enter with the gateway's RPCs and follow their tables through their Session streams.

A paid 64-entrant knockout is played to its end (docs/adr/0030): a player without the coins
is refused before anything is held; every entrant's fee is held (his balance as his client
reads it); every entrant is told his first table and seat as its round is created and follows
it to its GameEnded, every winner his next table; the file downloaded through the gateway has
the published digest and passes `trix verify-competition`, and the same file with one record
changed is refused; the prizes are paid only once the review period has ended, to the final's
three, coins conserved. A points competition of 16 plays every entrant every round. A paid
underfilled competition is cancelled and refunds everyone in full; a leaver before the start
gets half his fee back."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from competition_support import trix_verify_competition
from gateway_money_support import (
    FEE,
    GRANT,
    Ledger,
    balance,
    balances,
    conserved,
    paid_options,
    postings,
    prizes_of,
    until_balances,
)
from platform_support import (
    Entrant,
    close_all,
    download,
    enter_all,
    field_of,
    free_options,
    organise,
    start_platform,
    until,
    view,
)

from trix.embedded import EmbeddedPlatform
from trix.v1 import competitions_pb2 as cpb
from trix.v1 import gateway_pb2, scoring_pb2

ENDED = {cpb.COMPETITION_STATE_REVIEW, cpb.COMPETITION_STATE_FINISHED}


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPlatform]:
    p = start_platform(tmp_path_factory.mktemp("competitions-platform"))
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
async def ledger(platform: EmbeddedPlatform) -> AsyncIterator[Ledger]:
    """Scoring's ledger on the platform, as its operators reach it."""
    scoring = Ledger(platform)
    try:
        yield scoring
    finally:
        await scoring.close()


async def _followed_to_the_end(entrants: list[Entrant], tables: list[cpb.CompetitionTable]) -> None:
    """Every human seated at a table was told so, at the right seat, and saw its GameEnded."""
    by_id = {e.player_id: e for e in entrants}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60  # on a loaded box the last notices and events may still be on their way
    for table in tables:
        for seat, player in enumerate(table.players):
            if player.startswith("bot-"):
                continue
            entrant = by_id[player]
            while not [s for s in entrant.seated if s.table_id == table.table_id]:
                assert loop.time() < deadline, f"{player} was not told of {table.table_id}"
                await asyncio.sleep(0.1)
            told = [s for s in entrant.seated if s.table_id == table.table_id]
            assert [(s.seat, s.round) for s in told] == [(seat, table.round)], (player, table.table_id)
            while table.table_id not in entrant.ended:  # his stream carries the table's last events
                assert loop.time() < deadline, (
                    f"{player} did not see {table.table_id} end: {entrant.errors} {sorted(entrant.ended)}"
                )
                await asyncio.sleep(0.1)


async def _refused_for_coins(poor: Entrant, ledger: Ledger, cid: str) -> None:
    """A player short of the entry fee is refused (FAILED_PRECONDITION, a message his client
    shows) before anything is held or stored."""
    with pytest.raises(grpc.aio.AioRpcError) as short:
        await enter_all([poor], cid)
    assert short.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "short of the entry fee" in (short.value.details() or "")
    assert await balance(poor) == FEE - 1
    assert not (await ledger.account(cid)).entries  # nothing held
    seen = await view(poor, cid)
    assert not seen.competition.entrants and not seen.HasField("me")  # nothing stored


async def _paid_after_the_review(
    entrants: list[Entrant], ledger: Ledger, finished: gateway_pb2.ViewCompetitionResponse
) -> None:
    """The prizes of the pool, paid to the final's three once the review period had ended (the
    escrow's entries and the winners' own ledgers say when), the house's share kept, every
    balance as its client reads it, coins conserved."""
    cid, ends_ms = finished.competition.competition_id, finished.competition.review_ends_at_ms
    account = await ledger.settled(cid)
    pool = len(entrants) * FEE
    winners = list(finished.bracket.ranking[:3])
    prizes = {e.player_id: e.coins for e in account.entries if e.kind == scoring_pb2.COMPETITION_ENTRY_KIND_PRIZE}
    assert prizes == dict(zip(winners, prizes_of(pool), strict=True))
    assert (account.fees, account.refunds, account.house) == (pool, 0, pool - sum(prizes.values()))
    payouts = [e for e in account.entries if e.kind != scoring_pb2.COMPETITION_ENTRY_KIND_FEE]
    assert payouts and all(e.time.ToMilliseconds() >= ends_ms for e in payouts)  # none before the end
    by_id = {e.player_id: e for e in entrants}
    for winner in winners:  # as the winner's own client sees it
        paid = [p for p in await postings(by_id[winner]) if p.posting_id == f"escrow:competition.{cid}.prize.{winner}"]
        assert len(paid) == 1 and paid[0].time.ToMilliseconds() >= ends_ms and paid[0].amount == prizes[winner]
    expected = [GRANT - FEE + prizes.get(e.player_id, 0) for e in entrants]
    assert await balances(entrants) == expected
    assert sum(expected) == len(entrants) * GRANT - account.house  # the players lost the house's share only
    await conserved(ledger, account)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while len((seen := await view(entrants[1], cid)).payouts) < len(account.entries):  # stored once confirmed
        assert loop.time() < deadline, f"the view lists {len(seen.payouts)} payouts"
        await asyncio.sleep(0.2)
    listed = sorted((p.key, p.player_id, p.coins) for p in seen.payouts)
    assert listed == sorted((e.key, e.player_id, e.coins) for e in account.entries)
    coins = {
        kind: sum(p.coins for p in seen.payouts if p.kind == kind) for kind in ("hold", "prize", "refund", "house")
    }
    assert coins["hold"] == coins["prize"] + coins["refund"] + coins["house"] == pool


async def test_a_paid_64_entrant_knockout_through_the_gateway_pays_after_its_review_and_its_file_verifies(
    platform: EmbeddedPlatform, ledger: Ledger, tmp_path: Path
) -> None:
    field = await field_of(platform.gateway_target, 65, "k")
    entrants, poor = field[:64], field[64]
    try:
        await asyncio.gather(ledger.grant(entrants), ledger.grant([poor], FEE - 1))
        organiser = entrants[0]
        options = paid_options(cpb.COMPETITION_FORMAT_KNOCKOUT, capacity=64, rounds=3, lead_ms=8_000)
        created = await organise(organiser, options)
        cid = created.competition_id
        assert created.organiser_id == organiser.player_id and len(created.seating_commitment) == 64
        await _refused_for_coins(poor, ledger, cid)
        accepted = await enter_all(entrants, cid)
        assert {a.state for a in accepted} == {cpb.ENTRANT_STATE_ACCEPTED}
        assert [a.display_name for a in accepted] == [e.name for e in entrants]  # the account's name
        assert await balances(entrants) == [GRANT - FEE] * 64  # every fee held
        held = await ledger.account(cid)
        assert (held.fees, held.escrow, len(held.entries)) == (64 * FEE, 64 * FEE, 64)
        listed = await organiser.client.stub.ListCompetitions(
            gateway_pb2.ListCompetitionsRequest(listing=cpb.COMPETITION_LISTING_OPEN), metadata=organiser.metadata
        )
        assert cid in [c.competition_id for c in listed.competitions]
        mine = await view(entrants[5], cid)
        assert mine.me.player_id == entrants[5].player_id and mine.me.state == cpb.ENTRANT_STATE_ACCEPTED

        seen = await until(organiser, cid, ENDED)
        assert seen.competition.state == cpb.COMPETITION_STATE_FINISHED or not seen.payouts  # nothing paid in review
        tables = list(seen.bracket.tables)
        assert [t.round for t in tables] == [1] * 16 + [2] * 4 + [3]
        assert all(t.ended and len(t.record_sha256) == 64 for t in tables)
        assert len(seen.bracket.ranking) == 64 and set(seen.bracket.ranking[:4]) == set(tables[-1].players)
        await _followed_to_the_end(entrants, tables)
        winners = {p for t in tables if t.round == 2 for p in t.players}
        assert {e.player_id for e in entrants if len(e.seated) == 3} == set(tables[-1].players)
        assert {e.player_id for e in entrants if len(e.seated) >= 2} == winners
        assert all(not e.errors for e in entrants), [e.errors for e in entrants if e.errors]
        # Everyone heard of the final, with its digest.
        digest = seen.competition.digest
        assert all(any(c.digest == digest for c in e.changed) for e in entrants)

        path, downloaded = await download(entrants[9], cid, tmp_path)
        assert downloaded == digest and json.loads(path.read_text())["digest"] == digest
        checked = trix_verify_competition(path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert f"fees {64 * FEE} = prizes " in checked.stdout

        document = json.loads(path.read_text())
        table_id = tables[3].table_id
        plays = document["records"][table_id]["deals"][0]["plays"]
        plays[0], plays[1] = plays[1], plays[0]  # two cards swapped: out of turn
        tampered = tmp_path / "tampered.json"
        tampered.write_text(json.dumps(document, indent=1, sort_keys=True))
        refused = trix_verify_competition(tampered)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"records: FAILED, {table_id} hash" in refused.stdout

        finished = await until(organiser, cid, {cpb.COMPETITION_STATE_FINISHED})  # the review period ends
        assert finished.competition.digest == digest and not finished.seat.table_id
        await _paid_after_the_review(entrants, ledger, finished)
    finally:
        await close_all(field)


async def test_a_points_competition_of_16_plays_everyone_every_round(platform: EmbeddedPlatform) -> None:
    entrants = await field_of(platform.gateway_target, 16, "p")
    try:
        options = free_options(cpb.COMPETITION_FORMAT_POINTS, capacity=16, rounds=2)
        cid = (await organise(entrants[0], options)).competition_id
        await enter_all(entrants, cid)
        seen = await until(entrants[3], cid, ENDED)
        assert seen.competition.state == cpb.COMPETITION_STATE_REVIEW
        # The review period: an entrant complains about a table he played (the prizes wait for
        # an operator's answer).
        complainer = entrants[7]
        his = next(t for t in seen.standings.tables if complainer.player_id in t.players)
        complaint = await complainer.client.stub.FileCompetitionComplaint(
            gateway_pb2.FileCompetitionComplaintRequest(competition_id=cid, table_id=his.table_id, text="too fast"),
            metadata=complainer.metadata,
        )
        assert complaint.complaint.player_id == complainer.player_id and complaint.complaint.table_id == his.table_id
        assert not seen.HasField("bracket") and len(seen.standings.rows) == 16
        tables = list(seen.standings.tables)
        assert [t.round for t in tables] == [1] * 4 + [2] * 4
        await _followed_to_the_end(entrants, tables)
        assert all(len(e.seated) == 2 for e in entrants)  # every entrant plays every round
        points = [r.points for r in seen.standings.rows]
        assert points == sorted(points, reverse=True)
        assert sum(points) == sum(4 - place for t in tables for place in t.places)  # 3, 2, 1, 0 by place
    finally:
        await close_all(entrants)


async def test_a_paid_underfilled_competition_is_cancelled_refunds_everyone_and_its_entrants_are_told(
    platform: EmbeddedPlatform, ledger: Ledger, tmp_path: Path
) -> None:
    field = await field_of(platform.gateway_target, 12, "u")
    entrants, leaver = field[:11], field[11]
    try:
        await ledger.grant(field)
        options = paid_options(cpb.COMPETITION_FORMAT_KNOCKOUT, capacity=16, rounds=2, lead_ms=4_000)
        cid = (await organise(entrants[0], options)).competition_id
        await enter_all(field, cid)
        # A leaver before the start gets half his fee back at once (docs/adr/0030).
        left = await leaver.client.stub.WithdrawFromCompetition(
            gateway_pb2.WithdrawFromCompetitionRequest(competition_id=cid), metadata=leaver.metadata
        )
        assert left.refund == FEE // 2
        await until_balances([leaver], [GRANT - FEE + FEE // 2])
        # A gRPC-Web client's way: the notices as a server stream of their own.
        watch = entrants[4].client.stub.WatchCompetitions(
            gateway_pb2.WatchCompetitionsRequest(), metadata=entrants[4].metadata
        )
        with pytest.raises(grpc.aio.AioRpcError) as early:
            await download(entrants[0], cid, tmp_path)
        assert early.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        seen = await until(entrants[1], cid, {cpb.COMPETITION_STATE_CANCELLED})  # 11 of 16: under 75 %
        assert not seen.bracket.tables and not seen.seat.table_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not all(e.changed for e in entrants):
            assert loop.time() < deadline, "an entrant was not told of the cancellation"
            await asyncio.sleep(0.1)
        assert {e.changed[-1].state for e in entrants} == {cpb.COMPETITION_STATE_CANCELLED}
        watched = await asyncio.wait_for(watch.read(), 10)
        assert watched.notice.player_id == entrants[4].player_id
        assert watched.notice.changed.competition_id == cid
        assert watched.notice.changed.state == cpb.COMPETITION_STATE_CANCELLED
        watch.cancel()
        assert not any(e.seated for e in entrants)
        # Everyone still in gets his whole fee back; the leaver's other half stays the house's.
        await until_balances(field, [GRANT] * 11 + [GRANT - FEE // 2])
        account = await ledger.settled(cid)
        assert (account.fees, account.refunds, account.prizes) == (12 * FEE, 11 * FEE + FEE // 2, 0)
        await conserved(ledger, account)
        path, digest = await download(entrants[2], cid, tmp_path)
        assert digest == seen.competition.digest
        checked = trix_verify_competition(path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert f"fees {12 * FEE} = prizes 0 + refunds {11 * FEE + FEE // 2} + house {FEE - FEE // 2}" in checked.stdout
    finally:
        await close_all(field)


async def test_competition_requests_through_the_gateway_get_the_services_clear_errors(
    platform: EmbeddedPlatform,
) -> None:
    [player] = await field_of(platform.gateway_target, 1, "e")
    try:
        stub, md = player.client.stub, player.metadata
        bad = free_options(cpb.COMPETITION_FORMAT_KNOCKOUT, capacity=16, rounds=7)
        with pytest.raises(grpc.aio.AioRpcError) as rounds:
            await stub.OrganiseCompetition(gateway_pb2.OrganiseCompetitionRequest(options=bad), metadata=md)
        assert rounds.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "rounds" in (rounds.value.details() or "")
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await stub.ViewCompetition(gateway_pb2.ViewCompetitionRequest(competition_id="nope"), metadata=md)
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as malformed:
            await stub.EnterCompetition(gateway_pb2.EnterCompetitionRequest(competition_id="a b"), metadata=md)
        assert malformed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await stub.ListCompetitions(gateway_pb2.ListCompetitionsRequest())
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED
        cid = (
            await organise(player, free_options(cpb.COMPETITION_FORMAT_KNOCKOUT, 16, 2, lead_ms=60_000))
        ).competition_id
        await enter_all([player], cid)
        left = await stub.WithdrawFromCompetition(
            gateway_pb2.WithdrawFromCompetitionRequest(competition_id=cid), metadata=md
        )
        assert left.refund == 0
        seen = await view(player, cid)
        assert seen.me.state == cpb.ENTRANT_STATE_LEFT_BEFORE_START
    finally:
        await close_all([player])


async def _trix(*command: str) -> tuple[int | None, str]:
    """A `trix` command run as a user runs it: (exit code, stdout and stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode, out.decode()


async def test_trix_play_lists_enters_and_follows_a_competition_to_its_table_and_final(
    platform: EmbeddedPlatform, tmp_path: Path
) -> None:
    others = await field_of(platform.gateway_target, 3, "t")
    try:
        options = free_options(cpb.COMPETITION_FORMAT_KNOCKOUT, capacity=4, rounds=1, lead_ms=6_000)
        cid = (await organise(others[0], options)).competition_id
        await enter_all(others, cid)
        trix = [sys.executable, "-m", "trix.cli", "play", "--server", platform.gateway_target]
        trix += ["--name", "terminal", "--device-file", str(tmp_path / "device")]
        code, text = await _trix(*trix, "--enter", cid)
        assert code == 0, text
        assert f"entered {cid}: accepted" in text
        table_id = f"{cid}-r1-t0"
        assert f"round 1: your table {table_id}, seat " in text  # his table opened by itself
        assert f"table {table_id} ended" in text and "final ranking: " in text and "digest " in text
        code, text = await _trix(*trix, "--competitions")
        assert code == 0, text
        assert any(line.strip().startswith(cid) and "review" in line for line in text.splitlines()), text
    finally:
        await close_all(others)
