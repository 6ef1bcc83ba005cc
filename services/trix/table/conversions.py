"""The engine's values and the table's times as `trix.v1` protos: cards with their text,
contracts, a seat's legal moves, table options (the engine's, with docs/rules.md defaults),
and times (milliseconds, event timestamps)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from trix import engine
from trix.rules import engine_enum, proto_enum
from trix.v1 import common_pb2

CARD_TEXT = tuple(engine.card_str(card) for card in range(52))
"""Each card's text (`engine.card_str`), worked out once: an action's events and a seat's
legal moves name a dozen cards."""


def card_pb(card: int) -> common_pb2.Card:
    return common_pb2.Card(id=card, text=CARD_TEXT[card])


def contract_pb(contract: int | None) -> common_pb2.Contract.ValueType:
    return common_pb2.Contract.ValueType(0 if contract is None else proto_enum(contract))


def legal_moves(game: engine.Game, seat: int) -> tuple[list[common_pb2.Card], list[common_pb2.Contract.ValueType]]:
    """The engine's legal actions for `seat` now: (cards, contracts), as SeatView and a seat's
    own TurnStarted carry them. On a doubling turn the cards are those the seat may double
    (docs/rules.md §7: the union of its legal answers' cards, any subset of which is legal).
    Only ever on that seat's view or own subject: legal cards reveal its hand
    (docs/rules.md §14 "its hand | yes | never")."""
    cards: list[common_pb2.Card] = []
    contracts: list[common_pb2.Contract.ValueType] = []
    doubles = 0
    for action in game.legal_actions(seat):
        if action < 52:
            cards.append(card_pb(action))
        elif action < engine.ACTION_NO_DOUBLE:
            contracts.append(contract_pb(action - 52))
        else:
            doubles |= action - engine.ACTION_NO_DOUBLE
    if doubles:
        cards.extend(card_pb(card) for card in engine.mask_cards(doubles))
    return cards, contracts


BOT_NAMES = ("Bot 1", "Bot 2", "Bot 3", "Bot 4")
"""The display name of a bot seat, by seat index (the API names bots, stable names)."""


def named_seat(seat: common_pb2.Seat) -> common_pb2.Seat:
    """The seat as shown: a bot's seat without a name gets its BOT_NAMES name."""
    if not seat.bot or seat.display_name or not 0 <= seat.index < len(BOT_NAMES):
        return seat
    named = common_pb2.Seat()
    named.CopyFrom(seat)
    named.display_name = BOT_NAMES[seat.index]
    return named


def engine_options(o: common_pb2.TableOptions) -> engine.Options:
    """TableOptions -> the engine's options; UNSPECIFIED enums and unset bools take docs/rules.md defaults."""
    return engine.Options(
        doubling=o.doubling if o.HasField("doubling") else True,  # §7
        doubling_reveal=engine.Reveal(max(0, engine_enum(o.doubling_reveal))),  # §7
        doubling_self_take=engine.SelfTake(max(0, engine_enum(o.doubling_self_take))),  # §7
        team_tiebreak=engine.TeamTiebreak(max(0, engine_enum(o.team_tiebreak))),  # §8
        partnership_trix_early_end=(
            o.partnership_trix_early_end if o.HasField("partnership_trix_early_end") else True  # §6
        ),
    )


def to_ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def set_time(stamp: Timestamp, when: datetime) -> None:
    """`stamp.FromDatetime(when)` for a UTC datetime, without protobuf's Python conversion
    through a time tuple and `calendar.timegm` (twice per action: the events' time and the
    turn's deadline): the same seconds and nanoseconds."""
    delta = when - EPOCH
    stamp.seconds = delta.days * 86400 + delta.seconds
    stamp.nanos = delta.microseconds * 1000


_last_stamp: tuple[datetime | None, Timestamp] = (None, Timestamp())


def event_stamp(now: datetime) -> Timestamp:
    """`now` as an event's time: converted once for all the events of an entry (they share
    one `now`). Never modified by callers."""
    global _last_stamp
    when, stamp = _last_stamp
    if when is not now:
        stamp = Timestamp()
        set_time(stamp, now)
        _last_stamp = (now, stamp)
    return stamp
