"""`trix play`: a terminal client that talks to the gateway exactly like a mobile client.

Owns:
- `EmbeddedPlatform`: `trix up`'s supervisor used as a library (NATS + every service on
  loopback, shared internal secrets, quick bot fill), for `trix play` without
  `--server` and for `trix demo`;
- `GatewayClient`: sign-in, the one bidirectional Session, request/answer correlation;
- `SeatState`: the player's view, kept from SeatView snapshots and events;
- the plain terminal UI: the hand sorted by suit, the trick or the TRIX layout, doubled
  cards, the last trick, scores, whose turn with a countdown, contract names in Arabic
  or English (`--lang`), card codes (or the number shown beside each legal card) to
  play, and after the game the verify view (تحقق: commitment, revealed seed, every deal).

Never sees another seat's hand: everything comes through the gateway (RULES.md §14).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from trix.v1 import common_pb2, events_pb2, gateway_pb2, gateway_pb2_grpc, matchmaking_pb2, table_pb2

RANKS = "23456789TJQKA"
SUITS = "CDHS"
SUIT_NAMES = {
    "en": {"C": "Clubs", "D": "Diamonds", "H": "Hearts", "S": "Spades"},
    "ar": {"C": "سباتي", "D": "ديناري", "H": "كبة", "S": "بستوني"},
}
CONTRACT_NAMES = {
    "en": {1: "King", 2: "Queens", 3: "Diamonds", 4: "Tricks", 5: "Trix", 6: "Complex"},
    "ar": {1: "ملك", 2: "بنات", 3: "ديناري", 4: "لطوش", 5: "تركس", 6: "كمبلكس"},
}
VARIANTS = {
    "trix": common_pb2.VARIANT_TRIX,
    "trix-partnership": common_pb2.VARIANT_TRIX_PARTNERSHIP,
    "complex": common_pb2.VARIANT_COMPLEX,
    "complex-partnership": common_pb2.VARIANT_COMPLEX_PARTNERSHIP,
}
RLM = "\u200f"
"""Right-to-left mark: Arabic words keep their order inside mixed lines."""


def card_str(card_id: int) -> str:
    return RANKS[card_id % 13] + SUITS[card_id // 13]


def parse_card(text: str) -> int | None:
    t = text.strip().upper().replace("10", "T")
    if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
        return None
    return SUITS.index(t[1]) * 13 + RANKS.index(t[0])


def ar(text: str, lang: str) -> str:
    return f"{RLM}{text}{RLM}" if lang == "ar" else text


# -- the embedded platform ----------------------------------------------------------------


class EmbeddedPlatform:
    """`trix up` as a library: start NATS and the five services, stop them all."""

    def __init__(
        self, state_dir: Path, *, fresh: bool = False, env: dict[str, str] | None = None, edge: bool = False
    ) -> None:
        from trix.up import Supervisor

        self.supervisor = Supervisor(
            state_dir=state_dir.resolve(),
            fresh=fresh,
            replicas={},
            ports={},
            nats_port=0,
            grace_s=5.0,
            ready_timeout_s=90.0,
            # The services' log files under <state>/logs: quiet by default, TRIX_LOG_LEVEL to debug.
            log_level=os.environ.get("TRIX_LOG_LEVEL", "warning"),
        )
        self.env = {
            "TRIX_INTERNAL_TOKEN_SECRET": secrets.token_hex(32),
            "TRIX_INTERNAL_TOKEN_KEY": secrets.token_hex(32),
            "TRIX_GATEWAY_TOKEN_KEY": secrets.token_hex(32),
            "TRIX_MATCHMAKING_BOT_FILL_S": "0",
            "TRIX_TIMERS_TICK_S": "0.05",
            "TRIX_DRAIN_DELAY_S": "0",
            "TRIX_METRICS_PORT": "0",  # the process binds a free port itself: no race with other programs
            **(env or {}),
        }
        self.gateway_target = ""
        self.edge = edge
        self.edge_url = ""
        """http://127.0.0.1:<port> of the Envoy edge (gRPC-Web, HTTP/JSON) when started with edge=True."""

    def start(self, timeout_s: float = 90.0) -> str:
        """Start everything; the gateway's target once every service is SERVING."""
        sup = self.supervisor
        sup._prepare_state()
        sup.nats = sup._nats_child()
        sup.nats.start()
        if not sup._wait_nats(20.0):
            raise RuntimeError(f"nats-server did not start; see {sup.nats.log_path}")
        sup.services = sup._service_children()
        for child in sup.services:
            child.env.update(self.env)
            child.start()
        deadline = time.monotonic() + timeout_s
        restarts = 0
        while not all(c.serving for c in sup.services):
            for child in sup.services:
                if child.proc is not None and child.proc.poll() is not None:
                    restarts += 1  # e.g. its port was taken meanwhile: once more, like `trix up` would
                    if restarts > 3:
                        raise RuntimeError(f"{child.name} exited; see {child.log_path}")
                    time.sleep(0.3)
                    child.start()
                if not child.serving and child.check_serving():
                    child.serving = True
            if time.monotonic() > deadline:
                raise RuntimeError(f"the platform was not ready in {timeout_s:.0f}s; see {sup.state_dir / 'logs'}")
            time.sleep(0.1)
        gateway = next(c for c in sup.services if c.name.startswith("gateway"))
        self.gateway_target = f"127.0.0.1:{gateway.grpc_port}"
        if self.edge:
            for _ in range(3):  # a port taken meanwhile: once more on fresh ports
                sup.edge_port = 0
                sup.edge_child = sup._edge_child(gateway.grpc_port)
                sup.edge_child.start()
                if sup.edge_ready(max(5.0, deadline - time.monotonic())):
                    break
                sup._stop_group([sup.edge_child], 2.0)
            else:
                raise RuntimeError(f"the edge (envoy) did not start; see {sup.state_dir / 'logs' / 'edge.log'}")
            self.edge_url = f"http://127.0.0.1:{sup.edge_port}"
        return self.gateway_target

    def stop(self) -> None:
        self.supervisor._stop_all()


# -- the client -----------------------------------------------------------------------------


@dataclass
class SeatState:
    """What this player's seat may see, from snapshots and events."""

    table_id: str = ""
    seat: int = -1
    sequence: int = 0
    view: table_pb2.SeatView | None = None
    last_trick: list[str] = field(default_factory=list)
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    deals_scored: int = 0
    turn: events_pb2.TurnStarted | None = None
    record_json: str = ""
    ended: bool = False
    events: int = 0

    def apply(self, event: events_pb2.Event) -> None:
        self.sequence = max(self.sequence, event.sequence)
        self.events += 1
        body = event.WhichOneof("body")
        if body == "turn_started":
            self.turn = event.turn_started
        elif body == "trick_taken":
            self.last_trick = [card_str(c.id) for c in event.trick_taken.cards]
        elif body == "deal_scored":
            self.totals = list(event.deal_scored.totals.values)
            self.deals_scored += 1
        elif body == "game_ended":
            self.ended = True
            self.record_json = event.game_ended.record_json
            self.totals = list(event.game_ended.totals.values)

    def my_turn(self) -> bool:
        t = self.turn
        return t is not None and self.seat in t.seats and not self.ended


class GatewayClient:
    """One player's connection to the gateway: sign-in, then one Session stream."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.aio.insecure_channel(target)
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)
        self.token = ""
        self.player_id = ""
        self.outgoing: asyncio.Queue[gateway_pb2.SessionRequest | None] = asyncio.Queue()
        self.call: Any = None

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),)

    async def sign_in(self, device_secret: str, name: str) -> str:
        reply = await self.stub.SignIn(
            gateway_pb2.SignInRequest(device_secret=device_secret, display_name=name), timeout=10
        )
        self.token, self.player_id = reply.token, reply.player_id
        return str(reply.player_id)

    async def _requests(
        self, call: Any, outgoing: asyncio.Queue[gateway_pb2.SessionRequest | None]
    ) -> AsyncIterator[gateway_pb2.SessionRequest]:
        # Bound to its own call and queue: after a cut, the previous stream's request
        # generator can never take a request meant for the new stream.
        # Write only once the gateway has accepted the session (its headers arrived): a
        # write racing a refusal would hide the refusal's status (ADR 0009).
        await call.initial_metadata()
        if call.done():
            return
        while True:
            request = await outgoing.get()
            if request is None:
                return
            yield request

    def open(self) -> AsyncIterator[gateway_pb2.SessionResponse]:
        """Open the Session stream; iterate the result for everything the player may see."""
        outgoing: asyncio.Queue[gateway_pb2.SessionRequest | None] = asyncio.Queue()
        box: list[Any] = []

        async def requests() -> AsyncIterator[gateway_pb2.SessionRequest]:
            async for request in self._requests(box[0], outgoing):
                yield request

        self.outgoing = outgoing
        self.call = self.stub.Session(requests(), metadata=self.metadata)
        box.append(self.call)
        return self.call.__aiter__()  # type: ignore[no-any-return]

    def send(self, request: gateway_pb2.SessionRequest) -> None:
        self.outgoing.put_nowait(request)

    def cut(self) -> None:
        """Drop the stream at once (a network cut)."""
        if self.call is not None:
            self.call.cancel()

    async def close(self) -> None:
        self.outgoing.put_nowait(None)
        self.cut()
        await self.channel.close()


def new_action(state: SeatState) -> gateway_pb2.Action:
    return gateway_pb2.Action(
        table_id=state.table_id, action_id=uuid.uuid4().hex[:20], last_seen_sequence=state.sequence
    )


# -- rendering ------------------------------------------------------------------------------


def render(state: SeatState, names: list[str], lang: str, now: float) -> str:
    """The table as plain text."""
    v = state.view
    if v is None:
        return "waiting for the table..."
    cn = CONTRACT_NAMES[lang]
    lines = []
    contract = ar(cn.get(v.contract, "-"), lang) if v.contract else "-"
    lines.append(f"deal {v.deal_index + 1}  kingdom {v.kingdom + 1}  contract: {contract}")
    for s in range(4):
        mark = ">" if state.turn is not None and s in state.turn.seats else " "
        me = " (you)" if s == state.seat else ""
        size = v.hand_sizes[s] if len(v.hand_sizes) > s else 0
        total = state.totals[s] if len(state.totals) > s else 0
        lines.append(f" {mark} seat {s} {names[s] if s < len(names) else ''}{me}: {size} cards, score {total}")
    if v.contract == common_pb2.CONTRACT_TRIX:
        lines.append("layout: " + (" ".join(card_str(c.id) for c in v.layout) or "-"))
    else:
        lines.append("trick: " + (" ".join(card_str(c.id) for c in v.trick) or "-"))
    if state.last_trick:
        lines.append("last trick: " + " ".join(state.last_trick))
    doubled = [f"seat {d.seat}: {' '.join(card_str(c.id) for c in d.cards)}" for d in v.doubles if d.cards]
    if doubled:
        lines.append("doubled: " + "; ".join(doubled))
    by_suit: dict[str, list[int]] = {}
    for c in sorted(v.hand, key=lambda c: c.id):
        by_suit.setdefault(SUITS[c.id // 13], []).append(c.id)
    lines.append("your hand:")
    legal = {c.id for c in v.legal_cards}
    for suit in SUITS:
        cards = by_suit.get(suit, [])
        if cards:
            shown = " ".join(card_str(c) + ("*" if c in legal else "") for c in cards)
            label = f"{SUIT_NAMES['en'][suit]} {ar(SUIT_NAMES['ar'][suit], 'ar')}"
            lines.append(f"  {label:<22} {shown}")
    if state.turn is not None and state.turn.HasField("deadline"):
        left = max(0.0, state.turn.deadline.seconds + state.turn.deadline.nanos / 1e9 - now)
        who = "your turn" if state.my_turn() else f"seat {', '.join(map(str, state.turn.seats))} to act"
        lines.append(f"{who}: {left:.0f}s left")
    return "\n".join(lines)


def verify_view(record_json: str, lang: str) -> str:
    """تحقق: the commitment, the revealed seed and the check of every deal (RULES.md §11)."""
    from trix.records import load_record, verify

    record = load_record(record_json)
    report = verify(record)
    title = ar("تحقق", "ar") + " / verify"
    fairness = record.get("fairness") or {}
    lines = [title, f"commitment:  {fairness.get('commitment')}", f"server seed: {fairness.get('server_seed')}"]
    lines.append(f"client seed: {fairness.get('client_seed')!r}")
    lines += report.lines
    lines.append("verified: yes" if report.ok else "verified: NO")
    return "\n".join(lines)


# -- bots (demo) and decisions --------------------------------------------------------------


def pick(view: table_pb2.SeatView, decision: int, rng: Any) -> gateway_pb2.Action | None:
    """A quick legal choice from the seat's own view."""
    action = gateway_pb2.Action()
    if decision == common_pb2.DECISION_CONTRACT and view.legal_contracts:
        action.choose_contract = rng.choice(list(view.legal_contracts))
    elif decision == common_pb2.DECISION_DOUBLE:
        action.answer_double.SetInParent()
    elif decision == common_pb2.DECISION_CARD and view.legal_cards:
        action.play_card.id = rng.choice(list(view.legal_cards)).id
    else:
        return None
    return action


# -- `trix play` ----------------------------------------------------------------------------


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default="", help="gateway host:port (default: start the embedded platform)")
    parser.add_argument("--lang", choices=("ar", "en"), default="en", help="contract names in Arabic or English")
    parser.add_argument("--name", default="", help="display name")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="trix")
    parser.add_argument("--private", default="", metavar="CODE", help="join a friend's private game by code")
    parser.add_argument("--host-private", action="store_true", help="create a private game and print its code")
    parser.add_argument("--seed", default="", help="your fairness seed (RULES.md §11)")
    parser.add_argument("--state-dir", type=Path, default=Path(".state/play"), help="embedded platform data")
    parser.add_argument("--device-file", type=Path, default=None, help="where the guest device secret is kept")
    parser.add_argument("--card-timeout", type=int, default=0, help="card timer of a new table in s (0 = default)")
    parser.add_argument("--deals", type=int, default=0, help="stop after this many deals (0 = the whole game)")


def _device_secret(path: Path) -> str:
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_hex(24)
    path.write_text(secret + "\n")
    with contextlib.suppress(OSError):
        os.chmod(path, 0o600)
    return secret


class Terminal:
    """The interactive loop: the session's messages and the keyboard."""

    def __init__(self, client: GatewayClient, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.state = SeatState()
        self.names = ["", "", "", ""]
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.out = sys.stdout

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
        return wish

    async def _run(self) -> int:
        stream = self.client.open()
        a = self.args
        if a.private:
            self.client.send(
                gateway_pb2.SessionRequest(join_private=gateway_pb2.JoinPrivateGameRequest(code=a.private))
            )
        elif a.host_private:
            req = gateway_pb2.CreatePrivateGameRequest(wish=self._wish(), client_seed=a.seed)
            self.client.send(gateway_pb2.SessionRequest(create_private=req))
        else:
            req2 = gateway_pb2.FindMatchRequest(wish=self._wish(), client_seed=a.seed)
            self.client.send(gateway_pb2.SessionRequest(find_match=req2))
        self.say("looking for a table...")
        keyboard = asyncio.ensure_future(self._keyboard())
        try:
            async for message in stream:
                if await self._on(message):
                    break
        finally:
            keyboard.cancel()
        if self.state.record_json:
            self.say("")
            self.say(verify_view(self.state.record_json, a.lang))
        return 0

    async def _on(self, m: gateway_pb2.SessionResponse) -> bool:
        kind = m.WhichOneof("kind")
        st = self.state
        if kind == "ticket":
            t = m.ticket
            if t.state == matchmaking_pb2.TICKET_STATE_MATCHED:
                st.table_id, st.seat = t.table_id, t.seat
                self.say(f"matched: table {t.table_id}, you are seat {t.seat}")
        elif kind == "private_game":
            self.say(f"private game code: {m.private_game.code}  (friends: trix play --private CODE)")
        elif kind == "error":
            self.say(f"! {m.error.code}: {m.error.message}")
            if st.my_turn():
                self._refresh()
        elif kind == "snapshot":
            st.view = m.snapshot
            st.sequence = max(st.sequence, m.snapshot.sequence)
            self.names = [s.display_name or s.player_id for s in sorted(m.snapshot.seats, key=lambda s: s.index)]
            self.say("")
            self.say(render(st, self.names, self.args.lang, time.time()))
            if st.my_turn():
                self._prompt()
        elif kind == "event":
            st.apply(m.event)
            body = m.event.WhichOneof("body")
            if body == "deal_scored":
                d = m.event.deal_scored
                name = CONTRACT_NAMES[self.args.lang].get(d.contract, "?")
                self.say(f"deal scored ({ar(name, self.args.lang)}): {list(d.points.values)} totals {st.totals}")
                if self.args.deals and st.deals_scored >= self.args.deals:
                    self.say("stopping after the requested deals")
                    return True
            elif body == "game_ended":
                self.say(f"game over: totals {st.totals} ranking {list(m.event.game_ended.ranking)}")
                return True
            elif body == "card_played":
                cp = m.event.card_played
                self.say(f"seat {cp.seat} played {card_str(cp.card.id)}")
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
                self.client.cut()
                return
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
            self.client.send(gateway_pb2.SessionRequest(action=action))


async def _play(args: argparse.Namespace, target: str) -> int:
    client = GatewayClient(target)
    device = args.device_file or (Path(args.state_dir) / "device_secret")
    try:
        player = await client.sign_in(_device_secret(device), args.name or os.environ.get("USER", "guest"))
        print(f"signed in as {player}", flush=True)
        return await Terminal(client, args).run()
    except grpc.aio.AioRpcError as err:
        print(f"trix play: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def run_play(args: argparse.Namespace) -> int:
    platform: EmbeddedPlatform | None = None
    target = args.server
    if not target:
        print("starting the embedded platform...", flush=True)
        platform = EmbeddedPlatform(Path(args.state_dir))
        try:
            target = platform.start()
        except RuntimeError as err:
            platform.stop()
            print(f"trix play: {err}", file=sys.stderr)
            return 1
        print(f"gateway at {target}", flush=True)
    try:
        return asyncio.run(_play(args, target))
    except KeyboardInterrupt:
        return 130
    finally:
        if platform is not None:
            platform.stop()


def temp_state_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
