"""What the table accepts in a command, before the engine decides: a create request's seats,
stake, seeds and options (`check_create`), a command's engine action (`action_from`), the
refusal of an action out of turn, telling no more than docs/rules.md §14 allows
(`not_your_turn`), and whose seat may be taken from the bot (`check_reclaim`). Raises
`trix.errors` domain errors whose messages a client can show."""

from __future__ import annotations

from typing import Any

from trix import engine, fairness
from trix.errors import DomainError, IllegalMove, InvalidArgument, PermissionDenied
from trix.natsio.subjects import token
from trix.rules import engine_enum
from trix.table.table import Table
from trix.v1 import common_pb2, table_pb2


def check_create(request: table_pb2.CreateTableRequest) -> None:
    if request.variant == common_pb2.VARIANT_UNSPECIFIED or request.variant not in common_pb2.Variant.values():
        raise InvalidArgument("variant is required")
    if sorted(s.index for s in request.seats) != [0, 1, 2, 3]:
        raise InvalidArgument("four seats, indexes 0..3, each once")
    if any(s.auto_play and not (s.bot and s.player_id) for s in request.seats):
        raise InvalidArgument("an auto_play seat is a player's seat played by the bot: bot and player_id")
    players = [s.player_id for s in request.seats if not s.bot or s.auto_play]
    for player in players:
        token(player, "player id")
    if len(set(players)) != len(players):
        raise InvalidArgument("a player sits once")
    if request.HasField("stake"):
        if request.stake.coins <= 0:
            raise InvalidArgument("a stake is > 0 coins")
        if any(s.bot for s in request.seats):
            raise InvalidArgument("bots never sit at paid tables (docs/rules.md §13)")
    for seat in request.seats:
        try:
            fairness.validate_client_seed(seat.client_seed)
        except fairness.FairnessError as err:
            raise InvalidArgument(str(err)) from None
    o = request.options
    for name in ("doubling_reveal", "doubling_self_take", "team_tiebreak", "partner_chat"):
        if not 0 <= getattr(o, name) <= 2:
            raise InvalidArgument(f"options.{name}: unknown value")


def action_from(kind: str, value: Any) -> int:
    """The engine action of a command: a card, a contract or a doubling answer."""
    try:
        if kind == "card":
            return int(engine.play(int(value)))
        if kind == "contract":
            if not 1 <= int(value) <= 6:
                raise InvalidArgument("unknown contract")
            return int(engine.choose(engine.Contract(engine_enum(value))))
        cards = [int(c) for c in value]
        if any(not 0 <= c < 52 for c in cards):
            raise InvalidArgument("bad double: card ids are 0..51")
        try:
            return int(engine.double(cards))
        except ValueError as err:
            # docs/rules.md §7: a card no contract doubles (3D) is refused like one this contract
            # or this hand does not allow, with the card named (one code per mistake).
            raise IllegalMove(str(err)) from None
    except DomainError:
        raise
    except (ValueError, TypeError, KeyError):
        raise InvalidArgument(f"bad {kind}") from None


def not_your_turn(table: Table) -> str:
    seats = table.to_act()
    game = table.game
    simultaneous = table.options.doubling_reveal == engine.Reveal.SIMULTANEOUS
    if game is not None and simultaneous and game.phase == engine.Phase.DOUBLING:
        return "not your turn"  # §14: do not tell who is still to answer
    return f"not your turn (seat {seats[0]} to act)" if seats else "not your turn"


def check_reclaim(table: Table, seat: int) -> None:
    """ReclaimSeat (the caller is the seat's player): docs/rules.md §10 "At a free table ... he
    may take his seat back at any time while the game lasts", and a competition's seat "played
    by the bot from the start; he takes it when he comes" (`Seat.auto_play`). A bot's own seat
    (bot fill) is nobody's to take."""
    if not table.bots[seat]:
        raise IllegalMove("the seat is already played by its player")
    if seat in table.left:
        if table.leave_ends_game:
            raise IllegalMove("only a player's own seat played by the bot on a free table can be reclaimed")
    elif not table.seats[seat].auto_play:
        raise PermissionDenied("a bot's seat is never taken over")


def hand_over_entry(table: Table, seat: int) -> dict[str, Any]:
    """HandOverSeat's log entry (the caller is the seat's player): docs/rules.md §10, at a
    competition's table the seat's player may let the bot play his seat while the game lasts
    and take it back (ReclaimSeat). Only such a seat (`Seat.auto_play`); a seat left is not his
    to hand over. The current turn is kept (`keep_turn`), as a takeover keeps it."""
    if not table.seats[seat].auto_play:
        raise PermissionDenied("only a competition's seat is handed to auto-play")
    if seat in table.left:
        raise IllegalMove("the seat was left")
    if table.bots[seat]:
        raise IllegalMove("the seat is already played by the bot")
    return {"op": "handover", "seat": seat, "keep_turn": 1}
