"""Private tables by invite code and rematches of a finished table.

Owns `Lobbies`: a lobby (`lb.<pp>.<id>` in the tickets bucket) gathers its players'
tickets; a private table starts when its host says so (bots fill a free table's empty
seats) or when full, a rematch when every player of the finished table accepted (a free
one after the bot-fill wait). OPEN -> STARTED (the seats chosen: the commit point) -> the
match formed (`claims.Claims.complete`) -> FORMED; an open lobby past `lobby_ttl_s` closes.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from trix.errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied, Unavailable
from trix.matchmaking.admission import Admission
from trix.matchmaking.claims import Claims
from trix.matchmaking.config import MatchmakingConfig
from trix.matchmaking.ports import Store
from trix.matchmaking.records import (
    CANCELLED,
    CLOSED,
    COMMITTED,
    EXPIRED,
    FORMED,
    OPEN,
    PRIVATE,
    REMATCH,
    STARTED,
    Lobby,
    LobbyMember,
    MatchRecord,
    SeatRecord,
    Ticket,
    match_key,
    new_match_id,
    partition_of,
)
from trix.matchmaking.tickets import NotAllowedNow, TicketStore
from trix.matchmaking.wishes import (
    PARTNERSHIP_VARIANTS,
    Wish,
    check_client_seed,
    check_display_name,
    check_player_id,
)


def private_seat_order(lobby: Lobby) -> list[int]:
    """The seats of a private table's members in the order they joined (the host first),
    drawn from the match id so that every replica finishing this lobby seats alike. In a
    partnership variant the host and the first friend sit opposite, partners (docs/rules.md
    §1: seats s and s + 2), the next two as the other team; in singles the seats are shuffled."""
    rng = random.Random(lobby.match_id)
    if lobby.wish.variant in PARTNERSHIP_VARIANTS:
        first = rng.randrange(4)
        return [first, (first + 2) % 4, (first + 1) % 4, (first + 3) % 4]
    order = list(range(4))
    rng.shuffle(order)
    return order


def private_team(lobby: Lobby, index: int) -> int:
    """The team of a private table's member by the order of joining, as `private_seat_order`
    seats them: 0 for the host and the first friend, 1 for the next two; -1 in singles."""
    return index // 2 if lobby.wish.variant in PARTNERSHIP_VARIANTS else -1


@dataclass(eq=False)
class Lobbies:
    """Private tables and rematches (see the module docstring)."""

    config: MatchmakingConfig
    store: Store
    tickets: TicketStore
    admission: Admission
    claims: Claims
    clock: Callable[[], float]

    def lobby_key(self, lobby_id: str) -> str:
        return f"lb.{partition_of(lobby_id, self.config.partitions):02d}.{lobby_id}"

    async def create_private(
        self, host: str, wish: Wish, client_seed: str = "", preset: str = "", display_name: str = ""
    ) -> Ticket:
        """A private table with a fresh invite code; the host's ticket comes back with it."""
        check_player_id(host)
        check_client_seed(client_seed)
        check_display_name(display_name)
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        for _ in range(10):
            code = "".join(secrets.choice(alphabet) for _ in range(6))
            key = self.lobby_key(code)
            lobby = Lobby(code, PRIVATE, host, wish, [], self.clock())
            if await self.store.create(key, lobby.encode()) is not None:
                break
        else:
            raise Unavailable("could not allocate an invite code; retry")
        try:
            return await self.join(key, host, client_seed, preset, display_name)
        except BaseException:
            got = await self.tickets.get_lobby(key)
            if got is not None:
                await self.store.delete(key, got[1])
            raise

    async def join_private(self, player_id: str, code: str, client_seed: str = "", display_name: str = "") -> Ticket:
        check_player_id(player_id)
        check_client_seed(client_seed)
        check_display_name(display_name)
        if not code.isalnum() or len(code) > 16:
            raise NotFound("no private table with this invite code")
        return await self.join(self.lobby_key(code.upper()), player_id, client_seed, "", display_name)

    async def join(self, key: str, player_id: str, client_seed: str, preset: str, display_name: str = "") -> Ticket:
        got = await self.tickets.get_lobby(key)
        if got is None:
            raise NotFound("no private table with this invite code")
        lobby = got[0]
        self.check_open(lobby, player_id)
        rematch_of = lobby.lobby_id[2:] if lobby.kind == REMATCH else ""
        if lobby.kind == REMATCH:
            client_seed = lobby.fixed_seeds.get(player_id, "")
        partition = int(key.split(".")[1])
        ticket = Ticket(
            ticket_id=self.tickets.new_ticket_id(partition, player_id, ""),
            player_id=player_id,
            wish=lobby.wish,
            kind=lobby.kind,
            client_seed=client_seed,
            created_at=self.clock(),
            lobby=key,
            preset=preset,
            display_name=display_name,
        )
        ticket = await self.admission.admit(ticket, rematch_of=rematch_of)
        for _ in range(50):
            got = await self.tickets.get_lobby(key)
            if got is None:
                await self.admission.finish_unmatched(ticket.ticket_id, CANCELLED)
                raise NotFound("no private table with this invite code")
            lobby, rev = got
            try:
                self.check_open(lobby, player_id)
            except BaseException:
                await self.admission.finish_unmatched(ticket.ticket_id, CANCELLED)
                raise
            lobby.members.append(LobbyMember(player_id, ticket.ticket_id, client_seed, display_name))
            if await self.store.update(key, lobby.encode(), rev) is not None:
                break
        else:
            await self.admission.finish_unmatched(ticket.ticket_id, CANCELLED)
            raise Unavailable("the private table is busy; retry")
        everyone = len(lobby.members) == 4 or (
            lobby.kind == REMATCH and {m.player_id for m in lobby.members} == set(lobby.fixed_seats)
        )
        if everyone:
            await self.start(key)
        got_t = await self.tickets.get_ticket(ticket.ticket_id)
        return got_t[0] if got_t is not None else ticket

    def check_open(self, lobby: Lobby, player_id: str) -> None:
        if lobby.state != OPEN:
            raise NotAllowedNow("the table has already started or was closed")
        if any(m.player_id == player_id for m in lobby.members):
            raise AlreadyExists(f"player {player_id} is already at this table")
        if lobby.kind == REMATCH and player_id not in lobby.fixed_seats:
            raise PermissionDenied("only the players of the finished table can accept its rematch")
        if len(lobby.members) >= 4:
            raise NotAllowedNow("the private table is full")

    async def leave(self, ticket: Ticket) -> bool:
        """A lobby ticket being cancelled leaves its lobby (the host closes a private table).
        False if the lobby has started: the ticket is (being) matched."""
        for _ in range(50):
            got = await self.tickets.get_lobby(ticket.lobby)
            if got is None:
                return True
            lobby, rev = got
            if lobby.state in (STARTED, FORMED):
                return False
            if lobby.state != OPEN:
                return True
            if lobby.kind == PRIVATE and lobby.host == ticket.player_id:
                others = [m for m in lobby.members if m.player_id != ticket.player_id]
                lobby.state = CLOSED
                lobby.finished_at = self.clock()
                lobby.members = [m for m in lobby.members if m.player_id == ticket.player_id]
                if await self.store.update(ticket.lobby, lobby.encode(), rev) is not None:
                    for m in others:
                        await self.admission.finish_unmatched(m.ticket_id, CANCELLED)
                    return True
                continue
            lobby.members = [m for m in lobby.members if m.ticket_id != ticket.ticket_id]
            if await self.store.update(ticket.lobby, lobby.encode(), rev) is not None:
                return True
        raise Unavailable("the private table is busy; retry")

    async def start_private(self, host: str, code: str, partner: int = 0) -> str:
        """Start a private table now; bots take the empty seats (free tables only). In a
        partnership variant the host may name his partner: the index of a member in the
        order of joining (0: the first friend, as `private_seat_order` seats him anyway)."""
        lobby = await self.private_lobby(host, code)
        if lobby.host != host:
            raise PermissionDenied("only the host can start the private table")
        if partner and lobby.wish.variant not in PARTNERSHIP_VARIANTS:
            raise InvalidArgument("a partner can be chosen only in partnership variants")
        if partner and not 1 <= partner < len(lobby.members):
            raise InvalidArgument("the partner must be one of the players who joined")
        if lobby.state in (STARTED, FORMED):
            return lobby.match_id
        if lobby.state != OPEN:
            raise NotAllowedNow("the private table was closed")
        if lobby.wish.paid and len(lobby.members) < 4:
            raise NotAllowedNow("a paid table starts only with four players: bots never sit at paid tables")
        match_id = await self.start(self.lobby_key(lobby.lobby_id), partner)
        if not match_id:
            raise NotAllowedNow("the private table could not start")
        return match_id

    async def private_lobby(self, player_id: str, code: str) -> Lobby:
        """The private table of an invite code as stored now (NotFound if none)."""
        check_player_id(player_id)
        key = self.lobby_key(code.upper()) if code.isalnum() and len(code) <= 16 else ""
        got = await self.tickets.get_lobby(key) if key else None
        if got is None or got[0].kind != PRIVATE:
            raise NotFound("no private table with this invite code")
        return got[0]

    async def get_private(self, player_id: str, code: str) -> Lobby:
        """A private table as its players see it before the start: who has joined."""
        lobby = await self.private_lobby(player_id, code)
        if not any(m.player_id == player_id for m in lobby.members):
            raise PermissionDenied("only the players at this private table see who has joined")
        return lobby

    async def start(self, key: str, partner: int = 0) -> str:
        """OPEN -> STARTED with the seats chosen (the commit point), then form the match;
        `partner` (the host's, see `start_private`) moves that member second in the order
        `private_seat_order` seats, opposite the host."""
        for _ in range(50):
            got = await self.tickets.get_lobby(key)
            if got is None:
                return ""
            lobby, rev = got
            if lobby.state == FORMED:
                return lobby.match_id
            if lobby.state == STARTED:
                await self.form_match(lobby, key, rev)
                return lobby.match_id
            if lobby.state != OPEN or not lobby.members:
                return ""
            if 1 <= partner < len(lobby.members):
                lobby.members.insert(1, lobby.members.pop(partner))
            lobby.state = STARTED
            lobby.match_id = new_match_id()
            new_rev = await self.store.update(key, lobby.encode(), rev)
            if new_rev is not None:
                await self.form_match(lobby, key, new_rev)
                return lobby.match_id
        raise Unavailable("the private table is busy; retry")

    async def form_match(self, lobby: Lobby, key: str, lobby_rev: int) -> None:
        seats = [SeatRecord(bot=True) for _ in range(4)]
        if lobby.kind == REMATCH:
            for m in lobby.members:
                seats[lobby.fixed_seats[m.player_id]] = SeatRecord(
                    m.player_id, m.ticket_id, m.client_seed, display_name=m.display_name
                )
        else:
            for seat, m in zip(private_seat_order(lobby), lobby.members, strict=False):
                seats[seat] = SeatRecord(m.player_id, m.ticket_id, m.client_seed, display_name=m.display_name)
        record = MatchRecord(lobby.match_id, lobby.wish, seats, COMMITTED, self.clock(), private=lobby.kind == PRIVATE)
        rev = await self.store.create(match_key(record.match_id), record.encode())
        if rev is None:
            got = await self.tickets.get_match(record.match_id)
            if got is None:
                return
            record, rev = got
        await self.claims.complete(record, rev)
        lobby.state = FORMED
        lobby.finished_at = self.clock()
        await self.store.update(key, lobby.encode(), lobby_rev)

    async def rematch(self, player_id: str, table_id: str, display_name: str = "") -> Ticket:
        """Accept a rematch of a finished table: the same seats, a new table once all accept
        (free tables: after the bot-fill wait, those who accepted and bots)."""
        check_player_id(player_id)
        check_display_name(display_name)
        if not table_id.isalnum() or len(table_id) > 64:
            raise NotFound(f"no match formed table {table_id!r}")
        got = await self.tickets.get_match(table_id)
        if got is None:
            raise NotFound(f"no match formed table {table_id!r}")
        old = got[0]
        seats = {s.player_id: i for i, s in enumerate(old.seats) if not s.bot}
        if player_id not in seats:
            raise PermissionDenied("only the players of the finished table can accept its rematch")
        key = self.lobby_key(f"r-{table_id}")
        lobby = Lobby(
            f"r-{table_id}",
            REMATCH,
            player_id,
            old.wish,
            [],
            self.clock(),
            fixed_seats=seats,
            fixed_seeds={s.player_id: s.client_seed for s in old.seats if not s.bot},
        )
        await self.store.create(key, lobby.encode())
        return await self.join(key, player_id, "", "", display_name)

    async def close(self, key: str) -> None:
        got = await self.tickets.get_lobby(key)
        if got is None or got[0].state != OPEN:
            return
        lobby, rev = got
        lobby.state = CLOSED
        lobby.finished_at = self.clock()
        if await self.store.update(key, lobby.encode(), rev) is not None:
            for m in lobby.members:
                await self.admission.finish_unmatched(m.ticket_id, EXPIRED)
