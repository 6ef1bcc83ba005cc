// The seat's state in the browser: built from SeatView snapshots and the table events the
// gateway sends (docs/rules.md §14: only what this seat may see). Pure functions: the same
// messages in give the same state out, whatever the order they were delivered in:
// an event at or below the last applied sequence is a duplicate (a resume overlaps, a
// snapshot covered it) and is dropped; a snapshot replaces everything it covers.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { Contract, Decision, Variant } from "../gen/trix/v1/common_pb";
import type { Card, Seat, TableOptions } from "../gen/trix/v1/common_pb";
import type { Event, TurnStarted } from "../gen/trix/v1/events_pb";
import type { LastTrick, SeatView } from "../gen/trix/v1/table_pb";

/** `autoPlay`: a competition's seat (`Seat.auto_play`, docs/rules.md §10): its player may let the
 * bot play it (`bot`) and take it back. */
export type SeatInfo = { index: number; playerId: string; name: string; bot: boolean; left: boolean; autoPlay: boolean };
export type Played = { seat: number; card: number };
export type Turn = {
  seats: number[];
  decision: Decision;
  turnSeq: bigint;
  /** When the timers act, on the server's clock (ms since the epoch). */
  deadlineMs: number;
  clientSeeds: boolean;
  legalCards: number[];
  legalContracts: Contract[];
};
/** A seat's doubled cards in a deal (docs/rules.md §7: public once doubled). */
export type Doubled = { seat: number; cards: number[] };
/** One row of the score sheet: a scored deal, its kingdom and owner (docs/rules.md §3), and
 * the cards doubled in it, by seat (seats that doubled nothing are left out). */
export type DealRow = { dealIndex: number; kingdom: number; owner: number; contract: Contract; points: number[]; doubles: Doubled[] };
export type Notice = { kind: "auto-card" | "auto-contract" | "auto-double" | "left"; seat: number; card?: number; contract?: Contract };

export type GameState = {
  tableId: string;
  /** This player's seat; -1 for a spectator. */
  seat: number;
  /** The last table sequence applied: resume from here. */
  sequence: bigint;
  variant: Variant;
  options: TableOptions | null;
  seats: SeatInfo[];
  commitment: string;
  /** Coins each player staked; 0 on a free table (docs/rules.md §13). */
  stake: number;
  /** A competition's table: a leaver ends the game, ranked last, and is out (docs/rules.md §10). */
  leaveEndsGame: boolean;
  hand: number[];
  handSizes: number[];
  dealIndex: number;
  kingdom: number;
  owner: number;
  contract: Contract;
  trick: Played[];
  lastTrick: { cards: Played[]; taker: number } | null;
  /** TRIX (§6): cards on the table. */
  layout: number[];
  doubles: Doubled[];
  passes: number[];
  out: { seat: number; place: number; points: number }[];
  totals: number[];
  deals: DealRow[];
  turn: Turn | null;
  /** Server clock minus ours (ms), from the last event or view time: countdowns use it. */
  clockOffsetMs: number;
  finished: boolean;
  ranking: number[];
  recordJson: string;
  notices: Notice[];
  /** How many events were applied and dropped (duplicates), for the tests and a debug line. */
  applied: number;
  dropped: number;
};

export function emptyState(tableId = "", seat = -1): GameState {
  return {
    tableId,
    seat,
    sequence: 0n,
    variant: Variant.UNSPECIFIED,
    options: null,
    seats: [0, 1, 2, 3].map((i) => ({ index: i, playerId: "", name: "", bot: false, left: false, autoPlay: false })),
    commitment: "",
    stake: 0,
    leaveEndsGame: false,
    hand: [],
    handSizes: [0, 0, 0, 0],
    dealIndex: 0,
    kingdom: 0,
    owner: -1,
    contract: Contract.UNSPECIFIED,
    trick: [],
    lastTrick: null,
    layout: [],
    doubles: [],
    passes: [],
    out: [],
    totals: [0, 0, 0, 0],
    deals: [],
    turn: null,
    clockOffsetMs: 0,
    finished: false,
    ranking: [],
    recordJson: "",
    notices: [],
    applied: 0,
    dropped: 0,
  };
}

const ids = (cards: Card[]): number[] => cards.map((c) => c.id);
const sorted = (cards: number[]): number[] => [...cards].sort((a, b) => a - b);
const ms = (t: Timestamp | undefined): number => (t ? timestampMs(t) : 0);

/** Control and bidi-override characters never reach the screen (issue 20, names). */
export function cleanName(name: string): string {
  return name.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, "").trim().slice(0, 32);
}

function seatInfo(seats: Seat[], old: SeatInfo[]): SeatInfo[] {
  return [0, 1, 2, 3].map((i) => {
    const s = seats.find((x) => x.index === i);
    const prev = old[i];
    return {
      index: i,
      playerId: s?.playerId ?? prev?.playerId ?? "",
      name: cleanName(s?.displayName ?? "") || prev?.name || "",
      bot: s?.bot ?? prev?.bot ?? false,
      left: prev?.left ?? false,
      autoPlay: s?.autoPlay ?? prev?.autoPlay ?? false,
    };
  });
}

function trickOf(leader: number, cards: Card[], taker: number): { cards: Played[]; taker: number } {
  return { cards: ids(cards).map((card, i) => ({ seat: (leader + i) % 4, card })), taker };
}

const lastTrickOf = (t: LastTrick | undefined) => (t ? trickOf(t.leader, t.cards, t.taker) : null);

/** The sheet's rows in deal order, one per deal (a deal scored again replaces its row). */
function withRow(deals: DealRow[], row: DealRow): DealRow[] {
  return [...deals.filter((d) => d.dealIndex !== row.dealIndex), row].sort((a, b) => a.dealIndex - b.dealIndex);
}

/** The answers that doubled a card, in seat order: the sheet's marks of a scored deal. */
function doubledOnly(answers: Doubled[]): Doubled[] {
  return answers.filter((a) => a.cards.length).sort((a, b) => a.seat - b.seat);
}

function turnOf(t: TurnStarted): Turn {
  return {
    seats: [...t.seats],
    decision: t.decision,
    turnSeq: t.turnSeq,
    deadlineMs: ms(t.deadline),
    clientSeeds: t.clientSeeds,
    legalCards: sorted(ids(t.legalCards)),
    legalContracts: [...t.legalContracts],
  };
}

/** Replace the state with a fresh view (a first load, a reload, or a resume gap too old). */
export function applySnapshot(prev: GameState, view: SeatView, receivedAtMs: number = Date.now()): GameState {
  if (view.sequence < prev.sequence && prev.tableId === view.tableId) return { ...prev, dropped: prev.dropped + 1 };
  const s = emptyState(view.tableId, view.seat);
  const sameDeal = prev.tableId === view.tableId && prev.dealIndex === view.dealIndex && prev.sequence > 0n;
  const turn = view.turn ? turnOf(view.turn) : null;
  if (turn && view.seat >= 0 && turn.seats.includes(view.seat)) {
    turn.legalCards = sorted(ids(view.legalCards));
    turn.legalContracts = [...view.legalContracts];
  }
  const trickCards = ids(view.trick);
  // SeatView.trick is in play order without seats: the seat due to play is next after the last.
  const next = turn && turn.decision === Decision.CARD ? (turn.seats[0] ?? 0) : 0;
  const trick = trickCards.map((card, i) => ({ seat: (next - trickCards.length + i + 8) % 4, card }));
  return {
    ...s,
    sequence: view.sequence,
    variant: view.variant,
    options: view.options ?? null,
    seats: seatInfo(view.seats, prev.tableId === view.tableId ? prev.seats : s.seats),
    commitment: view.commitment,
    stake: prev.tableId === view.tableId ? prev.stake : 0,
    leaveEndsGame: view.leaveEndsGame,
    hand: sorted(ids(view.hand)),
    handSizes: [...view.handSizes],
    dealIndex: view.dealIndex,
    kingdom: view.kingdom,
    owner: view.owner,
    contract: view.contract,
    trick,
    // The score sheet, the last trick, TRIX passes and who is out: the view carries them
    // (issue 39: a reload kept only the Total row).
    lastTrick: lastTrickOf(view.lastTrick),
    passes: [...view.passes],
    out: view.out.map((o) => ({ seat: o.seat, place: o.place, points: o.points })),
    notices: sameDeal ? prev.notices : [],
    layout: ids(view.layout),
    doubles: view.doubles.map((d) => ({ seat: d.seat, cards: ids(d.cards) })),
    totals: view.totals ? [...view.totals.values] : [0, 0, 0, 0],
    deals: view.deals.map((d) => ({
      dealIndex: d.dealIndex,
      kingdom: d.kingdom,
      owner: d.owner,
      contract: d.contract,
      points: [...(d.points?.values ?? [])],
      doubles: doubledOnly(d.doubles.map((a) => ({ seat: a.seat, cards: ids(a.cards) }))),
    })),
    turn,
    clockOffsetMs: view.serverTime ? ms(view.serverTime) - receivedAtMs : 0,
    finished: view.finished,
    recordJson: prev.tableId === view.tableId ? prev.recordJson : "",
    ranking: prev.tableId === view.tableId ? prev.ranking : [],
    applied: prev.applied,
    dropped: prev.dropped,
  };
}

/** True when `ev` skips a sequence after the state's last: an event in between never reached
 * us (every seat and spectator gets a copy of every sequence, docs/rules.md §14), so the
 * state cannot take it; the follower asks for a fresh view and resumes after it. */
export function isGap(prev: GameState, ev: Event): boolean {
  return prev.sequence > 0n && ev.sequence > prev.sequence + 1n && (!prev.tableId || !ev.tableId || ev.tableId === prev.tableId);
}

/** Apply one table event; a duplicate (sequence already applied) changes nothing but the count. */
export function applyEvent(prev: GameState, ev: Event, receivedAtMs: number = Date.now()): GameState {
  if (ev.sequence <= prev.sequence && ev.sequence !== 0n) return { ...prev, dropped: prev.dropped + 1 };
  const s: GameState = { ...prev, sequence: ev.sequence > prev.sequence ? ev.sequence : prev.sequence, applied: prev.applied + 1 };
  if (ev.tableId) s.tableId = ev.tableId;
  // The server's clock from the event that starts a turn (events replayed on a resume carry
  // old times: they would skew the countdown).
  if (ev.time && ev.body.case === "turnStarted") s.clockOffsetMs = ms(ev.time) - receivedAtMs;
  const b = ev.body;
  switch (b.case) {
    case "tableCreated":
      s.variant = b.value.variant;
      s.options = b.value.options ?? null;
      s.seats = seatInfo(b.value.seats, s.seats);
      s.commitment = b.value.commitment;
      s.stake = Number(b.value.stake?.coins ?? 0n);
      s.leaveEndsGame = b.value.leaveEndsGame;
      break;
    case "dealStarted":
      s.dealIndex = b.value.dealIndex;
      s.kingdom = b.value.kingdom;
      s.owner = b.value.owner;
      s.hand = sorted(ids(b.value.hand));
      s.handSizes = [13, 13, 13, 13];
      s.contract = Contract.UNSPECIFIED;
      s.trick = [];
      s.lastTrick = null;
      s.layout = [];
      s.doubles = [];
      s.passes = [];
      s.out = [];
      s.notices = [];
      break;
    case "contractChosen":
      s.contract = b.value.contract;
      if (b.value.automatic) s.notices = [...s.notices, { kind: "auto-contract", seat: b.value.seat, contract: b.value.contract }];
      break;
    case "doubleAnswered": {
      const a = b.value.answer;
      if (a) s.doubles = [...s.doubles.filter((d) => d.seat !== a.seat), { seat: a.seat, cards: ids(a.cards) }];
      if (b.value.automatic && a) s.notices = [...s.notices, { kind: "auto-double", seat: a.seat }];
      break;
    }
    case "doublesRevealed":
      s.doubles = b.value.answers.map((a) => ({ seat: a.seat, cards: ids(a.cards) }));
      break;
    case "cardPlayed": {
      const { seat, automatic } = b.value;
      const card = b.value.card?.id ?? -1;
      if (seat === s.seat) s.hand = s.hand.filter((c) => c !== card);
      s.handSizes = s.handSizes.map((n, i) => (i === seat ? Math.max(0, n - 1) : n));
      if (s.contract === Contract.TRIX) s.layout = [...s.layout, card];
      else s.trick = [...s.trick, { seat, card }];
      s.passes = s.passes.filter((p) => p !== seat);
      if (automatic) s.notices = [...s.notices, { kind: "auto-card", seat, card }];
      if (s.turn) s.turn = null;
      break;
    }
    case "trickTaken": {
      s.lastTrick = trickOf(b.value.leader, b.value.cards, b.value.taker);
      s.trick = [];
      break;
    }
    case "seatPassed":
      s.passes = [...s.passes.filter((p) => p !== b.value.seat), b.value.seat];
      break;
    case "seatOut":
      s.out = [...s.out, { seat: b.value.seat, place: b.value.place, points: b.value.points }];
      break;
    case "dealScored":
      s.deals = withRow(s.deals, {
        dealIndex: b.value.dealIndex,
        kingdom: s.kingdom,
        owner: s.owner,
        contract: b.value.contract,
        points: [...(b.value.points?.values ?? [])],
        doubles: doubledOnly(s.doubles),
      });
      if (b.value.totals) s.totals = [...b.value.totals.values];
      s.turn = null;
      break;
    case "gameEnded":
      s.finished = true;
      s.turn = null;
      s.recordJson = b.value.recordJson;
      s.ranking = [...b.value.ranking];
      if (b.value.totals) s.totals = [...b.value.totals.values];
      break;
    case "seatLeft":
      s.seats = s.seats.map((x) => (x.index === b.value.seat ? { ...x, left: true } : x));
      s.notices = [...s.notices, { kind: "left", seat: b.value.seat }];
      break;
    case "seatControlChanged":
      s.seats = s.seats.map((x) => (x.index === b.value.seat ? { ...x, bot: b.value.bot } : x));
      break;
    case "turnStarted":
      s.turn = turnOf(b.value);
      break;
    default:
      break;
  }
  return s;
}

/** Seconds left on the turn, on the server's clock (docs/rules.md §9). */
export function secondsLeft(s: GameState, nowMs: number = Date.now()): number {
  if (!s.turn || !s.turn.deadlineMs) return 0;
  return Math.max(0, Math.ceil((s.turn.deadlineMs - (nowMs + s.clockOffsetMs)) / 1000));
}

export function myTurn(s: GameState): boolean {
  return !!s.turn && s.seat >= 0 && s.turn.seats.includes(s.seat) && !s.finished;
}

export function isPartnership(v: Variant): boolean {
  return v === Variant.TRIX_PARTNERSHIP || v === Variant.COMPLEX_PARTNERSHIP;
}

/** The cards a seat may double in this deal (docs/rules.md §7): KH in KING, queens in QUEENS
 * (COMPLEX: both), of those the seat holds. */
export function doublable(s: GameState): number[] {
  const KH = 2 * 13 + 11;
  const queens = [10, 23, 36, 49];
  const pool = s.contract === Contract.KING ? [KH] : s.contract === Contract.QUEENS ? queens : s.contract === Contract.COMPLEX ? [KH, ...queens] : [];
  return s.hand.filter((c) => pool.includes(c));
}
