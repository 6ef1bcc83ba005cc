"""`trix play`'s interactive loop with whole-line input (`Terminal`): the Session's
messages and the keyboard, queueing for a table (public, private or by code), playing the
player's turns, resuming a game in progress, and the verify view at the end. Never sees
another seat's hand: everything comes through the gateway (docs/rules.md §14).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
from pathlib import Path

import grpc

from trix import play_social
from trix.client import VARIANTS, GatewayClient, SeatState, new_action
from trix.play_view import CONTRACT_NAMES, ar, parse_card, render, seat_names, verify_view
from trix.rules import card_text
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2, table_pb2

STALE_SEAT = re.compile(r"(?:seated at|matched to) table (\S+)")
"""Matchmaking's refusal naming the table this player already sits at ("already seated at table
T", "ticket already matched to table T")."""
STALE_TICKET = re.compile(r"already queued \(ticket (\S+?)\)")
"""Matchmaking's refusal naming the ticket this player is still queued with."""


class Terminal:
    """The interactive loop: the session's messages and the keyboard."""

    def __init__(self, client: GatewayClient, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.state = SeatState()
        self.names = ["", "", "", ""]
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.out = sys.stdout
        self.quitting = False
        """Set by `q`: the Session is cut on purpose, its end is no error."""
        device = getattr(args, "device_file", None) or (
            Path(getattr(args, "state_dir", ".state/play")) / "device_secret"
        )
        self.table_file = Path(device).with_name("current_table")
        """The table this player sits at, kept beside the device secret so that the next
        `trix play` resumes the game instead of being refused by matchmaking."""
        self.static_countdown = True
        """The table's text ends with a "Ns left" line (the line mode; `KeyTerminal` keeps it live)."""
        self.taken_back = 0
        """Refused queueings answered by `_take_back` (a bound: it never loops)."""
        self.tickets: set[str] = set()
        """The tickets said to be queued (a ticket's updates may repeat its state)."""
        self.code = ""
        """The private game's code this player created or joined (what `/invite` sends)."""

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _stdin(self) -> None:
        line = sys.stdin.readline()
        self.lines.put_nowait(line if line else None)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_reader(sys.stdin.fileno(), self._stdin)
        try:
            return await self._run()
        finally:
            loop.remove_reader(sys.stdin.fileno())

    def _wish(self) -> matchmaking_pb2.GameWish:
        wish = matchmaking_pb2.GameWish(variant=VARIANTS[self.args.variant])
        if self.args.card_timeout:
            wish.options.card_timeout_s = self.args.card_timeout
        if getattr(self.args, "contract_timeout", 0):
            wish.options.contract_timeout_s = self.args.contract_timeout
        if getattr(self.args, "double_timeout", 0):
            wish.options.double_timeout_s = self.args.double_timeout
        return wish

    async def _resumable(self) -> table_pb2.SeatView | None:
        """The seat's view of the game this player was at when `trix play` last ran, if it
        is still going (a finished or unknown table is forgotten)."""
        try:
            table_id = self.table_file.read_text().strip()
        except OSError:
            return None
        if not table_id:
            return None
        return await self._going_on(table_id)

    async def _going_on(self, table_id: str) -> table_pb2.SeatView | None:
        """The seat's view of `table_id` if that game is still going, else None."""
        try:
            reply = await self.client.stub.GetView(
                gateway_pb2.GetViewRequest(table_id=table_id), metadata=self.client.metadata, timeout=10
            )
        except grpc.aio.AioRpcError:
            reply = None
        if reply is None or reply.view.finished:
            self._forget_table()
            return None
        return reply.view

    def _remember_table(self, table_id: str) -> None:
        with contextlib.suppress(OSError):
            self.table_file.parent.mkdir(parents=True, exist_ok=True)
            self.table_file.write_text(table_id + "\n")

    def _forget_table(self) -> None:
        with contextlib.suppress(OSError):
            self.table_file.unlink(missing_ok=True)

    async def _run(self) -> int:
        a = self.args
        view = None if (a.private or a.host_private) else await self._resumable()
        stream = self.client.open()
        if view is not None:
            await self._resume(view)
        elif a.private:
            self.client.send(
                gateway_pb2.SessionRequest(join_private=gateway_pb2.JoinPrivateGameRequest(code=a.private))
            )
        elif a.host_private:
            req = gateway_pb2.CreatePrivateGameRequest(wish=self._wish(), client_seed=a.seed)
            self.client.send(gateway_pb2.SessionRequest(create_private=req))
        else:
            self._queue()
        if view is None:
            self.say("looking for a table...")
        keyboard = asyncio.ensure_future(self._keyboard())
        try:
            async for message in stream:
                if await self._on(message):
                    break
        except asyncio.CancelledError:
            # `q` cancels the call: grpc then ends the iteration with CancelledError.
            # Anything else cancelling this task (Ctrl-C, SIGTERM) goes on up.
            task = asyncio.current_task()
            if not self.quitting or (task is not None and task.cancelling()):
                raise
        finally:
            keyboard.cancel()
        self._game_over()
        if self.state.record_json:
            self.say("")
            self.say(verify_view(self.state.record_json, a.lang))
        return 0

    async def _resume(self, view: table_pb2.SeatView) -> None:
        """Back to the game in progress, the way the browser resumes: the seat's view now (its
        scores, its turn), then the events after it."""
        self.state.table_id, self.state.seat = view.table_id, view.seat
        self._remember_table(view.table_id)
        self.say(f"resuming your game at table {view.table_id} (seat {view.seat})")
        await self._on(gateway_pb2.SessionResponse(snapshot=view))
        resume = gateway_pb2.EventsRequest(table_id=view.table_id, after_sequence=view.sequence)
        self.client.send(gateway_pb2.SessionRequest(resume=resume))

    def _queue(self) -> None:
        req = gateway_pb2.FindMatchRequest(wish=self._wish(), client_seed=self.args.seed)
        self.client.send(gateway_pb2.SessionRequest(find_match=req))

    async def _take_back(self, message: str) -> bool:
        """A queueing refused because an earlier `trix play` of this player (killed while
        queued, or matched after it was gone) left him queued or seated: resume the game he
        sits at, or queue again in place of the ticket nobody follows any more (its updates
        went to the stream that died with it). True when handled."""
        self.taken_back += 1
        if self.taken_back > 3:
            return False
        seated, queued = STALE_SEAT.search(message), STALE_TICKET.search(message)
        if queued is not None:
            try:
                await self.client.stub.CancelMatch(
                    gateway_pb2.CancelMatchRequest(ticket_id=queued[1]), metadata=self.client.metadata, timeout=30
                )
            except grpc.aio.AioRpcError as err:
                seated = STALE_SEAT.search(err.details() or "")  # matched meanwhile: that game
                if seated is None:
                    return False
            else:
                self.say("you were still queued from an earlier run: queued again")
                self._queue()
                return True
        view = None if seated is None else await self._going_on(seated[1])
        if view is None:
            return False
        await self._resume(view)
        return True

    async def _on(self, m: gateway_pb2.SessionResponse) -> bool:
        kind = m.WhichOneof("kind")
        st = self.state
        if kind == "ticket":
            t = m.ticket
            if t.state == matchmaking_pb2.TICKET_STATE_SEARCHING and t.ticket_id not in self.tickets:
                self.tickets.add(t.ticket_id)
                self.say(f"queued (ticket {t.ticket_id})")
            if t.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                st.table_id, st.seat = t.table_id, t.seat
                self._remember_table(t.table_id)
                self.say(f"matched: table {t.table_id}, you are seat {t.seat}")
        elif kind == "private_game":
            self.code = m.private_game.code
            self.say(f"private game code: {m.private_game.code}  (friends: trix play --private CODE)")
        elif kind == "social_event":
            self.say(play_social.event_text(m.social_event, self.args.lang))
        elif kind == "social":
            answer = play_social.answer_text(m.social, self.args.lang)
            if answer:
                self.say(answer)
        elif kind == "error":
            stale = m.error.code in ("ALREADY_EXISTS", "FAILED_PRECONDITION") and not st.table_id
            if stale and await self._take_back(m.error.message):
                return False
            self.say(f"! {m.error.code}: {m.error.message}")
            if st.my_turn():
                self._refresh()
        elif kind == "snapshot":
            st.take_view(m.snapshot)
            self.names = seat_names(m.snapshot.seats)
            self.say("")
            self.say(render(st, self.names, self.args.lang, time.time(), self.static_countdown))
            if st.my_turn():
                self._prompt()
        elif kind == "event":
            st.apply(m.event)
            body = m.event.WhichOneof("body")
            if body == "table_created":
                self.names = seat_names(m.event.table_created.seats)
            elif body == "deal_scored":
                d = m.event.deal_scored
                name = CONTRACT_NAMES[self.args.lang].get(d.contract, "?")
                self.say(f"deal scored ({ar(name, self.args.lang)}): {list(d.points.values)} totals {st.totals}")
                if self.args.deals and st.deals_scored >= self.args.deals:
                    self.say("stopping after the requested deals")
                    return True
            elif body == "game_ended":
                self._forget_table()
                self.say(f"game over: totals {st.totals} ranking {list(m.event.game_ended.ranking)}")
                return True
            elif body == "card_played":
                cp = m.event.card_played
                self.say(f"seat {cp.seat} played {card_text(cp.card.id)}")
            elif body == "turn_started" and (st.my_turn() or st.view is None):
                self._refresh()
        return False

    def _refresh(self) -> None:
        self.client.send(gateway_pb2.SessionRequest(view=gateway_pb2.GetViewRequest(table_id=self.state.table_id)))

    def _prompt(self) -> None:
        t = self.state.turn
        if t is None:
            return
        if t.decision == common_pb2.DECISION_CONTRACT:
            v = self.state.view
            options = ", ".join(
                f"{c}={ar(CONTRACT_NAMES[self.args.lang][c], self.args.lang)}" for c in (v.legal_contracts if v else [])
            )
            self.say(f"choose a contract ({options}):")
        elif t.decision == common_pb2.DECISION_DOUBLE:
            self.say("double? card codes to double (e.g. KH QS), or - for no double:")
        else:
            self.say("your card (e.g. 7H; * marks legal cards):")

    async def _keyboard(self) -> None:
        while True:
            line = await self.lines.get()
            if line is None:
                return
            text = line.strip()
            st = self.state
            if not text:
                continue
            if text in ("q", "quit"):
                self.quitting = True
                self.client.cut()
                return
            if text.startswith("/"):  # chat and friends (trix.play_social)
                asked = play_social.command(text, st.table_id, code=self.code or getattr(self.args, "private", ""))
                if isinstance(asked, str):
                    self.say(asked or play_social.phrase_list(self.args.lang))
                else:
                    self.client.send(gateway_pb2.SessionRequest(social=asked))
                continue
            if not st.my_turn() or st.turn is None:
                self.say("not your turn")
                continue
            action = new_action(st)
            if st.turn.decision == common_pb2.DECISION_CONTRACT:
                if not text.isdigit():
                    self.say("type the contract's number")
                    continue
                action.choose_contract = int(text)  # type: ignore[assignment]
            elif st.turn.decision == common_pb2.DECISION_DOUBLE:
                action.answer_double.SetInParent()
                for word in text.replace("-", " ").split():
                    card = parse_card(word)
                    if card is not None:
                        action.answer_double.cards.add(id=card)
            else:
                card = parse_card(text)
                if card is None:
                    self.say("type a card code such as 7H or TD")
                    continue
                action.play_card.id = card
            self._send_action(action)

    def _send_action(self, action: gateway_pb2.Action) -> None:
        self.client.send(gateway_pb2.SessionRequest(action=action))

    def _game_over(self) -> None:
        """The Session loop is over: before the verify view."""
