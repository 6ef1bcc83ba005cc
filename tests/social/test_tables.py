"""What the social service knows of a table from its stored results (`trix.social.tables`):
who sits where and which seats are bots, whether a deal is being played (docs/rules.md §15:
from the table's creation to its game's end, the next deal dealt as one is scored), each
player's live table (presence), and a table read back mid-game or after its end."""

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


def test_a_deal_is_in_progress_from_the_tables_creation_to_its_games_end() -> None:
    book = TableBook()
    assert set(book.apply(_created("t1"))) == set(PLAYERS)
    table = book.tables["t1"]
    assert table.partnership and table.partner_chat is PartnerChat.PHRASES_DURING_DEALS
    assert book.talk(table).deal_in_progress  # the first deal is dealt with the table
    book.apply(_event("t1", 40, deal_scored=events_pb2.DealScored()))
    assert book.talk(table).deal_in_progress  # the next one is dealt in the same step
    book.apply(_event("t1", 90, game_ended=events_pb2.GameEnded()))
    assert not book.talk(table).deal_in_progress


def test_a_result_not_after_the_last_one_applied_is_ignored() -> None:
    book = TableBook()
    book.apply(_created("t1"))
    changed = events_pb2.SeatControlChanged(seat=1, bot=True, player_id="p1")
    assert book.apply(_event("t1", 5, seat_control_changed=changed)) == ("p1",)
    back = events_pb2.SeatControlChanged(seat=1, bot=False, player_id="p1")
    assert book.apply(_event("t1", 5, seat_control_changed=back)) == ()  # the same sequence again
    assert book.role(book.tables["t1"], "p1") is Role.BOT and "p1" not in book.live_table


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


def test_a_players_live_table_ends_with_the_game_or_his_leaving_and_returns_with_his_seat() -> None:
    book = TableBook()
    book.apply(_created("t1"))
    left = events_pb2.SeatControlChanged(seat=1, bot=True, player_id="p1")  # a free table's leaver (§10)
    assert book.apply(_event("t1", 2, seat_control_changed=left)) == ("p1",)
    assert "p1" not in book.live_table and book.live_table["p0"] == "t1"
    back = events_pb2.SeatControlChanged(seat=1, bot=False, player_id="p1")  # he reclaimed his seat
    assert book.apply(_event("t1", 3, seat_control_changed=back)) == ("p1",)
    assert book.live_table["p1"] == "t1" and book.role(book.tables["t1"], "p1") is Role.SEATED
    assert set(book.apply(_event("t1", 4, game_ended=events_pb2.GameEnded()))) == set(PLAYERS)
    assert book.live_table == {} and book.tables["t1"].ended
    late = events_pb2.SeatControlChanged(seat=2, bot=False, player_id="p2")
    assert book.apply(_event("t1", 5, seat_control_changed=late)) == () and book.live_table == {}


def test_a_table_read_back_mid_game_is_mid_deal_and_after_its_end_has_nobody_playing() -> None:
    book = TableBook()
    table = book.created(_created("t1"))
    assert book.talk(table).deal_in_progress and book.live_table["p0"] == "t1"
    ended = book.created(_created("t2"), ended=True)
    assert not book.talk(ended).deal_in_progress and "t2" not in book.live_table.values()
