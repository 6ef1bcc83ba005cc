// The score sheet as players keep it on paper (issue 39), from the state's scored deals: one
// group per kingdom (its owner, docs/rules.md §3), one row per deal (its contract, the cards
// doubled in it, §7, and each seat's points), a running total after each finished kingdom, the
// grand total; in partnership the partners' columns side by side and the teams' totals (§2);
// at the end each seat's or team's place as the rules rank them (§8). Pure: the view draws it.
import { Contract, Variant } from "../gen/trix/v1/common_pb";
import type { DealRow, Doubled, GameState } from "./state";
import { isPartnership } from "./state";

export type SheetDeal = { dealIndex: number; contract: Contract; doubles: Doubled[]; points: number[] };
export type SheetKingdom = {
  kingdom: number;
  owner: number;
  deals: SheetDeal[];
  /** Every contract of the kingdom played (§3): its running-total row is drawn. */
  complete: boolean;
  /** Each seat's total after this kingdom's scored deals. */
  running: number[];
  /** Each team's total after them (partnership; [] otherwise). */
  teamRunning: number[];
};
export type Sheet = {
  partnership: boolean;
  /** The seats' columns, left to right: partners side by side in partnership (0, 2 | 1, 3). */
  columns: number[];
  /** The teams' seats (partnership; [] otherwise): team 0 is seats 0 and 2. */
  teams: number[][];
  kingdoms: SheetKingdom[];
  totals: number[];
  teamTotals: number[];
};
/** One line of the final ranking: a seat, or a team of two in partnership. */
export type Standing = { seats: number[]; place: number; points: number };

export const TEAMS = [
  [0, 2],
  [1, 3],
];

/** Contracts in a kingdom (docs/rules.md §2): five in TRIX, two in COMPLEX. */
export function contractsPerKingdom(v: Variant): number {
  return v === Variant.COMPLEX || v === Variant.COMPLEX_PARTNERSHIP ? 2 : 5;
}

const add = (a: number[], b: number[]): number[] => [0, 1, 2, 3].map((s) => (a[s] ?? 0) + (b[s] ?? 0));
const teamSums = (points: number[]): number[] => TEAMS.map((team) => team.reduce((sum, s) => sum + (points[s] ?? 0), 0));

const sheetDeal = (d: DealRow): SheetDeal => ({ dealIndex: d.dealIndex, contract: d.contract, doubles: d.doubles, points: [...d.points] });

export function buildSheet(g: GameState): Sheet {
  const partnership = isPartnership(g.variant);
  const per = contractsPerKingdom(g.variant);
  const kingdoms: SheetKingdom[] = [];
  let running = [0, 0, 0, 0];
  for (const d of g.deals) {
    let k = kingdoms[kingdoms.length - 1];
    if (!k || k.kingdom !== d.kingdom) {
      k = { kingdom: d.kingdom, owner: d.owner, deals: [], complete: false, running, teamRunning: [] };
      kingdoms.push(k);
    }
    k.deals.push(sheetDeal(d));
    running = add(running, d.points);
    k.running = running;
    k.complete = k.deals.length >= per;
  }
  // The kingdom being played heads its group before its first deal is scored.
  const last = kingdoms[kingdoms.length - 1];
  if (!g.finished && g.owner >= 0 && (!last || last.kingdom < g.kingdom)) {
    kingdoms.push({ kingdom: g.kingdom, owner: g.owner, deals: [], complete: false, running, teamRunning: [] });
  }
  for (const k of kingdoms) k.teamRunning = partnership ? teamSums(k.running) : [];
  return {
    partnership,
    columns: partnership ? TEAMS.flat() : [0, 1, 2, 3],
    teams: partnership ? TEAMS : [],
    kingdoms,
    totals: [0, 1, 2, 3].map((s) => g.totals[s] ?? 0),
    teamTotals: partnership ? teamSums(g.totals) : [],
  };
}

/** Each seat's place (docs/rules.md §8): the server's ranking once the game is over; before
 * that (or without it), by the totals: singles 1 + the seats with a strictly greater total
 * (1, 1, 3, 4), partnership the team's place by the team totals (a draw shared). */
export function places(g: GameState): number[] {
  if (g.ranking.length === 4) return [...g.ranking];
  const totals = [0, 1, 2, 3].map((s) => g.totals[s] ?? 0);
  if (isPartnership(g.variant)) {
    const [a = 0, b = 0] = teamSums(totals);
    return [0, 1, 2, 3].map((s) => 1 + ((s % 2 === 0 ? b : a) > (s % 2 === 0 ? a : b) ? 1 : 0));
  }
  return totals.map((t) => 1 + totals.filter((u) => u > t).length);
}

/** The final ranking's lines, best place first (ties by points, then seat): four seats, or the
 * two teams in partnership (the rules place teams, §8). */
export function standings(g: GameState): Standing[] {
  const place = places(g);
  const lines: Standing[] = isPartnership(g.variant)
    ? TEAMS.map((seats) => ({ seats, place: place[seats[0] ?? 0] ?? 0, points: seats.reduce((sum, s) => sum + (g.totals[s] ?? 0), 0) }))
    : [0, 1, 2, 3].map((s) => ({ seats: [s], place: place[s] ?? 0, points: g.totals[s] ?? 0 }));
  return lines.sort((x, y) => x.place - y.place || y.points - x.points || (x.seats[0] ?? 0) - (y.seats[0] ?? 0));
}
