"""What the social service knows of a table from its public events (`trix.social.tables`):
who sits where and which seats are bots, whether a deal is being played (docs/rules.md §15),
each player's live table (presence), and the safe side for a table read back mid-game."""

from __future__ import annotations

from trix.social.channels import PartnerChat, Role
from trix.social.tables import TableBook
from trix.v1 import common_pb2, events_pb2

PLAYERS = ("p0", "p1", "p2", "p3")


def _created(
    table_id: str, variant: int = common_pb2.VARIANT_TRIX_PARTNERSHIP, bots: tuple[int, ...] = ()
) -> events_pb2.Event:
    seats = [common_pb2.Seat(index=i, player_id=p, bot=i in bots) for i, p in enumerate(PLAYERS)]
    created = events_pb2.TableCreated(variant=variant, seats=seats)  # type: ignore[arg-type]
    return events_pb2.Event(table_id=table_id, sequence=1, table_created=created)


def _event(table_id: str, sequence: int, **body: object) -> events_pb2.Event:
    return events_pb2.Event(table_id=table_id, sequence=sequence, **body)  # type: ignore[arg-type]


def test_a_deal_is_in_progress_from_dealstarted_to_dealscored() -> None:
    book = TableBook()
    assert set(book.apply(_created("t1"))) == set(PLAYERS)
    table = book.tables["t1"]
    assert table.partnership and table.partner_chat is PartnerChat.PHRASES_DURING_DEALS
    assert not book.talk(table).deal_in_progress
    book.apply(_event("t1", 2, deal_started=events_pb2.DealStarted()))
    assert book.talk(table).deal_in_progress
    book.apply(_event("t1", 3, deal_scored=events_pb2.DealScored()))
    assert not book.talk(table).deal_in_progress
    book.apply(_event("t1", 3, deal_started=events_pb2.DealStarted()))  # an old sequence again: ignored
    assert not book.talk(table).deal_in_progress


def test_bots_do_not_chat_and_anyone_else_is_a_spectator() -> None:
    book = TableBook()
    book.apply(_created("t1", bots=(3,)))
    table = book.tables["t1"]
    assert [book.role(table, p) for p in (*PLAYERS, "w")] == [
        Role.SEATED,
        Role.SEATED,
        Role.SEATED,
        Role.BOT,
        Role.SPECTATOR,
    ]
    book.apply(_event("t1", 2, seat_control_changed=events_pb2.SeatControlChanged(seat=0, bot=True, player_id="p0")))
    assert book.role(table, "p0") is Role.BOT


def test_a_players_live_table_ends_with_the_game_or_his_leaving() -> None:
    book = TableBook()
    book.apply(_created("t1"))
    assert book.apply(_event("t1", 2, seat_left=events_pb2.SeatLeft(seat=1, player_id="p1"))) == ("p1",)
    assert "p1" not in book.live_table and book.live_table["p0"] == "t1"
    assert set(book.apply(_event("t1", 3, game_ended=events_pb2.GameEnded()))) == {"p0", "p2", "p3"}
    assert book.live_table == {} and book.tables["t1"].ended


def test_a_table_read_back_mid_game_is_taken_as_mid_deal() -> None:
    book = TableBook()
    table = book.created(_created("t1"), unsure_of_deal=True)
    assert book.talk(table).deal_in_progress  # free text between partners refused until a DealScored
    ended = book.created(_created("t2"), ended=True, unsure_of_deal=True)
    assert not book.talk(ended).deal_in_progress and "t2" not in book.live_table.values()
