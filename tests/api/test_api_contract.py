"""What the gateway API says it does, it does (issue 40, "Found by that client" 1-8): each
test is a client of the protos alone, native gRPC over HTTP/2 through the Envoy edge, on the
platform as `trix up --edge` runs it, with one or more games against bots."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from api_support import CONTRACT_DOUBLES, DOUBLING_CARDS, TIMEOUT_S, Player, seated
from google.rpc import error_details_pb2, status_pb2

from trix.v1 import common_pb2, events_pb2, gateway_pb2, matchmaking_pb2

pytestmark = pytest.mark.timeout(300)

MOVES = ("contract_chosen", "double_answered", "card_played")


async def _doubling_turn(player: Player, needs: str = "held") -> events_pb2.TurnStarted:
    """Play until a doubling turn of the player's seat where he holds a doubling card of the
    contract (`needs="held"`) or where one is not his (`needs="missing"`)."""
    while True:
        turn = await player.my_turn()
        if turn.decision == common_pb2.DECISION_DOUBLE:
            eligible = CONTRACT_DOUBLES[player.contract]
            if (eligible & player.hand) if needs == "held" else (eligible - player.hand):
                return turn
        await player.play_paced(turn)


# -- 1: doubling turns carry the cards the seat may double ---------------------------------------


async def test_a_doubling_turn_lists_the_cards_the_seat_may_double(edge: str) -> None:
    async with seated(edge, "legal-doubles") as player:
        turn = await _doubling_turn(player)
        expected = CONTRACT_DOUBLES[player.contract] & player.hand  # docs/rules.md §7
        assert {c.id for c in turn.legal_cards} == expected, (turn.legal_cards, expected)
        view = await player.view()
        assert view.turn.decision == common_pb2.DECISION_DOUBLE
        assert {c.id for c in view.legal_cards} == expected
        action = player.action(turn)
        action.answer_double.cards.extend(turn.legal_cards)  # every card listed may be doubled
        answer = await player.act_paced(action)
        assert answer.HasField("accepted"), answer
        player.done = turn.turn_seq


# -- 2: one code for a refused double, the card named ---------------------------------------------


async def test_every_refused_double_is_failed_precondition_naming_the_card(edge: str) -> None:
    async with seated(edge, "bad-doubles") as player:
        turn = await _doubling_turn(player, needs="missing")
        never = common_pb2.Card(id=14)  # 3D: no contract doubles it
        missing = min(CONTRACT_DOUBLES[player.contract] - player.hand)  # a doubling card not held
        for card, text in ((never.id, "3D"), (missing, DOUBLING_CARDS[missing])):
            action = player.action(turn)
            action.answer_double.cards.add(id=card)
            answer = await player.act_paced(action)
            assert answer.HasField("error"), answer
            assert (answer.error.code, answer.error.message) == (
                "FAILED_PRECONDITION",
                f"card cannot be doubled ({text})",
            )
        answer = await player.act_paced(player.action(turn))  # "no double" is still his answer to give
        assert answer.HasField("accepted"), answer
        player.done = turn.turn_seq


# -- 3: rate limits say how long to wait, and reads never cost the turn ---------------------------


def _retry_delay_s(err: grpc.aio.AioRpcError) -> float:
    details = dict(err.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert isinstance(details, bytes), err.trailing_metadata()
    status = status_pb2.Status.FromString(details)
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    info = error_details_pb2.RetryInfo()
    assert status.details and status.details[0].Unpack(info)
    return float(info.retry_delay.ToNanoseconds()) / 1e9


async def test_a_rate_limit_names_its_delay_and_reads_never_cost_the_turn(edge: str) -> None:
    async with seated(edge, "flooder") as player:
        turn = await player.my_turn()
        # A client that reads as fast as it can: its reads are refused with the delay to wait...
        rids = [await player.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest())) for _ in range(80)]
        answers: dict[str, gateway_pb2.SessionResponse] = {}
        while len(answers) < len(rids):
            message = await player.until(lambda m: m.request_id in rids)
            answers[message.request_id] = message
        refused = [m.error for m in answers.values() if m.HasField("error")]
        assert refused and all(e.code == "RESOURCE_EXHAUSTED" for e in refused), refused[:1]
        delay = refused[0].retry_delay.ToNanoseconds() / 1e9
        assert 0 < delay <= 1.0, refused[0]
        # ...and its turn is still its own: the action goes through at once.
        await player.play(turn)
        # The same through the plain calls: RESOURCE_EXHAUSTED with google.rpc.RetryInfo.
        request = gateway_pb2.GetViewRequest(table_id=player.table_id)
        refusal = None
        for _ in range(400):  # one after another, as fast as the answers come
            try:
                await player.stub.GetView(request, metadata=player.metadata, timeout=TIMEOUT_S)
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
                refusal = err
                break
        assert refusal is not None, "400 reads in a row were never limited"
        wait = _retry_delay_s(refusal)
        assert 0 < wait <= 1.0
        turn = await player.my_turn()
        await player.play(turn)  # the reads' refusals cost no action
        await asyncio.sleep(wait)  # the delay given is enough
        await player.stub.GetView(request, metadata=player.metadata, timeout=TIMEOUT_S)


# -- 4: resume is acknowledged ------------------------------------------------------------------


async def test_a_resume_is_acknowledged_with_its_request_id_before_its_events(edge: str) -> None:
    async with seated(edge, "resumer") as player:
        await player.play_turns(3)
        seen = player.last_sequence  # the table waits for this player's next move: nothing more comes
        player.call.cancel()  # the network drops
        await player.open()
        for after in (seen - 3, 0):
            rid = await player.send(gateway_pb2.SessionRequest(resume=gateway_pb2.EventsRequest(after_sequence=after)))
            first = await player.read()
            assert first.request_id == rid and first.HasField("resumed"), first
            assert (first.resumed.table_id, first.resumed.seat, first.resumed.after_sequence) == (
                player.table_id,
                player.seat,
                after,
            )
            events = [(await player.until(lambda m: m.HasField("event"))).event for _ in range(3)]
            assert [e.sequence for e in events] == [after + 1, after + 2, after + 3]  # no gap, in order
            if after == 0:
                assert events[0].HasField("table_created")  # 0: the whole history


# -- 5: last_seen_sequence: 0 is not checked, a stale one is ABORTED ------------------------------


async def test_last_seen_sequence_zero_is_not_checked_and_an_older_turn_is_aborted(edge: str) -> None:
    async with seated(edge, "sequences") as player:
        turn = await player.my_turn()
        stale = await player.act(player.action(turn, last_seen=turn.turn_seq - 1))
        assert stale.HasField("error"), stale
        assert (stale.error.code, stale.error.message) == (
            "ABORTED",
            f"stale sequence: the turn started at {turn.turn_seq}",
        )
        unchecked = await player.act(player.action(turn, last_seen=0))
        assert unchecked.HasField("accepted"), unchecked
        player.done = turn.turn_seq
        turn = await player.my_turn()
        await player.play(turn)  # the sequence seen, as before


# -- 6: a bot's move is not automatic -----------------------------------------------------------


async def test_a_bot_move_is_not_automatic(edge: str) -> None:
    async with seated(edge, "bots-moves") as player:
        await player.play_turns(6)
        bots = {s.index for s in player.seats if s.bot}
        assert len(bots) == 3

        def seat_of(e: events_pb2.Event) -> int:
            body = getattr(e, e.WhichOneof("body") or "")
            return int(body.answer.seat) if e.HasField("double_answered") else int(body.seat)

        moves = [e for e in player.events if e.WhichOneof("body") in MOVES]
        by_bots = [e for e in moves if seat_of(e) in bots]
        assert len(by_bots) >= 6, moves
        automatic = [e for e in moves if getattr(e, e.WhichOneof("body") or "").automatic]
        assert not automatic, automatic  # nobody timed out


# -- 7: tickets ---------------------------------------------------------------------------------


async def test_ticket_updates_carry_their_request_id_each_state_once_and_no_seat_before_matching(edge: str) -> None:
    async with seated(edge, "tickets", match=False) as player:
        tickets = await player.matched(request_id="find-1")
        states = [m.ticket.state for m in tickets]
        assert len(states) == len(set(states)), states  # each state once
        assert all(m.request_id == "find-1" for m in tickets), tickets
        for m in tickets:
            if m.ticket.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                assert 0 <= m.ticket.seat <= 3
            else:
                assert m.ticket.seat == -1, m.ticket  # no seat yet: never seat 0
        assert states[0] == matchmaking_pb2.TICKET_STATE_SEARCHING, states  # the find_match's answer
        assert states[-1] == matchmaking_pb2.TICKET_STATE_MATCHED, states


# -- 8: bots are named and play with no turn of their own ----------------------------------------


async def test_bots_have_stable_names_and_no_turn_started(edge: str) -> None:
    async with seated(edge, "named-bots") as player:
        await player.play_turns(6)
        bots = {s.index: s.display_name for s in player.seats if s.bot}
        assert bots == {s: f"Bot {s + 1}" for s in bots} and len(bots) == 3, player.seats
        view = await player.view()
        assert {s.index: s.display_name for s in view.seats if s.bot} == bots
        turns = [e.turn_started for e in player.events if e.HasField("turn_started")]
        assert turns and not any(set(t.seats) & set(bots) for t in turns), turns  # as TurnStarted says


# -- 9: a finished game frees its players at once ("play again") ---------------------------------


async def test_a_player_whose_game_ended_can_play_again_at_once_but_not_while_seated(edge: str) -> None:
    async with seated(edge, "again") as player:
        first = player.table_id
        await player.my_turn()  # the table is up and plays
        # Leaving a free table hands the seat to a bot: four bots end the game in that step.
        leave = gateway_pb2.Action(table_id=first, action_id="again-leave", leave=True)
        assert (await player.act(leave)).HasField("accepted")
        view = await player.view()
        while not view.finished:  # the view is the leaver's to read still (the stream is not)
            await asyncio.sleep(0.05)
            view = await player.view()
        # Well inside the minute after the match (TRIX_MATCHMAKING_SEAT_GRACE_S): no refusal.
        wish = matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_COMPLEX)
        hosted = await player.stub.CreatePrivateGame(
            gateway_pb2.CreatePrivateGameRequest(wish=wish), metadata=player.metadata, timeout=TIMEOUT_S
        )
        assert hosted.code and hosted.ticket.ticket_id
        await player.stub.CancelMatch(
            gateway_pb2.CancelMatchRequest(ticket_id=hosted.ticket.ticket_id),
            metadata=player.metadata,
            timeout=TIMEOUT_S,
        )
        await player.matched()
        assert player.table_id and player.table_id != first
        # Seated at that live table now: both refused, naming it (no player at two live tables).
        for call in (
            player.stub.FindMatch(gateway_pb2.FindMatchRequest(wish=wish), metadata=player.metadata, timeout=TIMEOUT_S),
            player.stub.CreatePrivateGame(
                gateway_pb2.CreatePrivateGameRequest(wish=wish), metadata=player.metadata, timeout=TIMEOUT_S
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION, refused.value
            assert f"already seated at table {player.table_id}" in str(refused.value.details())
