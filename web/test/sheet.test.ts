// The score sheet's model (issue 39: a sheet like the one players keep on paper), on states the
// reducer built from event sequences as the gateway sends them, and from a reload's snapshot:
// rows grouped per kingdom with its owner, the doubled cards of each deal by seat, a running
// total after each kingdom, team totals in partnership, places as docs/rules.md §8 ranks them.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Contract, Variant } from "../src/gen/trix/v1/common_pb";
import { EventSchema } from "../src/gen/trix/v1/events_pb";
import type { Event } from "../src/gen/trix/v1/events_pb";
import { SeatViewSchema } from "../src/gen/trix/v1/table_pb";
import { buildSheet, places, standings } from "../src/client/sheet";
import { applyEvent, applySnapshot, emptyState } from "../src/client/state";
import type { GameState } from "../src/client/state";

const T = "sheet";
type Body = NonNullable<MessageInitShape<typeof EventSchema>["body"]>;
const KH = 2 * 13 + 11;
const QS = 3 * 13 + 10;
const QD = 1 * 13 + 10;
const card = (id: number) => ({ id });

/** A whole COMPLEX partnership game seen by seat 0 (docs/rules.md §2: four kingdoms of COMPLEX
 * and TRIX, 8 deals), the first kingdom seat 1's (he held 7H), then 2, 3, 0 (§3). Doubling in
 * every COMPLEX deal (§7): seat 1 doubles KH in the first and takes it himself, answered one by one; in the third
 * seats 0 and 3 double queens, revealed together; the others answer "no double". */
function game(): { events: Event[]; rows: [number, Contract, number[]][] } {
  const events: Event[] = [];
  let seq = 0;
  const e = (body: Body) => events.push(create(EventSchema, { tableId: T, sequence: BigInt(++seq), body }));
  e({ case: "tableCreated", value: { variant: Variant.COMPLEX_PARTNERSHIP, seats: [0, 1, 2, 3].map((i) => ({ index: i, playerId: `p${i}`, displayName: `P${i}`, bot: i > 0 })), commitment: "c" } });
  const rows: [number, Contract, number[]][] = [
    [1, Contract.COMPLEX, [-150, -95, -130, -200]],
    [1, Contract.TRIX, [200, 50, 150, 100]],
    [2, Contract.COMPLEX, [-95, -180, -125, -100]],
    [2, Contract.TRIX, [100, 150, 50, 200]],
    [3, Contract.TRIX, [50, 200, 100, 150]],
    [3, Contract.COMPLEX, [-125, -125, -125, -125]],
    [0, Contract.COMPLEX, [-200, -100, -100, -100]],
    [0, Contract.TRIX, [150, 100, 200, 50]],
  ];
  let totals = [0, 0, 0, 0];
  rows.forEach(([owner, contract, points], dealIndex) => {
    const kingdom = Math.floor(dealIndex / 2);
    e({ case: "dealStarted", value: { dealIndex, kingdom, owner, hand: [card(0)] } });
    e({ case: "contractChosen", value: { dealIndex, seat: owner, contract } });
    if (dealIndex === 0) {
      e({ case: "doubleAnswered", value: { dealIndex, answer: { seat: 1, cards: [card(KH)] } } });
      e({ case: "doubleAnswered", value: { dealIndex, answer: { seat: 2, cards: [] } } });
      e({ case: "doubleAnswered", value: { dealIndex, answer: { seat: 3, cards: [] }, automatic: true } });
      e({ case: "doubleAnswered", value: { dealIndex, answer: { seat: 0, cards: [] } } });
    }
    if (dealIndex === 2) {
      const answers = [{ seat: 0, cards: [card(QS)] }, { seat: 1, cards: [] }, { seat: 2, cards: [] }, { seat: 3, cards: [card(QD)] }];
      e({ case: "doublesRevealed", value: { dealIndex, answers } });
    }
    totals = totals.map((t, s) => t + (points[s] ?? 0));
    e({ case: "dealScored", value: { dealIndex, contract, points: { values: points }, totals: { values: totals } } });
  });
  e({ case: "gameEnded", value: { recordJson: "{}", ranking: [2, 1, 2, 1], totals: { values: totals } } });
  return { events, rows };
}

const fold = (events: Event[], s: GameState = emptyState(T, 0)) => events.reduce((acc, ev) => applyEvent(acc, ev, 0), s);

describe("the score sheet", () => {
  it("groups the deals per kingdom under its owner, one row per deal with its contract", () => {
    const sheet = buildSheet(fold(game().events));
    expect(sheet.kingdoms.map((k) => [k.kingdom, k.owner, k.deals.map((d) => d.dealIndex)])).toEqual([
      [0, 1, [0, 1]],
      [1, 2, [2, 3]],
      [2, 3, [4, 5]],
      [3, 0, [6, 7]],
    ]);
    expect(sheet.kingdoms.flatMap((k) => k.deals.map((d) => d.contract))).toEqual(game().rows.map((r) => r[1]));
    expect(sheet.kingdoms.every((k) => k.complete)).toBe(true);
  });

  it("adds a running total after each kingdom that ends at the grand total", () => {
    const { events, rows } = game();
    const sheet = buildSheet(fold(events));
    const sum = (upTo: number) => [0, 1, 2, 3].map((s) => rows.slice(0, upTo).reduce((acc, r) => acc + (r[2][s] ?? 0), 0));
    expect(sheet.kingdoms.map((k) => k.running)).toEqual([sum(2), sum(4), sum(6), sum(8)]);
    expect(sheet.kingdoms[3]?.running).toEqual(sheet.totals);
    // A kingdom adds up to zero (§6) unless a doubler took his own card (§7, NOBODY gains): the first.
    expect(sheet.kingdoms.map((k) => k.deals.reduce((acc, d) => acc + d.points.reduce((a, b) => a + b, 0), 0))).toEqual([-75, 0, 0, 0]);
  });

  it("puts partners side by side with the teams' running totals and grand totals (§2)", () => {
    const sheet = buildSheet(fold(game().events));
    expect(sheet.partnership).toBe(true);
    expect(sheet.columns).toEqual([0, 2, 1, 3]);
    expect(sheet.teams).toEqual([[0, 2], [1, 3]]);
    for (const k of sheet.kingdoms) expect(k.teamRunning).toEqual([(k.running[0] ?? 0) + (k.running[2] ?? 0), (k.running[1] ?? 0) + (k.running[3] ?? 0)]);
    expect(sheet.teamTotals).toEqual([(sheet.totals[0] ?? 0) + (sheet.totals[2] ?? 0), (sheet.totals[1] ?? 0) + (sheet.totals[3] ?? 0)]);
  });

  it("marks each deal's doubled cards by the seat that doubled them, answered one by one or revealed together (§7)", () => {
    const deals = buildSheet(fold(game().events)).kingdoms.flatMap((k) => k.deals);
    expect(deals.map((d) => d.doubles)).toEqual([
      [{ seat: 1, cards: [KH] }],
      [],
      [{ seat: 0, cards: [QS] }, { seat: 3, cards: [QD] }],
      [],
      [],
      [],
      [],
      [],
    ]);
  });

  it("is the same after a reload: the snapshot's rows carry the owner and the doubled cards", () => {
    const { events } = game();
    // Seat 0 reloads during the fourth deal (kingdom 1, seat 2's): three deals scored.
    const upTo = events.findIndex((ev) => ev.body.case === "dealStarted" && ev.body.value.dealIndex === 3) + 2;
    const played = fold(events.slice(0, upTo));
    const view = create(SeatViewSchema, {
      tableId: T, sequence: played.sequence, seat: 0, variant: Variant.COMPLEX_PARTNERSHIP, dealIndex: 3, kingdom: 1, owner: 2, contract: Contract.TRIX,
      totals: { values: played.totals },
      deals: played.deals.map((d) => ({ ...d, points: { values: d.points }, doubles: d.doubles.map((a) => ({ seat: a.seat, cards: a.cards.map(card) })) })),
    });
    const reloaded = applySnapshot(emptyState(T, 0), view, 0);
    expect(buildSheet(reloaded)).toEqual(buildSheet(played));
    // ...and both go on to the same final sheet.
    const rest = events.slice(upTo);
    expect(buildSheet(fold(rest, reloaded))).toEqual(buildSheet(fold(events)));
  });

  it("heads the kingdom being played with its owner before its first deal is scored, with no running total yet", () => {
    const { events } = game();
    const at = events.findIndex((ev) => ev.body.case === "dealStarted" && ev.body.value.dealIndex === 2) + 1;
    const sheet = buildSheet(fold(events.slice(0, at)));
    expect(sheet.kingdoms.map((k) => [k.kingdom, k.owner, k.deals.length, k.complete])).toEqual([
      [0, 1, 2, true],
      [1, 2, 0, false],
    ]);
  });

  it("ranks the two teams in partnership by the server's places, best first", () => {
    const s = fold(game().events);
    expect(standings(s)).toEqual([
      { seats: [1, 3], place: 1, points: (s.totals[1] ?? 0) + (s.totals[3] ?? 0) },
      { seats: [0, 2], place: 2, points: (s.totals[0] ?? 0) + (s.totals[2] ?? 0) },
    ]);
  });

  it("ranks singles 1, 1, 3, 4 on equal totals (§8), the place numbers the rules give, not list positions", () => {
    const e = (sequence: number, body: Body) => create(EventSchema, { tableId: T, sequence: BigInt(sequence), body });
    const s = fold([
      e(1, { case: "tableCreated", value: { variant: Variant.TRIX, seats: [0, 1, 2, 3].map((i) => ({ index: i, playerId: `p${i}`, displayName: `P${i}` })) } }),
      e(2, { case: "dealStarted", value: { dealIndex: 0, kingdom: 0, owner: 3 } }),
      e(3, { case: "dealScored", value: { dealIndex: 0, contract: Contract.KING, points: { values: [0, -75, 0, 0] }, totals: { values: [0, -75, 0, 0] } } }),
    ]);
    expect(places(s)).toEqual([1, 4, 1, 1]); // before the end: from the totals
    const sheet = buildSheet(s);
    expect(sheet.partnership).toBe(false);
    expect(sheet.columns).toEqual([0, 1, 2, 3]);
    expect(sheet.teamTotals).toEqual([]);
    const ended = applyEvent(s, e(4, { case: "gameEnded", value: { recordJson: "{}", ranking: [1, 4, 1, 1], totals: { values: [0, -75, 0, 0] } } }), 0);
    expect(standings(ended).map((l) => [l.seats, l.place])).toEqual([[[0], 1], [[2], 1], [[3], 1], [[1], 4]]);
    const tie = { ...ended, ranking: [], totals: [10, 10, -20, 0] };
    expect(standings(tie).map((l) => [l.seats[0], l.place])).toEqual([[0, 1], [1, 1], [3, 3], [2, 4]]);
  });
});
