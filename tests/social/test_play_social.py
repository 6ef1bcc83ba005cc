"""`trix play`'s chat and friends commands (`trix.play_social`): each `/` line becomes the
social request it names, or a line of help; each social event and answer one line of text."""

from __future__ import annotations

from trix import play_social
from trix.v1 import gateway_pb2, social_pb2


def test_say_and_quick_phrases_go_to_the_table_players_channel() -> None:
    said = play_social.command("/say salam all", "T1")
    assert isinstance(said, gateway_pb2.SocialRequest)
    assert said.send_chat.channel.kind == social_pb2.CHAT_CHANNEL_KIND_TABLE_PLAYERS
    assert (said.send_chat.channel.id, said.send_chat.text) == ("T1", "salam all")
    by_number = play_social.command("/p 1", "T1")
    assert isinstance(by_number, gateway_pb2.SocialRequest) and by_number.send_chat.phrase_id == "greeting"
    watching = play_social.command("/p good_game", "T1", watching=True)
    assert isinstance(watching, gateway_pb2.SocialRequest)
    assert watching.send_chat.channel.kind == social_pb2.CHAT_CHANNEL_KIND_TABLE_SPECTATORS
    assert play_social.command("/p", "T1") == ""  # the caller lists the phrases
    assert "السلام عليكم" in play_social.phrase_list("ar") and "Hello!" in play_social.phrase_list("en")
    assert play_social.command("/say hi", "") == "no table to talk to yet"


def test_friend_commands_name_the_player_and_invite_sends_the_private_code() -> None:
    blocked = play_social.command("/block g123", "")
    assert isinstance(blocked, gateway_pb2.SocialRequest)
    assert blocked.set_blocked.player_id == "g123" and blocked.set_blocked.blocked
    accepted = play_social.command("/accept g9", "")
    assert isinstance(accepted, gateway_pb2.SocialRequest) and accepted.answer_friend.accept
    invite = play_social.command("/invite g9", "T1", code="ABCD")
    assert isinstance(invite, gateway_pb2.SocialRequest)
    assert (invite.send_invite.kind, invite.send_invite.target) == (social_pb2.INVITE_KIND_PRIVATE_TABLE, "ABCD")
    watch = play_social.command("/invite g9", "T1")
    assert isinstance(watch, gateway_pb2.SocialRequest)
    assert (watch.send_invite.kind, watch.send_invite.target) == (social_pb2.INVITE_KIND_WATCH_TABLE, "T1")
    assert play_social.command("/mute", "") == "/mute PLAYER"
    assert play_social.command("/what", "") == play_social.HELP


def test_events_and_answers_read_as_one_line_in_the_reader_language() -> None:
    line = social_pb2.ChatLine(author_id="g1", author_name="amal", phrase=social_pb2.QuickPhrase(id="thank_you"))
    assert play_social.event_text(social_pb2.SocialEvent(chat_line=line), "ar") == "[amal] شكرا!"
    asked = social_pb2.FriendRequestReceived(player_id="g2", display_name="badr")
    assert "/accept g2" in play_social.event_text(social_pb2.SocialEvent(friend_request_received=asked), "en")
    listed = gateway_pb2.SocialResponse()
    listed.list_friends.friends.add(
        player_id="g2",
        display_name="badr",
        state=social_pb2.FRIEND_STATE_FRIENDS,
        presence=social_pb2.PRESENCE_STATUS_IN_GAME,
    )
    assert "badr (g2): friend, in a game" in play_social.answer_text(listed)
    assert (
        play_social.answer_text(gateway_pb2.SocialResponse(send_chat=social_pb2.SendChatResponse())) == "* (not sent)"
    )


def test_a_line_the_stream_sent_is_said_from_its_answer() -> None:
    """The gateway answers a line sent on the Session stream with the line itself and sends
    that stream no event of it (docs/adr/0031): `trix play` shows it from the answer."""
    sent = social_pb2.SendChatResponse(delivered=True, line_id=7)
    sent.line.CopyFrom(social_pb2.ChatLine(author_id="g1", author_name="amal", text="salam", line_id=7))
    assert play_social.answer_text(gateway_pb2.SocialResponse(send_chat=sent), "ar") == "[amal] salam"
    retried = social_pb2.SendChatResponse(delivered=True, line_id=7)  # a retry's: said the first time
    assert play_social.answer_text(gateway_pb2.SocialResponse(send_chat=retried)) == ""
