// The whole record checked in the browser (issue 39): the number of deals, every deal's play
// replayed through the rules engine (engine.ts: the server's C engine as WebAssembly), every
// deal's points, the totals and the ranking. The walk over the record is the twin of
// services/trix/records.py `replay` (docs/rules.md §12): it reads the record, gives the
// doubling answers a record leaves out, and compares; every rule is the engine's answer.
// The commitment and the hands (§11) are verify.ts's, which calls this with the hands.
import { cardId } from "./cards";
import { PHASE_DOUBLING, PHASE_GAME_OVER, PHASE_PLAY, WasmGame } from "./engine";
import type { EngineOptions, Refusal } from "./engine";

export const VARIANTS = ["TRIX", "TRIX_PARTNERSHIP", "COMPLEX", "COMPLEX_PARTNERSHIP"] as const;
export const CONTRACTS = ["KING", "QUEENS", "DIAMONDS", "TRICKS", "TRIX", "COMPLEX"] as const;
const REVEALS = ["SEQUENTIAL", "SIMULTANEOUS"];
const SELF_TAKES = ["NOBODY", "LEADER"];
const TIEBREAKS = ["LAST_TRIX", "SHARED"];
/** §2: 20 deals in the TRIX variants, 8 in the COMPLEX ones. */
export const NUM_DEALS = [20, 20, 8, 8];
const ACTION_CHOOSE_BASE = 52;
const ACTION_DOUBLE_BASE = 64;
/** §7 doubling mask bits: QC, QD, QH, QS, KH. */
const DOUBLE_BITS = ["QC", "QD", "QH", "QS", "KH"];

/** Why the play does not replay, in the record's terms; the page words it in its language. */
export type Reason =
  | { kind: "illegal"; refusal: Refusal; seat: number; action: number } // the engine refused the action
  | { kind: "malformed"; field: string } // a field of the record is not what §12 says
  | { kind: "owner"; recorded: number; owner: number } // §3 gives another owner
  | { kind: "contract-missing" }
  | { kind: "no-doubling" } // answers where doubling does not apply
  | { kind: "not-eligible"; seat: number } // §12: that seat's answer is left out
  | { kind: "answered" } // a seat answers twice, or after every seat has
  | { kind: "missing-answer"; seat: number }
  | { kind: "deal-ended" } // a card after the deal has ended
  | { kind: "unfinished"; next: number } // a deal stops short and another follows
  | { kind: "game-over" }; // a deal (or a leave) after the game has ended

/** Where in the record: a deal and, inside it, a play or a doubling answer (0 based). */
export type Where = { deal: number; play?: number; answer?: number };
export type PlayFailure = { where: Where; reason: Reason };

export type Check =
  | { id: "deals"; ok: boolean; count: number; expected: number; left: number | null }
  | { id: "play"; ok: true; deals: number; answers: number; cards: number }
  | { id: "play"; ok: false; failure: PlayFailure }
  | { id: "scores"; ok: boolean; deals: number; bad: { deal: number; recorded: number[]; replayed: number[] | null }[] }
  | { id: "totals"; ok: boolean; recorded: number[] | null; replayed: number[] }
  | { id: "ranking"; ok: boolean; recorded: number[] | null; replayed: number[] | null };

type Json = Record<string, unknown>;

class Refused extends Error {
  constructor(readonly failure: PlayFailure) {
    super("refused");
  }
}

function isObj(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function fail(where: Where, reason: Reason): never {
  throw new Refused({ where, reason });
}

function int4(v: unknown): number[] | null {
  return Array.isArray(v) && v.length === 4 && v.every((x) => Number.isInteger(x)) ? (v as number[]) : null;
}

function seatOf(v: unknown, where: Where, field: string): number {
  if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 3) fail(where, { kind: "malformed", field });
  return v as number;
}

function cardOf(v: unknown, where: Where, field: string): number {
  const id = typeof v === "string" ? cardId(v) : null;
  if (id === null) fail(where, { kind: "malformed", field });
  return id;
}

function pick(o: Json, key: string, names: readonly string[], fallback: number): number | null {
  const v = o[key];
  if (v === undefined) return fallback;
  const i = typeof v === "string" ? names.indexOf(v) : -1;
  return i < 0 ? null : i;
}

/** §12 options with their defaults; null when one is not a known value. */
export function recordOptions(rec: Json): EngineOptions | null {
  const o = rec.options === undefined || rec.options === null ? {} : rec.options;
  if (!isObj(o)) return null;
  const reveal = pick(o, "doubling_reveal", REVEALS, 0);
  const selfTake = pick(o, "doubling_self_take", SELF_TAKES, 0);
  const tiebreak = pick(o, "team_tiebreak", TIEBREAKS, 0);
  const doubling = o.doubling === undefined ? true : o.doubling;
  const earlyEnd = o.partnership_trix_early_end === undefined ? true : o.partnership_trix_early_end;
  if (reveal === null || selfTake === null || tiebreak === null) return null;
  if (typeof doubling !== "boolean" || typeof earlyEnd !== "boolean") return null;
  return { doubling, reveal, selfTake, tiebreak, earlyEnd };
}

function applyOrFail(game: WasmGame, seat: number, action: number, where: Where): number[] | null {
  const r = game.apply(seat, action);
  if ("refusal" in r) fail(where, { kind: "illegal", refusal: r.refusal, seat, action });
  return r.scores;
}

/** §7 / §12 doubling answers. False when the record stops mid-doubling (a running game). */
function replayDoubles(game: WasmGame, d: number, doubles: unknown[], sequential: boolean, mayStop: boolean): boolean {
  if (game.phase !== PHASE_DOUBLING || game.dealIndex !== d) {
    if (doubles.length) fail({ deal: d, answer: 0 }, { kind: "no-doubling" });
    return true;
  }
  const eligible = [0, 1, 2, 3].map((s) => game.eligibleDoubles(s) !== 0);
  const answered = new Set<number>();
  const open = () => game.phase === PHASE_DOUBLING && game.dealIndex === d;
  // §12 "the answers of seats without an eligible card (always "no") are left out"
  const autoAnswer = (seats: number[]) => {
    for (const s of seats) {
      if (open() && !answered.has(s) && !eligible[s]) {
        applyOrFail(game, s, ACTION_DOUBLE_BASE, { deal: d });
        answered.add(s);
      }
    }
  };
  const sequentialAuto = () => {
    while (open()) {
      const acting = game.toAct();
      const s = acting[0] as number;
      if (acting.length !== 1 || eligible[s] || answered.has(s)) return;
      autoAnswer(acting);
    }
  };
  doubles.forEach((item, a) => {
    const where = { deal: d, answer: a };
    if (!isObj(item) || !Array.isArray(item.cards)) fail(where, { kind: "malformed", field: "doubles" });
    const seat = seatOf(item.seat, where, "doubles");
    let mask = 0;
    for (const c of item.cards) {
      const bit = typeof c === "string" ? DOUBLE_BITS.indexOf(c) : -1;
      if (bit < 0 || mask & (1 << bit)) fail(where, { kind: "malformed", field: "doubles" });
      mask |= 1 << bit;
    }
    if (answered.has(seat) && eligible[seat]) fail(where, { kind: "answered" });
    if (!eligible[seat]) fail(where, { kind: "not-eligible", seat });
    if (sequential) sequentialAuto();
    if (!open()) fail(where, { kind: "answered" });
    applyOrFail(game, seat, ACTION_DOUBLE_BASE + mask, where);
    answered.add(seat);
  });
  if (sequential) sequentialAuto();
  else autoAnswer([0, 1, 2, 3]);
  if (open()) {
    if (mayStop) return false;
    const seat = sequential ? (game.toAct()[0] as number) : ([0, 1, 2, 3].find((s) => !answered.has(s)) as number);
    fail({ deal: d, answer: doubles.length }, { kind: "missing-answer", seat });
  }
  return true;
}

function replayDeal(game: WasmGame, deal: Json, d: number, isLast: boolean, sequential: boolean): number[] | null {
  const owner = game.owner;
  if (owner === null) fail({ deal: d }, { kind: "malformed", field: "owner" });
  if (deal.owner !== undefined && deal.owner !== null) {
    const recorded = seatOf(deal.owner, { deal: d }, "owner");
    if (recorded !== owner) fail({ deal: d }, { kind: "owner", recorded, owner });
  }
  const doubles = deal.doubles === undefined ? [] : deal.doubles;
  const plays = deal.plays === undefined ? [] : deal.plays;
  if (!Array.isArray(doubles)) fail({ deal: d }, { kind: "malformed", field: "doubles" });
  if (!Array.isArray(plays)) fail({ deal: d }, { kind: "malformed", field: "plays" });
  const contract = deal.contract;
  if (contract === undefined || contract === null) {
    // A running game may stop before the owner has picked (§12 "at most one unfinished deal").
    if (!isLast || doubles.length || plays.length) fail({ deal: d }, { kind: "contract-missing" });
    return null;
  }
  const c = typeof contract === "string" ? CONTRACTS.indexOf(contract as (typeof CONTRACTS)[number]) : -1;
  if (c < 0) fail({ deal: d }, { kind: "malformed", field: "contract" });
  applyOrFail(game, owner, ACTION_CHOOSE_BASE + c, { deal: d });
  if (!replayDoubles(game, d, doubles, sequential, isLast && plays.length === 0)) return null;
  let scores: number[] | null = null;
  plays.forEach((item: unknown, p: number) => {
    const where = { deal: d, play: p };
    if (!isObj(item)) fail(where, { kind: "malformed", field: "plays" });
    const seat = seatOf(item.seat, where, "plays");
    const card = cardOf(item.card, where, "plays");
    // §12 "A card after the deal has ended ... is illegal."
    if (scores !== null || game.dealIndex !== d || game.phase !== PHASE_PLAY) fail(where, { kind: "deal-ended" });
    scores = applyOrFail(game, seat, card, where);
  });
  if (scores === null && !isLast) fail({ deal: d, play: plays.length }, { kind: "unfinished", next: d + 1 });
  return scores;
}

/** The checks after the hands: `decks[d]` are deal d's four hands (card ids), as §11 gives them. */
export async function checkPlay(rec: Json, decks: number[][][]): Promise<Check[]> {
  const variant = VARIANTS.indexOf(rec.variant as (typeof VARIANTS)[number]);
  const deals = Array.isArray(rec.deals) ? (rec.deals as unknown[]) : [];
  const expected = NUM_DEALS[variant] ?? 20;
  const left = Number.isInteger(rec.left) ? (rec.left as number) : null;
  const options = recordOptions(rec);
  const checks: Check[] = [];
  const dealsCheck = (ok: boolean): Check => ({ id: "deals", ok, count: deals.length, expected, left });
  if (variant < 0 || !options || deals.length > expected) {
    const field = variant < 0 ? "variant" : !options ? "options" : "deals";
    return [dealsCheck(deals.length <= expected), { id: "play", ok: false, failure: { where: { deal: 0 }, reason: { kind: "malformed", field } } }];
  }
  const game = await WasmGame.create(variant, options, decks);
  const replayed: (number[] | null)[] = [];
  try {
    deals.forEach((deal, d) => {
      if (!isObj(deal)) fail({ deal: d }, { kind: "malformed", field: "deals" });
      if (game.phase === PHASE_GAME_OVER) fail({ deal: d }, { kind: "game-over" });
      replayed.push(replayDeal(game, deal, d, d === deals.length - 1, options.reveal === 0));
    });
    if (left !== null) {
      // §12 "seat S left a paid table for good after the last play in the record"
      if (game.phase === PHASE_GAME_OVER || game.leave(left) !== 0) fail({ deal: deals.length }, { kind: "game-over" });
    }
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    checks.push(dealsCheck(deals.length === expected || left !== null));
    checks.push({ id: "play", ok: false, failure: err.failure });
    return checks;
  }
  checks.push(dealsCheck(game.phase === PHASE_GAME_OVER));
  let answers = 0;
  let cards = 0;
  for (const deal of deals as Json[]) {
    answers += Array.isArray(deal.doubles) ? deal.doubles.length : 0;
    cards += Array.isArray(deal.plays) ? deal.plays.length : 0;
  }
  checks.push({ id: "play", ok: true, deals: deals.length, answers, cards });
  const bad: { deal: number; recorded: number[]; replayed: number[] | null }[] = [];
  (deals as Json[]).forEach((deal, d) => {
    const recorded = deal.scores === undefined || deal.scores === null ? null : int4(deal.scores);
    const mine = replayed[d] ?? null;
    if (deal.scores !== undefined && deal.scores !== null && (!recorded || JSON.stringify(recorded) !== JSON.stringify(mine)))
      bad.push({ deal: d, recorded: recorded ?? [], replayed: mine });
  });
  checks.push({ id: "scores", ok: bad.length === 0, deals: deals.length, bad });
  const totals = game.totals();
  const recTotals = rec.totals === undefined || rec.totals === null ? null : int4(rec.totals);
  const totalsOk = rec.totals === undefined || rec.totals === null || JSON.stringify(recTotals) === JSON.stringify(totals);
  checks.push({ id: "totals", ok: totalsOk, recorded: recTotals, replayed: totals });
  const ranking = game.ranking();
  const recRanking = rec.ranking === undefined || rec.ranking === null ? null : int4(rec.ranking);
  const rankingOk = !("ranking" in rec) || JSON.stringify(recRanking) === JSON.stringify(ranking);
  checks.push({ id: "ranking", ok: rankingOk, recorded: recRanking, replayed: ranking });
  return checks;
}
