"""Friendships (issue 44): request, accept, decline, remove, block, unblock, as a state
machine over the pair of two players, and what each of them may see and send.

Owns `Pair` (the state of two players: a pending request, friends, who blocked whom), the
transitions (`request`, `accept`, `decline`, `remove`, `block`, `unblock`), each returning
the new pair and the notices to deliver, and the rules the other parts ask: `view_of`
(what one player is shown), `may_message`, `may_invite`, `sees_presence`, `hides_lines`.

The blocked player is never told: a block sends no notice, the blocked player's view of the
pair after a block is exactly what it would be had the blocker removed him or ignored his
request, and what he sends the blocker is accepted and silently never delivered. Pure
functions of immutable values: storing a pair (a KV key per pair) is the service's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from trix.errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied


class View(enum.Enum):
    """What one player is shown of his relation to another."""

    NONE = "none"
    REQUESTED = "requested"
    """He asked; no answer yet (also forever, silently, when the other blocked him)."""
    INCOMING = "incoming"
    """The other asked him."""
    FRIENDS = "friends"
    BLOCKED = "blocked"
    """He blocked the other (never shown to the blocked one)."""


class NoticeKind(enum.Enum):
    REQUEST_RECEIVED = "request received"
    REQUEST_ACCEPTED = "request accepted"


@dataclass(frozen=True)
class Notice:
    """Something to tell `to` about `about`."""

    to: str
    kind: NoticeKind
    about: str


@dataclass(frozen=True)
class Pair:
    """Two players' relation; `a` < `b` (`pair_of` orders them)."""

    a: str
    b: str
    requested_by: str = ""
    friends: bool = False
    blocked_by: frozenset[str] = frozenset()

    def other(self, player: str) -> str:
        if player == self.a:
            return self.b
        if player == self.b:
            return self.a
        raise InvalidArgument(f"{player} is not one of this pair")

    def blocks(self, blocker: str, blocked: str) -> bool:
        """Whether `blocker` has blocked `blocked` (one of the pair each)."""
        return blocker in self.blocked_by and self.other(blocker) == blocked


@dataclass(frozen=True)
class Step:
    """A transition's result: the new pair and who is told what."""

    pair: Pair
    notices: tuple[Notice, ...] = ()


def pair_of(one: str, other: str) -> Pair:
    """The empty relation of two distinct players (ordered, so one pair has one key)."""
    if one == other:
        raise InvalidArgument("a player cannot befriend or block himself")
    a, b = sorted((one, other))
    return Pair(a, b)


def request(pair: Pair, actor: str) -> Step:
    """`actor` asks the other to be friends. A request crossing the other's own request
    makes them friends; a request to someone who blocked the actor is kept and never
    delivered (the actor sees it pending, as any unanswered request)."""
    other = pair.other(actor)
    if pair.blocks(actor, other):
        raise PermissionDenied("unblock this player before asking him to be friends")
    if pair.friends:
        raise AlreadyExists("already friends")
    if pair.requested_by == actor:
        raise AlreadyExists("request already sent")
    if pair.blocks(other, actor):
        return Step(replace(pair, requested_by=actor))
    if pair.requested_by == other:
        return Step(replace(pair, requested_by="", friends=True), (Notice(other, NoticeKind.REQUEST_ACCEPTED, actor),))
    return Step(replace(pair, requested_by=actor), (Notice(other, NoticeKind.REQUEST_RECEIVED, actor),))


def accept(pair: Pair, actor: str) -> Step:
    """`actor` accepts the other's request."""
    other = pair.other(actor)
    if pair.requested_by != other or pair.blocks(actor, other):
        raise NotFound("no friend request from this player")
    return Step(replace(pair, requested_by="", friends=True), (Notice(other, NoticeKind.REQUEST_ACCEPTED, actor),))


def decline(pair: Pair, actor: str) -> Step:
    """`actor` declines the other's request: it goes, nobody is told."""
    other = pair.other(actor)
    if pair.requested_by != other or pair.blocks(actor, other):
        raise NotFound("no friend request from this player")
    return Step(replace(pair, requested_by=""))


def remove(pair: Pair, actor: str) -> Step:
    """`actor` ends the friendship, or withdraws his own request; nobody is told."""
    if pair.friends:
        return Step(replace(pair, friends=False))
    if pair.requested_by == actor:
        return Step(replace(pair, requested_by=""))
    raise NotFound("not friends with this player")


def block(pair: Pair, actor: str) -> Step:
    """`actor` blocks the other: the friendship ends, the actor's own request is withdrawn,
    the other's request to him stays pending in the other's view only. Nobody is told."""
    other = pair.other(actor)
    if pair.blocks(actor, other):
        raise AlreadyExists("already blocked")
    requested_by = "" if pair.requested_by == actor else pair.requested_by
    return Step(replace(pair, friends=False, requested_by=requested_by, blocked_by=pair.blocked_by | {actor}))


def unblock(pair: Pair, actor: str) -> Step:
    """`actor` lifts his block; what the other sent meanwhile stays undelivered and a
    request of his, still pending, becomes visible to the actor again."""
    if not pair.blocks(actor, pair.other(actor)):
        raise NotFound("this player is not blocked")
    return Step(replace(pair, blocked_by=pair.blocked_by - {actor}))


def view_of(pair: Pair, me: str) -> View:
    """What `me` is shown of the pair: never whether the other blocked him."""
    other = pair.other(me)
    if pair.blocks(me, other):
        return View.BLOCKED
    if pair.friends:
        return View.FRIENDS
    if pair.requested_by == me:
        return View.REQUESTED
    if pair.requested_by == other:
        return View.INCOMING
    return View.NONE


def either_blocks(pair: Pair) -> bool:
    return bool(pair.blocked_by)


def may_message(pair: Pair, sender: str) -> bool:
    """Whether a direct message from `sender` is delivered: friends, and no block either way.
    The sender is refused only when he blocked the other (he knows); blocked, he is not told."""
    return pair.friends and not either_blocks(pair) and sender in (pair.a, pair.b)


def may_invite(pair: Pair, sender: str) -> bool:
    """Whether `sender`'s invitation (a private table, a table to watch, a competition)
    reaches the other: the same rule as a direct message."""
    return may_message(pair, sender)


def sees_presence(pair: Pair, viewer: str) -> bool:
    """Whether `viewer` is shown the other's online status: friends only, no block."""
    return pair.friends and not either_blocks(pair) and viewer in (pair.a, pair.b)


def hides_lines(pair: Pair, reader: str) -> bool:
    """Whether `reader` is not shown the other's chat lines at a table or in a competition:
    when either blocked the other (the blocked does not see the blocker's lines either, so
    he cannot tell from a silence)."""
    pair.other(reader)
    return either_blocks(pair)
