"""The table option `partner_chat` (docs/rules.md §15): chosen with a partnership game's wish,
validated, carried by MatchFormed to the table and by the table to its TableCreated, where the
social service reads it (`trix.social.tables.partner_chat_of`)."""

from __future__ import annotations

import pytest

from trix.errors import InvalidArgument
from trix.matchmaking.adapters import match_formed_event
from trix.matchmaking.grpc_api import wish_from_proto
from trix.matchmaking.records import MatchRecord
from trix.social.channels import PartnerChat
from trix.social.tables import partner_chat_of
from trix.table.validation import check_create
from trix.v1 import common_pb2, matchmaking_pb2, table_pb2


def _wish(variant: int, partner_chat: int) -> matchmaking_pb2.GameWish:
    options = common_pb2.TableOptions(partner_chat=partner_chat)  # type: ignore[arg-type]
    return matchmaking_pb2.GameWish(variant=variant, options=options)  # type: ignore[arg-type]


def test_partner_chat_defaults_to_quick_phrases_during_deals() -> None:
    assert partner_chat_of(common_pb2.TableOptions()) is PartnerChat.PHRASES_DURING_DEALS
    wish, _ = wish_from_proto(_wish(common_pb2.VARIANT_TRIX_PARTNERSHIP, 0))
    assert dict(wish.options)["partner_chat"] == common_pb2.PARTNER_CHAT_PHRASES_DURING_DEALS


def test_free_text_between_partners_is_a_partnership_tables_choice_only() -> None:
    wish, _ = wish_from_proto(_wish(common_pb2.VARIANT_COMPLEX_PARTNERSHIP, common_pb2.PARTNER_CHAT_FREE_TEXT))
    assert dict(wish.options)["partner_chat"] == common_pb2.PARTNER_CHAT_FREE_TEXT
    with pytest.raises(InvalidArgument, match="partner_chat applies to partnership variants only"):
        wish_from_proto(_wish(common_pb2.VARIANT_COMPLEX, common_pb2.PARTNER_CHAT_FREE_TEXT))
    with pytest.raises(InvalidArgument, match=r"partner_chat must be 1\.\.2"):
        wish_from_proto(_wish(common_pb2.VARIANT_TRIX_PARTNERSHIP, 3))


def test_the_option_rides_match_formed_to_the_table() -> None:
    wish, _ = wish_from_proto(_wish(common_pb2.VARIANT_TRIX_PARTNERSHIP, common_pb2.PARTNER_CHAT_FREE_TEXT))
    record = MatchRecord(match_id="m1", wish=wish, seats=[])
    formed = match_formed_event(record).match_formed
    assert partner_chat_of(formed.options) is PartnerChat.FREE_TEXT


def test_the_table_refuses_an_unknown_partner_chat_value() -> None:
    request = table_pb2.CreateTableRequest(
        table_id="t1",
        variant=common_pb2.VARIANT_TRIX_PARTNERSHIP,
        seats=[common_pb2.Seat(index=i, player_id=f"p{i}") for i in range(4)],
        options=common_pb2.TableOptions(partner_chat=7),  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidArgument, match=r"options\.partner_chat: unknown value"):
        check_create(request)
