"""Friendships and the chat's channel rules (issue 44): request / accept / decline / remove
/ block, the blocked player never told, blocking hiding chat, invites and direct messages;
spectators never in the players' channel, no free text between partners during a deal
under the default option (docs/rules.md §15), quick phrases always, bots never."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trix.errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied
from trix.social import friends
from trix.social.channels import (
    ChannelKind,
    ChannelState,
    LineKind,
    PartnerChat,
    Role,
    TableTalk,
    may_read,
    may_write,
    write_refusal,
)
from trix.social.friends import NoticeKind, View, pair_of, view_of


def befriended() -> friends.Pair:
    pair = friends.request(pair_of("amal", "badr"), "amal").pair
    return friends.accept(pair, "badr").pair


def test_a_request_accepted_makes_friends_and_tells_each_side_once() -> None:
    sent = friends.request(pair_of("amal", "badr"), "amal")
    assert sent.notices == (friends.Notice("badr", NoticeKind.REQUEST_RECEIVED, "amal"),)
    assert (view_of(sent.pair, "amal"), view_of(sent.pair, "badr")) == (View.REQUESTED, View.INCOMING)
    accepted = friends.accept(sent.pair, "badr")
    assert accepted.notices == (friends.Notice("amal", NoticeKind.REQUEST_ACCEPTED, "badr"),)
    assert view_of(accepted.pair, "amal") is view_of(accepted.pair, "badr") is View.FRIENDS


def test_crossing_requests_make_friends() -> None:
    pair = friends.request(pair_of("amal", "badr"), "amal").pair
    step = friends.request(pair, "badr")
    assert step.pair.friends and step.notices[0].kind is NoticeKind.REQUEST_ACCEPTED


def test_decline_and_remove_are_silent() -> None:
    pair = friends.request(pair_of("amal", "badr"), "amal").pair
    declined = friends.decline(pair, "badr")
    assert declined.notices == () and view_of(declined.pair, "amal") is View.NONE
    removed = friends.remove(befriended(), "amal")
    assert removed.notices == () and view_of(removed.pair, "badr") is View.NONE


def test_the_wrong_transitions_are_refused_with_a_status() -> None:
    pair = pair_of("amal", "badr")
    with pytest.raises(NotFound):
        friends.accept(pair, "badr")
    with pytest.raises(NotFound):
        friends.decline(friends.request(pair, "amal").pair, "amal")  # his own request
    with pytest.raises(AlreadyExists):
        friends.request(befriended(), "amal")
    with pytest.raises(AlreadyExists):
        friends.request(friends.request(pair, "amal").pair, "amal")
    with pytest.raises(NotFound):
        friends.remove(pair, "amal")
    with pytest.raises(InvalidArgument):
        pair_of("amal", "amal")
    with pytest.raises(InvalidArgument):
        view_of(pair, "carim")


def test_the_blocked_player_is_never_told() -> None:
    """After a block the blocked player's view is exactly what a removal (or an unanswered
    request) shows, no notice goes, and his later requests are kept but never delivered."""
    blocked = friends.block(befriended(), "badr")
    assert blocked.notices == ()
    assert view_of(blocked.pair, "amal") == view_of(friends.remove(befriended(), "badr").pair, "amal")
    assert view_of(blocked.pair, "badr") is View.BLOCKED
    again = friends.request(blocked.pair, "amal")
    assert again.notices == ()  # not delivered
    assert view_of(again.pair, "amal") is View.REQUESTED  # as any unanswered request
    assert view_of(again.pair, "badr") is View.BLOCKED  # the blocker does not see it
    with pytest.raises(NotFound):
        friends.accept(again.pair, "badr")


def test_a_pending_request_of_the_blocked_stays_pending_in_his_view_only() -> None:
    pair = friends.request(pair_of("amal", "badr"), "amal").pair
    blocked = friends.block(pair, "badr").pair
    assert view_of(blocked, "amal") is View.REQUESTED
    unblocked = friends.unblock(blocked, "badr").pair
    assert view_of(unblocked, "badr") is View.INCOMING


def test_blocking_hides_chat_stops_invites_direct_messages_and_presence_both_ways() -> None:
    pair = befriended()
    assert friends.may_message(pair, "amal") and friends.may_invite(pair, "badr")
    assert friends.sees_presence(pair, "amal") and not friends.hides_lines(pair, "amal")
    blocked = friends.block(pair, "badr").pair
    for player in ("amal", "badr"):
        assert not friends.may_message(blocked, player)
        assert not friends.may_invite(blocked, player)
        assert not friends.sees_presence(blocked, player)
        assert friends.hides_lines(blocked, player)
    with pytest.raises(PermissionDenied):
        friends.request(blocked, "badr")  # the blocker unblocks first
    with pytest.raises(AlreadyExists):
        friends.block(blocked, "badr")


def test_only_friends_see_presence_and_take_invites() -> None:
    strangers = pair_of("amal", "badr")
    assert not friends.sees_presence(strangers, "amal")
    assert not friends.may_invite(strangers, "amal")
    assert not friends.may_message(friends.request(strangers, "amal").pair, "amal")


PLAYERS = ChannelState(ChannelKind.TABLE_PLAYERS)
SPECTATORS = ChannelState(ChannelKind.TABLE_SPECTATORS)


def partnership(deal_in_progress: bool, option: PartnerChat = PartnerChat.PHRASES_DURING_DEALS) -> ChannelState:
    return ChannelState(ChannelKind.TABLE_PLAYERS, TableTalk(True, deal_in_progress, option))


def test_a_spectator_never_writes_into_the_players_channel() -> None:
    for line in LineKind:
        assert not may_write(PLAYERS, Role.SPECTATOR, line)
        assert may_write(SPECTATORS, Role.SPECTATOR, line)
        assert not may_write(SPECTATORS, Role.SEATED, line)
    assert "spectators" in write_refusal(PLAYERS, Role.SPECTATOR, LineKind.QUICK_PHRASE)


def test_bots_never_chat() -> None:
    for channel in (PLAYERS, SPECTATORS, ChannelState(ChannelKind.DIRECT), ChannelState(ChannelKind.COMPETITION)):
        for line in LineKind:
            assert write_refusal(channel, Role.BOT, line) == "bots do not chat"
        assert not may_read(channel, Role.BOT)


def test_no_free_text_between_partners_during_a_deal_by_default_quick_phrases_always() -> None:
    """docs/rules.md §15."""
    assert not may_write(partnership(True), Role.SEATED, LineKind.FREE_TEXT)
    assert "§15" in write_refusal(partnership(True), Role.SEATED, LineKind.FREE_TEXT)
    assert may_write(partnership(True), Role.SEATED, LineKind.QUICK_PHRASE)
    assert may_write(partnership(False), Role.SEATED, LineKind.FREE_TEXT)  # between deals
    assert may_write(partnership(True, PartnerChat.FREE_TEXT), Role.SEATED, LineKind.FREE_TEXT)
    assert may_write(ChannelState(ChannelKind.TABLE_PLAYERS, TableTalk(False, True)), Role.SEATED, LineKind.FREE_TEXT)


def test_who_reads_which_channel() -> None:
    assert may_read(PLAYERS, Role.SEATED) and may_read(PLAYERS, Role.SPECTATOR)
    assert may_read(SPECTATORS, Role.SPECTATOR)
    assert not may_read(SPECTATORS, Role.SEATED)
    assert may_read(SPECTATORS, Role.SEATED, reads_spectators=True)
    assert not may_read(PLAYERS, Role.OUTSIDER)


def test_a_competition_chat_is_open_only_when_its_organiser_turned_it_on() -> None:
    off = ChannelState(ChannelKind.COMPETITION, enabled=False)
    assert write_refusal(off, Role.SEATED, LineKind.FREE_TEXT) == "this chat is turned off"
    assert not may_read(off, Role.SEATED)
    on = ChannelState(ChannelKind.COMPETITION)
    assert may_write(on, Role.SEATED, LineKind.FREE_TEXT) and not may_write(on, Role.OUTSIDER, LineKind.FREE_TEXT)


OPERATIONS = {
    "request": friends.request,
    "accept": friends.accept,
    "decline": friends.decline,
    "remove": friends.remove,
    "block": friends.block,
    "unblock": friends.unblock,
}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.sampled_from(["amal", "badr"]), st.sampled_from(sorted(OPERATIONS))), max_size=40))
def test_over_any_run_a_block_is_never_told_and_never_coexists_with_a_friendship(
    run: list[tuple[str, str]],
) -> None:
    """Whatever the two players do: no notice ever reaches a player who blocked the other or
    comes from a player he blocked; only the blocker's own view says BLOCKED; friends never
    block each other; refused steps leave the pair unchanged (they raise before any change)."""
    pair = pair_of("amal", "badr")
    for actor, name in run:
        other = pair.other(actor)
        blocked_before = pair.blocked_by
        try:
            step = OPERATIONS[name](pair, actor)
        except (AlreadyExists, NotFound, PermissionDenied):
            continue
        if blocked_before:
            assert step.notices == (), (actor, name, pair)
        for notice in step.notices:
            assert notice.to == other and notice.about == actor
        pair = step.pair
        for player in ("amal", "badr"):
            assert (view_of(pair, player) is View.BLOCKED) == (player in pair.blocked_by)
        assert not (pair.friends and pair.blocked_by)
        assert not (pair.friends and pair.requested_by)
