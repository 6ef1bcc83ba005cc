"""The competitions service's proto <-> core translation (proto/trix/v1/competitions.proto).

Owns: `CompetitionOptions` from and to its proto (enum names to the core's words), a table of
the core's `Seating` as `CompetitionTable`, and each round's `MatchFormed`: the event the table
service turns into its create command (ADR 0020), with the competition's table options, its
speed's turn timers (docs/rules.md §9) and bots' seats named by their competition ids.
"""

from __future__ import annotations

from trix.competitions.model import Seating, is_bot
from trix.competitions.options import CompetitionError, CompetitionOptions, FixedPrize, PoolPrize
from trix.v1 import common_pb2, competitions_pb2, events_pb2

_SPEEDS = {
    competitions_pb2.COMPETITION_SPEED_UNSPECIFIED: "normal",
    competitions_pb2.COMPETITION_SPEED_NORMAL: "normal",
    competitions_pb2.COMPETITION_SPEED_FAST: "fast",
    competitions_pb2.COMPETITION_SPEED_SLOW: "slow",
}
_FORMATS = {
    competitions_pb2.COMPETITION_FORMAT_KNOCKOUT: "knockout",
    competitions_pb2.COMPETITION_FORMAT_POINTS: "points",
}
_ADMISSIONS = {competitions_pb2.ADMISSION_APPROVAL: "approval"}
_SEATINGS = {competitions_pb2.SEATING_ORDER_RATING: "rating"}
_VISIBILITIES = {competitions_pb2.VISIBILITY_PRIVATE: "private"}


def _name(enum: object, value: int, prefix: str, default: str) -> str:
    if value == 0:
        return default
    try:
        return str(enum.Name(value)).removeprefix(prefix)  # type: ignore[attr-defined]
    except ValueError:
        return f"unknown {value}"


def options_from_proto(o: competitions_pb2.CompetitionOptions) -> CompetitionOptions:
    """The core's options (validated by the caller: `validate_options`)."""
    if o.format not in _FORMATS:
        raise CompetitionError("format: knockout or points", "format")
    prize: FixedPrize | PoolPrize = FixedPrize(tuple(o.fixed.coins))
    if o.WhichOneof("prize") == "pool":
        fee = o.pool.house_fee_percent if o.pool.HasField("house_fee_percent") else PoolPrize(()).house_fee_percent
        prize = PoolPrize(tuple(o.pool.shares_percent), fee)
    return CompetitionOptions(
        variant=_name(common_pb2.Variant, o.variant, "VARIANT_", ""),
        format=_FORMATS[o.format],
        rounds=o.rounds,
        capacity=o.capacity,
        starts_at_ms=o.starts_at_ms,
        registration_closes_at_ms=o.registration_closes_at_ms,
        entry_fee=o.entry_fee,
        prize=prize,
        speed=_SPEEDS.get(o.speed, f"unknown {o.speed}"),
        doubling=o.doubling if o.HasField("doubling") else True,
        doubling_reveal=_name(common_pb2.DoublingReveal, o.doubling_reveal, "DOUBLING_REVEAL_", "SEQUENTIAL"),
        doubling_self_take=_name(common_pb2.DoublingSelfTake, o.doubling_self_take, "DOUBLING_SELF_TAKE_", "NOBODY"),
        admission=_ADMISSIONS.get(o.admission, "auto"),
        seating=_SEATINGS.get(o.seating, "random"),
        bot_fill=o.bot_fill,
        chat=o.chat,
        visibility=_VISIBILITIES.get(o.visibility, "listed"),
    )


def competition_table(competition_id: str, seating: Seating) -> competitions_pb2.CompetitionTable:
    return competitions_pb2.CompetitionTable(
        round=seating.round,
        index=seating.index,
        table_id=seating.table_id(competition_id),
        players=list(seating.players),
    )


def match_formed(
    competition_id: str,
    options: CompetitionOptions,
    seating: Seating,
    names: dict[str, str],
    *,
    await_players: bool = True,
) -> events_pb2.Event:
    """The MatchFormed of one of the competition's tables (message id: the table id).

    A bot's seat carries its competition id (`bot-N`), so the table's record names it as the
    bracket does. A human's seat starts played by auto-play (`Seat.auto_play`: docs/rules.md §10
    "a seat whose player has not come is played by the bot from the start; he takes it when he
    comes"): opening his table through the gateway takes it (ReclaimSeat); a bot's is nobody's.
    With `await_players` the first deal waits for the seats' seeds (§11's seed turn, the
    contract timer), so the bots do not play the game out before its players have opened it.
    Every table of a competition, free or paid, is `leave_ends_game`: §10 "At a competition's
    table ... leaving is as at a paid table": the leaver ends the game, placed last, and is out."""
    table_id = seating.table_id(competition_id)
    table_options = common_pb2.TableOptions(
        doubling=options.doubling,
        doubling_reveal=common_pb2.DoublingReveal.Value(f"DOUBLING_REVEAL_{options.doubling_reveal}"),
        doubling_self_take=common_pb2.DoublingSelfTake.Value(f"DOUBLING_SELF_TAKE_{options.doubling_self_take}"),
    )
    for decision, ms in options.turn_timeouts_ms().items():
        setattr(table_options, f"{decision}_timeout_ms", ms)
    seats = [
        common_pb2.Seat(
            index=i, player_id=p, bot=True, auto_play=not is_bot(p), display_name="" if is_bot(p) else names.get(p, "")
        )
        for i, p in enumerate(seating.players)
    ]
    formed = events_pb2.MatchFormed(
        match_id=table_id,
        table_id=table_id,
        variant=common_pb2.Variant.Value(f"VARIANT_{options.variant}"),
        options=table_options,
        seats=seats,
        private_table=options.visibility == "private",
        await_client_seeds=await_players,
        leave_ends_game=True,
    )
    return events_pb2.Event(match_formed=formed)
