// The competitions' data (issue 43), without drawing: a listed competition as a row (fee,
// prize, entrants of the capacity, start, what the player may do and what leaving gives back),
// a knockout's bracket round by round (future rounds drawn empty), a points competition's
// standings, the player's own status and his next table, and the payouts. The rules are the
// service's (docs/adr/0026): half the fee back for leaving before the start (rounded down),
// nothing after; a pool prize keeps the house fee first; a bot's id starts with `bot-`.
import type { Competition, CompetitionLedgerEntry, CompetitionOptions, CompetitionTable, StandingRow } from "../gen/trix/v1/competitions_pb";
import { CompetitionFormat, CompetitionState, EntrantState } from "../gen/trix/v1/competitions_pb";
import { Variant } from "../gen/trix/v1/common_pb";

export type Stage = "registration" | "closed" | "running" | "review" | "finished" | "cancelled";

const STAGES: Record<number, Stage> = {
  [CompetitionState.REGISTRATION]: "registration",
  [CompetitionState.CLOSED]: "closed",
  [CompetitionState.RUNNING]: "running",
  [CompetitionState.REVIEW]: "review",
  [CompetitionState.FINISHED]: "finished",
  [CompetitionState.CANCELLED]: "cancelled",
};

export const stageOf = (state: CompetitionState): Stage => STAGES[state] ?? "registration";

/** docs/adr/0026: a pool prize's house fee when the organiser set none. */
export const DEFAULT_HOUSE_FEE_PERCENT = 10;

export const isBot = (player: string): boolean => player.startsWith("bot-");

export const isPartnershipVariant = (v: Variant): boolean => v === Variant.TRIX_PARTNERSHIP || v === Variant.COMPLEX_PARTNERSHIP;

/** The prize as the page shows it: fixed coins per place, or shares of the pool with the
 * coins they come to with the entrants so far. */
export type PrizeView =
  | { kind: "fixed"; coins: number[] }
  | { kind: "pool"; shares: number[]; houseFee: number; pool: number; coins: number[] }
  | { kind: "none" };

/** docs/adr/0026 "Money": floor(pool * house fee / 100) kept first, the rest shared by the
 * percentages (rounded down), the remainder to the first place. */
export function poolCoins(pool: number, shares: readonly number[], houseFee: number): number[] {
  const shared = pool - Math.floor((pool * houseFee) / 100);
  const coins = shares.map((s) => Math.floor((shared * s) / 100));
  if (coins.length) coins[0] = (coins[0] ?? 0) + shared - coins.reduce((a, b) => a + b, 0);
  return coins;
}

export function prizeView(o: CompetitionOptions | undefined, entrants: number): PrizeView {
  const p = o?.prize;
  if (p?.case === "fixed" && p.value.coins.length) return { kind: "fixed", coins: p.value.coins.map(Number) };
  if (p?.case === "pool" && p.value.sharesPercent.length) {
    const houseFee = p.value.houseFeePercent ?? DEFAULT_HOUSE_FEE_PERCENT;
    const pool = Number(o?.entryFee ?? 0n) * entrants;
    return { kind: "pool", shares: [...p.value.sharesPercent], houseFee, pool, coins: poolCoins(pool, p.value.sharesPercent, houseFee) };
  }
  return { kind: "none" };
}

/** Coins that come back to an entrant leaving now: half the fee before the start, none after. */
export function leaveRefund(fee: number, stage: Stage): number {
  return stage === "registration" || stage === "closed" ? Math.floor(fee / 2) : 0;
}

/** A competition as a row of the Competitions tab. */
export type CompetitionRow = {
  id: string;
  variant: Variant;
  format: "knockout" | "points";
  rounds: number;
  stage: Stage;
  fee: number;
  prize: PrizeView;
  entrants: number;
  capacity: number;
  startsAtMs: number;
  closesAtMs: number;
  /** The player's own entry (null: not entered, or left / refused). */
  mine: "pending" | "accepted" | "out" | null;
  canRegister: boolean;
  canLeave: boolean;
  /** What leaving now gives back (half the fee before the start). */
  refund: number;
  organiser: boolean;
};

/** Entrants still counted once it has started: those knocked out too (they played). */
const ENTERED = new Set([EntrantState.PENDING, EntrantState.ACCEPTED, EntrantState.OUT]);

export function competitionRow(c: Competition, me: string, nowMs: number): CompetitionRow {
  const o = c.options;
  const stage = stageOf(c.state);
  const fee = Number(o?.entryFee ?? 0n);
  const entrants = c.entrants.filter((e) => ENTERED.has(e.state)).length;
  const own = c.entrants.find((e) => e.playerId === me);
  const mine =
    own?.state === EntrantState.PENDING ? "pending" : own?.state === EntrantState.ACCEPTED ? "accepted" : own?.state === EntrantState.OUT ? "out" : null;
  const closesAtMs = Number(o?.registrationClosesAtMs ?? 0n);
  const capacity = o?.capacity ?? 0;
  return {
    id: c.competitionId,
    variant: o?.variant ?? Variant.TRIX,
    format: o?.format === CompetitionFormat.POINTS ? "points" : "knockout",
    rounds: o?.rounds ?? 0,
    stage,
    fee,
    prize: prizeView(o, entrants),
    entrants,
    capacity,
    startsAtMs: Number(o?.startsAtMs ?? 0n),
    closesAtMs,
    mine,
    canRegister: stage === "registration" && mine === null && entrants < capacity && (closesAtMs === 0 || nowMs < closesAtMs),
    // After the start a player leaves by leaving his table (ranked last there, out: §10).
    canLeave: (mine === "pending" || mine === "accepted") && (stage === "registration" || stage === "closed"),
    refund: leaveRefund(fee, stage),
    organiser: c.organiserId === me,
  };
}

/** The tab's three lists: open for registration (or about to start), being played (or in
 * review), and finished; each soonest (or latest) first. */
export function sections(rows: readonly CompetitionRow[]): { open: CompetitionRow[]; running: CompetitionRow[]; finished: CompetitionRow[] } {
  const by = (stages: Stage[]) => rows.filter((r) => stages.includes(r.stage));
  return {
    open: by(["registration", "closed"]).sort((a, b) => a.startsAtMs - b.startsAtMs),
    running: by(["running", "review"]).sort((a, b) => a.startsAtMs - b.startsAtMs),
    finished: by(["finished", "cancelled"]).sort((a, b) => b.startsAtMs - a.startsAtMs),
  };
}

/** A seat of a bracket's table. `on`: went on to the next round (knockout). */
export type BracketSeat = { player: string; bot: boolean; me: boolean; place: number | null; on: boolean };
export type BracketTable = { tableId: string; round: number; index: number; ended: boolean; seats: BracketSeat[]; mine: boolean };
/** A round: its tables so far, and how many it has in all (the rest not drawn yet). */
export type BracketRound = { round: number; tables: BracketTable[]; expected: number };

/** The tables each knockout round has: 4 seats a table; one player (a team of two in
 * partnership) goes on from each, so the field is divided by 4 (by 2 in partnership). */
export function knockoutTables(capacity: number, rounds: number, partnership: boolean): number[] {
  const out: number[] = [];
  let field = capacity;
  for (let r = 0; r < rounds; r++) {
    out.push(Math.max(1, Math.ceil(field / 4)));
    field = partnership ? field / 2 : field / 4;
  }
  return out;
}

function byRound(tables: readonly CompetitionTable[]): Map<number, CompetitionTable[]> {
  const m = new Map<number, CompetitionTable[]>();
  for (const t of [...tables].sort((a, b) => a.round - b.round || a.index - b.index)) {
    const list = m.get(t.round) ?? [];
    list.push(t);
    m.set(t.round, list);
  }
  return m;
}

/** The bracket, every round from the first to the last: `expected` from the options
 * (`knockoutTables`), or the tables seated for a points competition. */
export function bracketView(tables: readonly CompetitionTable[], me: string, expected: readonly number[] = []): BracketRound[] {
  const rounds = byRound(tables);
  const last = Math.max(expected.length, ...rounds.keys(), 0);
  const out: BracketRound[] = [];
  for (let r = 1; r <= last; r++) {
    const list = rounds.get(r) ?? [];
    const next = rounds.get(r + 1);
    const onNext = next ? new Set(next.flatMap((t) => t.players)) : null;
    out.push({
      round: r,
      expected: Math.max(expected[r - 1] ?? 0, list.length),
      tables: list.map((t) => ({
        tableId: t.tableId,
        round: t.round,
        index: t.index,
        ended: t.ended,
        mine: t.players.includes(me),
        seats: t.players.map((p, s) => {
          const place = t.ended && t.places[s] !== undefined && t.places[s] > 0 ? t.places[s] : null;
          return { player: p, bot: isBot(p), me: p === me, place, on: onNext ? onNext.has(p) : t.ended && r < last && place === 1 };
        }),
      })),
    });
  }
  return out;
}

/** The player's next table: the latest one he is seated at that has not ended. */
export function myNextTable(tables: readonly CompetitionTable[], me: string): { tableId: string; seat: number; round: number } | null {
  let best: { tableId: string; seat: number; round: number } | null = null;
  for (const t of tables) {
    const seat = t.players.indexOf(me);
    if (seat >= 0 && !t.ended && (!best || t.round > best.round)) best = { tableId: t.tableId, seat, round: t.round };
  }
  return best;
}

/** The player's latest table, ended or not (the one whose result he has not seen yet, when a
 * round was played while he was not looking). */
export function myLatestTable(tables: readonly CompetitionTable[], me: string): { tableId: string; seat: number; round: number } | null {
  let best: { tableId: string; seat: number; round: number } | null = null;
  for (const t of tables) {
    const seat = t.players.indexOf(me);
    if (seat >= 0 && (!best || t.round > best.round)) best = { tableId: t.tableId, seat, round: t.round };
  }
  return best;
}

/** Where the player stands, in words the page picks by `kind`. */
export type MyStatus =
  | { kind: "none" } // not entered
  | { kind: "pending" } // waiting for the organiser
  | { kind: "registered" } // waiting for the start
  | { kind: "playing"; tableId: string; round: number }
  | { kind: "through"; round: number } // went on, waiting for the next round's draw
  | { kind: "out"; round: number }
  | { kind: "placed"; place: number } // the final ranking (review, finished)
  | { kind: "cancelled" };

/** The final ranking's entries are units, each unit's players joined by `+`. */
export function rankOf(ranking: readonly string[], me: string): number {
  const i = ranking.findIndex((u) => u.split("+").includes(me));
  return i < 0 ? 0 : i + 1;
}

export function myStatus(c: Competition, tables: readonly CompetitionTable[], ranking: readonly string[], me: string): MyStatus {
  const stage = stageOf(c.state);
  const own = c.entrants.find((e) => e.playerId === me);
  if (stage === "cancelled") return own ? { kind: "cancelled" } : { kind: "none" };
  const place = rankOf(ranking, me);
  if ((stage === "review" || stage === "finished") && place > 0) return { kind: "placed", place };
  if (!own || own.state === EntrantState.REFUSED || own.state === EntrantState.LEFT_BEFORE_START) return { kind: "none" };
  if (own.state === EntrantState.PENDING) return { kind: "pending" };
  const next = myNextTable(tables, me);
  if (next) return { kind: "playing", tableId: next.tableId, round: next.round };
  const seated = tables.filter((t) => t.players.includes(me));
  if (!seated.length) return stage === "running" && own.state === EntrantState.OUT ? { kind: "out", round: 0 } : { kind: "registered" };
  const lastRound = Math.max(...seated.map((t) => t.round));
  const knockout = c.options?.format !== CompetitionFormat.POINTS;
  const at = seated.find((t) => t.round === lastRound);
  const won = at ? at.places[at.players.indexOf(me)] === 1 : false;
  if (own.state === EntrantState.OUT || (knockout && !won)) return { kind: "out", round: lastRound };
  return { kind: "through", round: lastRound };
}

/** A unit's line in the standings, with its rank (ties share none: the service's order is the tiebreak). */
export type StandingLine = { rank: number; players: string[]; points: number; wins: number; score: number; out: boolean; me: boolean };

export function standingsView(rows: readonly StandingRow[], me: string): StandingLine[] {
  return rows.map((r, i) => ({
    rank: i + 1,
    players: [...r.players],
    points: r.points,
    wins: r.wins,
    score: Number(r.score),
    out: r.out,
    me: r.players.includes(me),
  }));
}

/** The payouts as the page lists them: each player's prize and refund, best prize first, and
 * the sums that must agree (fees = prizes + refunds + the house's share). */
export type PayoutLine = { player: string; prize: number; refund: number; me: boolean };
export type Payouts = { lines: PayoutLine[]; fees: number; prizes: number; refunds: number; house: number; conserved: boolean };

export function payoutsView(entries: readonly CompetitionLedgerEntry[], me: string): Payouts {
  const lines = new Map<string, PayoutLine>();
  let fees = 0;
  let prizes = 0;
  let refunds = 0;
  let house = 0;
  for (const e of entries) {
    const coins = Number(e.coins);
    if (e.kind === "hold") fees += coins;
    else if (e.kind === "house") house += coins;
    else if (e.kind === "prize" || e.kind === "refund") {
      const line = lines.get(e.playerId) ?? { player: e.playerId, prize: 0, refund: 0, me: e.playerId === me };
      if (e.kind === "prize") {
        line.prize += coins;
        prizes += coins;
      } else {
        line.refund += coins;
        refunds += coins;
      }
      lines.set(e.playerId, line);
    }
  }
  return {
    lines: [...lines.values()].sort((a, b) => b.prize - a.prize || b.refund - a.refund),
    fees,
    prizes,
    refunds,
    house,
    conserved: fees === prizes + refunds + house,
  };
}

/** The review period's time left (ms, never negative); complaints are open while it is > 0. */
export const reviewLeftMs = (c: Competition, nowMs: number): number => Math.max(0, Number(c.reviewEndsAtMs) - nowMs);
