"""`trix play`'s chat and friends (issue 44): commands typed as a line starting with `/`,
sent on the Session stream (`SessionRequest.social`), and the social events and answers it
brings, as one line of text each.

Commands: `/say TEXT` (the table's players, or its spectators when watching), `/p N|ID` a
quick phrase (`/p` alone lists them, in the `--lang` language), `/dm PLAYER TEXT`,
`/friend`, `/accept`, `/decline`, `/unfriend`, `/block`, `/unblock`, `/mute`, `/unmute` PLAYER,
`/friends`, `/invite PLAYER [CODE]` (the private game's code, else to watch the current
table). The rules of who may write where are the social service's (docs/rules.md §15):
a refusal comes back as an error line.
"""

from __future__ import annotations

from trix.social.phrases import PHRASES, phrase_text
from trix.v1 import gateway_pb2, social_pb2

HELP = (
    "chat: /say TEXT, /p (quick phrases), /p N, /dm PLAYER TEXT; friends: /friends, /friend, /accept,"
    " /decline, /unfriend, /block, /unblock, /mute, /unmute PLAYER, /invite PLAYER [CODE]"
)
PRESENCE = {
    social_pb2.PRESENCE_STATUS_IN_LOBBY: "online",
    social_pb2.PRESENCE_STATUS_IN_GAME: "in a game",
}
STATES = {
    social_pb2.FRIEND_STATE_REQUESTED: "asked",
    social_pb2.FRIEND_STATE_INCOMING: "asks you",
    social_pb2.FRIEND_STATE_FRIENDS: "friend",
    social_pb2.FRIEND_STATE_BLOCKED: "blocked",
}
_PLAYER_MOVES = {
    "/friend": lambda p: gateway_pb2.SocialRequest(request_friend=social_pb2.RequestFriendRequest(player_id=p)),
    "/accept": lambda p: gateway_pb2.SocialRequest(
        answer_friend=social_pb2.AnswerFriendRequestRequest(player_id=p, accept=True)
    ),
    "/decline": lambda p: gateway_pb2.SocialRequest(answer_friend=social_pb2.AnswerFriendRequestRequest(player_id=p)),
    "/unfriend": lambda p: gateway_pb2.SocialRequest(remove_friend=social_pb2.RemoveFriendRequest(player_id=p)),
    "/block": lambda p: gateway_pb2.SocialRequest(set_blocked=social_pb2.SetBlockedRequest(player_id=p, blocked=True)),
    "/unblock": lambda p: gateway_pb2.SocialRequest(set_blocked=social_pb2.SetBlockedRequest(player_id=p)),
    "/mute": lambda p: gateway_pb2.SocialRequest(set_muted=social_pb2.SetMutedRequest(player_id=p, muted=True)),
    "/unmute": lambda p: gateway_pb2.SocialRequest(set_muted=social_pb2.SetMutedRequest(player_id=p)),
}


def phrase_list(lang: str) -> str:
    return "  ".join(f"{i}={phrase_text(p.id, lang)}" for i, p in enumerate(PHRASES, 1))


def command(text: str, table_id: str, *, watching: bool = False, code: str = "") -> gateway_pb2.SocialRequest | str:
    """The social request a `/` line asks for, or the text to show instead (help, an error)."""
    word, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    kind = social_pb2.CHAT_CHANNEL_KIND_TABLE_SPECTATORS if watching else social_pb2.CHAT_CHANNEL_KIND_TABLE_PLAYERS
    if word in ("/say", "/p"):
        if not table_id:
            return "no table to talk to yet"
        send = social_pb2.SendChatRequest(channel=social_pb2.ChatChannel(kind=kind, id=table_id))
        if word == "/say":
            if not rest:
                return "/say TEXT"
            send.text = rest
        else:
            chosen = PHRASES[int(rest) - 1].id if rest.isdigit() and 0 < int(rest) <= len(PHRASES) else rest
            if not chosen:
                return ""  # the caller shows the list
            send.phrase_id = chosen
        return gateway_pb2.SocialRequest(send_chat=send)
    if word == "/dm":
        player, _, words = rest.partition(" ")
        if not player or not words.strip():
            return "/dm PLAYER TEXT"
        channel = social_pb2.ChatChannel(kind=social_pb2.CHAT_CHANNEL_KIND_DIRECT, id=player)
        return gateway_pb2.SocialRequest(send_chat=social_pb2.SendChatRequest(channel=channel, text=words.strip()))
    if word == "/friends":
        return gateway_pb2.SocialRequest(list_friends=social_pb2.ListFriendsRequest())
    if word == "/invite":
        player, _, given = rest.partition(" ")
        target = given.strip() or code
        if not player or not (target or table_id):
            return "/invite PLAYER [CODE]"
        invite = social_pb2.SendInviteRequest(player_id=player)
        if target:
            invite.kind, invite.target = social_pb2.INVITE_KIND_PRIVATE_TABLE, target
        else:
            invite.kind, invite.target = social_pb2.INVITE_KIND_WATCH_TABLE, table_id
        return gateway_pb2.SocialRequest(send_invite=invite)
    move = _PLAYER_MOVES.get(word)
    if move is None:
        return HELP
    if not rest:
        return f"{word} PLAYER"
    return move(rest)


def line_text(line: social_pb2.ChatLine, lang: str) -> str:
    said = phrase_text(line.phrase.id, lang) if line.HasField("phrase") else line.text
    where = {
        social_pb2.CHAT_CHANNEL_KIND_TABLE_SPECTATORS: " (spectators)",
        social_pb2.CHAT_CHANNEL_KIND_DIRECT: " (to you)",
    }
    return f"[{line.author_name or line.author_id}{where.get(line.channel.kind, '')}] {said}"


def event_text(event: social_pb2.SocialEvent, lang: str) -> str:
    """One social event as a line."""
    which = event.WhichOneof("event")
    if which == "chat_line":
        return line_text(event.chat_line, lang)
    if which == "friend_request_received":
        r = event.friend_request_received
        return f"* {r.display_name} ({r.player_id}) asks to be friends: /accept {r.player_id}"
    if which == "friend_request_accepted":
        return f"* {event.friend_request_accepted.display_name} is now your friend"
    if which == "friend_presence_changed":
        p = event.friend_presence_changed
        return f"* friend {p.player_id} is {PRESENCE.get(p.presence, 'offline')}"
    if which == "invite_received":
        i = event.invite_received
        return f"* {i.display_name} invites you: {i.link}"
    if which == "chat_timed_out":
        return "* you may not chat for a while (repeated filtered lines)"
    return ""


def answer_text(reply: gateway_pb2.SocialResponse, lang: str = "en") -> str:
    """A social request's answer as a line ("" when there is nothing to say). A line sent on
    the Session stream comes back in its answer (`SendChatResponse.line`), not as an event."""
    which = reply.WhichOneof("result")
    if which == "send_chat":
        if not reply.send_chat.delivered:
            return "* (not sent)"
        line = reply.send_chat.line
        return line_text(line, lang) if line.author_id else ""
    if which == "list_friends":
        rows = [
            f"  {f.display_name or f.player_id} ({f.player_id}): {STATES.get(f.state, '?')}"
            + (f", {PRESENCE.get(f.presence, 'offline')}" if f.state == social_pb2.FRIEND_STATE_FRIENDS else "")
            for f in reply.list_friends.friends
        ]
        return "\n".join(["friends:", *rows]) if rows else "no friends yet: /friend PLAYER"
    if which == "send_invite":
        return f"* invitation sent; its link: {reply.send_invite.link}"
    if which in ("request_friend", "answer_friend"):
        state = reply.request_friend.state if which == "request_friend" else reply.answer_friend.state
        return f"* {STATES.get(state, 'no relation')}"
    return "* done"
