// The client's state reducer and its resume protocol: duplicates, overlapping resumes,
// snapshots when the gap is too old, batches, breaks of the stream (the edge's idle
// timeout, a dropped network) and errors a retry cannot mend.
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Contract, Decision, SeatScoresSchema, Variant } from "../src/gen/trix/v1/common_pb";
import { EventSchema, SeatOutSchema } from "../src/gen/trix/v1/events_pb";
import type { Event } from "../src/gen/trix/v1/events_pb";
import { SessionResponseSchema } from "../src/gen/trix/v1/gateway_pb";
import type { SessionResponse } from "../src/gen/trix/v1/gateway_pb";
import { ScoredDealSchema, SeatViewSchema } from "../src/gen/trix/v1/table_pb";
import type { SeatView } from "../src/gen/trix/v1/table_pb";
import { Follower } from "../src/client/session";
import type { EventSource } from "../src/client/session";
import { applyEvent, applySnapshot, emptyState, myTurn, secondsLeft } from "../src/client/state";
import type { GameState } from "../src/client/state";

const T = "t1";
type Body = NonNullable<MessageInitShape<typeof EventSchema>["body"]>;
const card = (id: number) => ({ id });

/** A short deal seen by seat 0: created, dealt, KING chosen, one turn, four cards, the trick;
 * every sequence from 1 to 11 once, as the gateway sends them (no gap). */
function script(): Event[] {
  const e = (sequence: number, body: Body): Event => create(EventSchema, { tableId: T, sequence: BigInt(sequence), body });
  return [
    e(1, { case: "tableCreated", value: { variant: Variant.TRIX, seats: [0, 1, 2, 3].map((i) => ({ index: i, playerId: `p${i}`, displayName: `P\u202e${i}`, bot: i > 0 })), commitment: "c" } }),
    e(2, { case: "dealStarted", value: { dealIndex: 0, owner: 0, hand: [card(0), card(13), card(37), card(24)], availableContracts: [Contract.KING] } }),
    e(3, { case: "contractChosen", value: { dealIndex: 0, seat: 0, contract: Contract.KING } }),
    e(4, { case: "seatControlChanged", value: { seat: 2, bot: true } }),
    e(5, { case: "turnStarted", value: { seats: [0], decision: Decision.CARD, turnSeq: 5n, legalCards: [card(0), card(13)] } }),
    e(6, { case: "cardPlayed", value: { seat: 0, card: card(0) } }),
    e(7, { case: "cardPlayed", value: { seat: 1, card: card(1) } }),
    e(8, { case: "cardPlayed", value: { seat: 2, card: card(2) } }),
    e(9, { case: "cardPlayed", value: { seat: 3, card: card(3), automatic: true } }),
    e(10, { case: "trickTaken", value: { dealIndex: 0, trickIndex: 0, leader: 0, taker: 3, cards: [0, 1, 2, 3].map(card) } }),
    e(11, { case: "dealScored", value: { dealIndex: 0, contract: Contract.KING, points: { values: [0, 0, 0, -75] }, totals: { values: [0, 0, 0, -75] } } }),
  ];
}

const msg = (event: Event): SessionResponse => create(SessionResponseSchema, { kind: { case: "event", value: event } });
const fold = (events: Event[], s: GameState = emptyState(T, 0)) => events.reduce((acc, e) => applyEvent(acc, e, 0), s);
/** The state without the counters and the clock, to compare two ways of getting there. */
const core = (s: GameState) => ({ ...s, applied: 0, dropped: 0, clockOffsetMs: 0 });

/** A transport that plays one scripted stream per connection and records each resume point. */
function scripted(streams: (SessionResponse | Error)[][], view?: SeatView) {
  const asked: bigint[] = [];
  const source: EventSource = {
    async *events(_table, after, signal) {
      asked.push(after);
      const stream = streams.shift();
      if (!stream) {
        // Nothing more scripted: hold the stream open until the test closes the follower.
        await new Promise<void>((r) => signal.addEventListener("abort", () => r()));
        return;
      }
      for (const item of stream) {
        if (item instanceof Error) throw item;
        yield item;
      }
    },
    async view() {
      if (!view) throw new Error("no view");
      return view;
    },
  };
  return { source, asked };
}

describe("the state reducer", () => {
  it("applies a deal: hand, contract, trick, last trick, totals, names cleaned of bidi overrides", () => {
    const s = fold(script());
    expect(s.sequence).toBe(11n);
    expect(s.hand).toEqual([13, 24, 37]);
    expect(s.handSizes).toEqual([12, 12, 12, 12]);
    expect(s.trick).toEqual([]);
    expect(s.lastTrick).toEqual({ cards: [0, 1, 2, 3].map((c) => ({ seat: c, card: c })), taker: 3 });
    expect(s.totals).toEqual([0, 0, 0, -75]);
    expect(s.deals).toEqual([{ dealIndex: 0, kingdom: 0, owner: 0, contract: Contract.KING, points: [0, 0, 0, -75], doubles: [] }]);
    expect(s.seats[1]?.name).toBe("P1");
    expect(s.notices).toEqual([{ kind: "auto-card", seat: 3, card: 3 }]);
  });

  it("drops a duplicate event and an event older than the state", () => {
    const events = script();
    const once = fold(events);
    const twice = fold([...events, ...events]);
    expect(core(twice)).toEqual(core(once));
    expect(twice.dropped).toBe(events.length);
    expect(twice.applied).toBe(events.length);
  });

  it("marks legal cards on the seat's own turn and counts down on the server's clock", () => {
    const s = fold(script().slice(0, 5));
    expect(myTurn(s)).toBe(true);
    expect(s.turn?.legalCards).toEqual([0, 13]);
    const turn = { ...s.turn!, deadlineMs: 100_000 };
    // The server's clock is 5 s ahead of ours: 100 s deadline at our 90 s = 5 s left.
    expect(secondsLeft({ ...s, turn, clockOffsetMs: 5_000 }, 90_000)).toBe(5);
    expect(secondsLeft({ ...s, turn, clockOffsetMs: 5_000 }, 99_000)).toBe(0);
  });

  it("a snapshot replaces the state, and events it covers are dropped afterwards", () => {
    const events = script();
    const view = create(SeatViewSchema, {
      tableId: T, sequence: 8n, seat: 0, variant: Variant.TRIX, hand: [card(13), card(24), card(37)], handSizes: [12, 12, 12, 13],
      contract: Contract.KING, trick: [card(0), card(1), card(2)], totals: { values: [0, 0, 0, 0] }, serverTime: timestampFromMs(1000),
      turn: { seats: [3], decision: Decision.CARD, turnSeq: 8n, deadline: timestampFromMs(13_000) },
    });
    let s = applySnapshot(fold(events.slice(0, 2)), view, 1000);
    expect(s.sequence).toBe(8n);
    expect(s.trick).toEqual([{ seat: 0, card: 0 }, { seat: 1, card: 1 }, { seat: 2, card: 2 }]);
    expect(secondsLeft(s, 1000)).toBe(12);
    s = fold(events, s);
    expect(s.dropped).toBe(events.filter((e) => e.sequence <= 8n).length);
    expect(s.lastTrick?.taker).toBe(3);
    expect(s.totals).toEqual([0, 0, 0, -75]);
  });

  it("knows a competition's table, where leaving ends the game (docs/rules.md §10), from its creation or a view", () => {
    const [created] = script();
    expect(fold([created!]).leaveEndsGame).toBe(false);
    const competition = create(EventSchema, { tableId: T, sequence: 1n, body: { case: "tableCreated", value: { variant: Variant.TRIX, leaveEndsGame: true } } });
    expect(fold([competition]).leaveEndsGame).toBe(true);
    const view = (leaveEndsGame: boolean) => create(SeatViewSchema, { tableId: T, sequence: 3n, seat: 0, leaveEndsGame });
    expect(applySnapshot(emptyState(T, 0), view(true), 0).leaveEndsGame).toBe(true);
    expect(applySnapshot(fold([competition]), view(false), 0).leaveEndsGame).toBe(false);
  });

  it("a TRIX deal lays cards out instead of tricks, and records passes and who is out", () => {
    const e = (sequence: number, body: Body) => create(EventSchema, { tableId: T, sequence: BigInt(sequence), body });
    const s = fold([
      e(1, { case: "dealStarted", value: { owner: 0, hand: [card(9)] } }),
      e(2, { case: "contractChosen", value: { seat: 0, contract: Contract.TRIX } }),
      e(3, { case: "cardPlayed", value: { seat: 0, card: card(9) } }),
      e(4, { case: "seatPassed", value: { seat: 1 } }),
      e(5, { case: "seatOut", value: { seat: 0, place: 1, points: 200 } }),
    ]);
    expect(s.layout).toEqual([9]);
    expect(s.trick).toEqual([]);
    expect(s.passes).toEqual([1]);
    expect(s.out).toEqual([{ seat: 0, place: 1, points: 200 }]);
  });
});

describe("a reload (issue 39: the score sheet survives a snapshot)", () => {
  const e = (sequence: number, body: Body): Event => create(EventSchema, { tableId: T, sequence: BigInt(sequence), body });
  const row = (dealIndex: number, contract: Contract, points: number[]) => ({ dealIndex, kingdom: 0, owner: 2, contract, points: { values: points } });
  /** Seat 0's view on its own turn in the third deal of Seat 2's kingdom: two deals scored, a trick taken. */
  const reloadView = () =>
    create(SeatViewSchema, {
      tableId: T, sequence: 200n, seat: 0, variant: Variant.TRIX, dealIndex: 2, kingdom: 0, owner: 2, contract: Contract.QUEENS,
      hand: [card(5), card(18)], handSizes: [2, 2, 2, 2], totals: { values: [-30, -30, -30, -180] },
      deals: [row(0, Contract.TRICKS, [-30, -30, -30, -105]), row(1, Contract.KING, [0, 0, 0, -75])],
      lastTrick: { trickIndex: 10, leader: 1, taker: 3, cards: [card(40), card(41), card(42), card(43)] },
      turn: { seats: [0], decision: Decision.CARD, turnSeq: 200n }, legalCards: [card(5)],
    });

  it("keeps every deal's row, the kingdom's owner and the last trick, from an empty state (a fresh page)", () => {
    const s = applySnapshot(emptyState(T, 0), reloadView(), 0);
    expect(s.deals).toEqual([
      { dealIndex: 0, kingdom: 0, owner: 2, contract: Contract.TRICKS, points: [-30, -30, -30, -105], doubles: [] },
      { dealIndex: 1, kingdom: 0, owner: 2, contract: Contract.KING, points: [0, 0, 0, -75], doubles: [] },
    ]);
    expect(s.owner).toBe(2);
    expect(s.kingdom).toBe(0);
    expect(s.lastTrick).toEqual({ cards: [{ seat: 1, card: 40 }, { seat: 2, card: 41 }, { seat: 3, card: 42 }, { seat: 0, card: 43 }], taker: 3 });
    expect(myTurn(s)).toBe(true);
    // The same as a seat that never reloaded and folded the events of those deals.
    const played = fold([
      e(1, { case: "dealStarted", value: { dealIndex: 0, kingdom: 0, owner: 2 } }),
      e(2, { case: "dealScored", value: { dealIndex: 0, contract: Contract.TRICKS, points: { values: [-30, -30, -30, -105] } } }),
      e(3, { case: "dealStarted", value: { dealIndex: 1, kingdom: 0, owner: 2 } }),
      e(4, { case: "dealScored", value: { dealIndex: 1, contract: Contract.KING, points: { values: [0, 0, 0, -75] } } }),
    ]);
    expect(played.deals).toEqual(s.deals);
  });

  it("keeps the TRIX passed tags and who is out", () => {
    const view = reloadView();
    view.contract = Contract.TRIX;
    view.lastTrick = undefined;
    view.passes = [3, 1];
    view.out = [create(SeatOutSchema, { dealIndex: 2, seat: 2, place: 1, points: 200 })];
    let s = applySnapshot(emptyState(T, 0), view, 0);
    expect(s.passes).toEqual([3, 1]);
    expect(s.out).toEqual([{ seat: 2, place: 1, points: 200 }]);
    expect(s.lastTrick).toBeNull();
    s = applyEvent(s, e(201, { case: "cardPlayed", value: { dealIndex: 2, seat: 3, card: card(9) } }), 0);
    expect(s.passes).toEqual([1]);
  });

  it("the sheet adds up after later deals: one row per deal, their sum the Total row", () => {
    let s = applySnapshot(emptyState(T, 0), reloadView(), 0);
    const later: [number, Contract, number[]][] = [
      [2, Contract.QUEENS, [0, -50, -25, -25]],
      [3, Contract.DIAMONDS, [-40, -30, -20, -40]],
    ];
    let totals = [...s.totals];
    let seq = 201;
    for (const [dealIndex, contract, points] of later) {
      totals = totals.map((t, i) => t + (points[i] ?? 0));
      const scored = e(seq++, { case: "dealScored", value: { dealIndex, contract, points: { values: points }, totals: { values: totals } } });
      s = applyEvent(s, scored, 0);
      s = applyEvent(s, e(seq++, { case: "dealStarted", value: { dealIndex: dealIndex + 1, kingdom: 0, owner: 2 } }), 0);
    }
    expect(s.deals.map((d) => d.dealIndex)).toEqual([0, 1, 2, 3]);
    expect(s.deals.map((d) => d.contract)).toEqual([Contract.TRICKS, Contract.KING, Contract.QUEENS, Contract.DIAMONDS]);
    expect([0, 1, 2, 3].map((seat) => s.deals.reduce((sum, d) => sum + (d.points[seat] ?? 0), 0))).toEqual(s.totals);
    // A second reload later in the game takes the server's rows again: still one row per deal.
    const again = reloadView();
    again.sequence = BigInt(seq + 10);
    again.deals = s.deals.map((d) => create(ScoredDealSchema, { ...d, points: { values: d.points }, doubles: d.doubles.map((x) => ({ seat: x.seat, cards: x.cards.map(card) })) }));
    again.totals = create(SeatScoresSchema, { values: s.totals });
    const reloaded = applySnapshot(s, again, 0);
    expect(reloaded.deals).toEqual(s.deals);
  });
});

describe("the resume protocol", () => {
  it("resumes from the last applied sequence after the stream ends, with no event lost or applied twice", async () => {
    const events = script();
    // The first stream ends quietly after 4 events (the edge's stream_idle_timeout); the
    // second breaks with a network error after overlapping 2; the third finishes.
    const { source, asked } = scripted([
      events.slice(0, 5).map(msg),
      [...events.slice(3, 8).map(msg), new ConnectError("network", Code.Unavailable)],
      events.slice(6).map(msg),
    ]);
    const f = new Follower(source, { state: () => {}, sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(asked).toEqual([0n, 5n, 8n, 11n]);
    expect(core(f.state)).toEqual(core(fold(events)));
    expect(f.state.applied).toBe(events.length);
  });

  it("takes the gateway's snapshot when its history no longer reaches back, then goes on", async () => {
    const events = script();
    const view = create(SeatViewSchema, { tableId: T, sequence: 9n, seat: 0, variant: Variant.TRIX, hand: [card(13), card(24), card(37)], contract: Contract.KING });
    const snapshot = create(SessionResponseSchema, { kind: { case: "snapshot", value: view } });
    const { source, asked } = scripted([[...events.slice(0, 2).map(msg)], [snapshot, ...events.slice(8).map(msg)]]);
    const f = new Follower(source, { state: () => {}, sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(asked).toEqual([0n, 2n, 11n]);
    expect(f.state.sequence).toBe(11n);
    expect(f.state.hand).toEqual([13, 24, 37]);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
  });

  it("applies a batch in order and stops at the game's end", async () => {
    const events = script();
    const ended = create(EventSchema, { tableId: T, sequence: 12n, body: { case: "gameEnded", value: { recordJson: "{}", ranking: [1, 1, 1, 4], totals: { values: [0, 0, 0, -75] } } } });
    const batch = create(SessionResponseSchema, { kind: { case: "eventBatch", value: { events: [...events, ended] } } });
    const { source, asked } = scripted([[batch]]);
    const f = new Follower(source, { state: () => {} }, emptyState(T, 0));
    await f.run();
    expect(asked).toEqual([0n]);
    expect(f.state.finished).toBe(true);
    expect(f.state.ranking).toEqual([1, 1, 1, 4]);
  });

  it("asks for the seat's view after a break before opening the stream again", async () => {
    const events = script();
    const view = create(SeatViewSchema, { tableId: T, sequence: 9n, seat: 0, variant: Variant.TRIX, hand: [card(13), card(24), card(37)], contract: Contract.KING });
    const { source, asked } = scripted([events.slice(0, 2).map(msg), events.slice(8).map(msg)], view);
    const f = new Follower(source, { state: () => {}, sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(asked).toEqual([0n, 9n, 11n]);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
  });

  it("stops and says why on an error a retry cannot mend", async () => {
    const errors: string[] = [];
    const { source, asked } = scripted([[new ConnectError("you hold no seat at this table", Code.PermissionDenied)]]);
    const f = new Follower(source, { state: () => {}, error: (c, m) => errors.push(`${c}: ${m}`) }, emptyState(T, 0));
    await f.run();
    expect(asked).toEqual([0n]);
    expect(errors).toEqual(["PermissionDenied: you hold no seat at this table"]);
  });

  it("detects a missing sequence: applies nothing past it, asks for the seat's view and resumes after it", async () => {
    const events = script();
    // Sequence 6 (our own card) never arrives: 7 and 8 come right after 5.
    const holed = [...events.slice(0, 5), ...events.slice(6, 8)];
    const view = create(SeatViewSchema, {
      tableId: T, sequence: 8n, seat: 0, variant: Variant.TRIX, hand: [card(13), card(24), card(37)], handSizes: [12, 12, 12, 13],
      contract: Contract.KING, trick: [card(0), card(1), card(2)], turn: { seats: [3], decision: Decision.CARD, turnSeq: 8n },
    });
    const { source, asked } = scripted([holed.map(msg), events.slice(8).map(msg)], view);
    const seen: bigint[] = [];
    let reconnecting = 0;
    const f = new Follower(source, { state: (st) => seen.push(st.sequence), reconnecting: () => (reconnecting += 1), sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(f.gaps).toBe(1);
    expect(asked).toEqual([0n, 8n, 11n]); // the view at 8 covers 6; the events after it follow
    expect(seen).not.toContain(7n); // 7 was never applied on top of a state that lacks 6
    expect(f.state.hand).toEqual([13, 24, 37]);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
    expect(f.state.sequence).toBe(11n);
    expect(reconnecting).toBe(1); // the stream ending after 11; the gap itself is no "connection lost"
  });

  it("a stream that keeps skipping the same sequence is asked again with the backoff, not hammered", async () => {
    const events = script();
    // 6 never comes: the first stream has 1..5 then 7.., each resume after 5 starts at 7.
    const after5 = () => events.slice(6).map(msg);
    const { source, asked } = scripted([[...events.slice(0, 5), ...events.slice(6)].map(msg), after5(), after5(), events.slice(5).map(msg)]);
    const slept: number[] = [];
    const f = new Follower(source, { state: () => {}, sleep: async (ms) => void slept.push(ms) }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(f.gaps).toBe(3);
    expect(asked).toEqual([0n, 5n, 5n, 5n, 11n]);
    // The first resync at once, the repeats after a growing wait; then the working stream ends
    // (a break like the edge's idle timeout) and the backoff starts afresh.
    expect(slept).toEqual([250, 500, 250]);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
  });

  it("detects a gap inside a batch: the events before it are applied, none after it", () => {
    const events = script();
    const f = new Follower({ events: async function* () {}, view: async () => create(SeatViewSchema) }, { state: () => {} }, emptyState(T, 0));
    const batch = create(SessionResponseSchema, { kind: { case: "eventBatch", value: { events: [...events.slice(0, 3), ...events.slice(4)] } } });
    f.handle(batch);
    expect(f.gaps).toBe(1);
    expect(f.state.sequence).toBe(3n);
    expect(f.state.applied).toBe(3);
  });

  it("a resume that overlaps a snapshot drops every event the snapshot covered and applies the rest once", async () => {
    const events = script();
    const view = create(SeatViewSchema, { tableId: T, sequence: 9n, seat: 0, variant: Variant.TRIX, hand: [card(13), card(24), card(37)], contract: Contract.KING });
    const snapshot = create(SessionResponseSchema, { kind: { case: "snapshot", value: view } });
    // The stream restarts from 2 with the gateway's snapshot, then repeats 3..11 (duplicates of the snapshot's).
    const { source } = scripted([[...events.slice(0, 2).map(msg)], [snapshot, ...events.slice(2).map(msg)]]);
    const f = new Follower(source, { state: () => {}, sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(f.gaps).toBe(0);
    expect(f.state.dropped).toBe(events.filter((e) => e.sequence > 2n && e.sequence <= 9n).length);
    expect(f.state.applied).toBe(2 + 2);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
  });

  it("a seat it was following refused once (NOT_FOUND while the table's shard moves) is resumed, not given up", async () => {
    const events = script();
    const errors: string[] = [];
    const { source, asked } = scripted([
      events.slice(0, 5).map(msg),
      [new ConnectError("unknown table", Code.NotFound)],
      events.slice(5).map(msg),
    ]);
    const f = new Follower(source, { state: () => {}, error: (c, m) => errors.push(`${c}: ${m}`), sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(errors).toEqual([]);
    expect(asked).toEqual([0n, 5n, 5n, 11n]);
    expect(f.state.totals).toEqual([0, 0, 0, -75]);
  });

  it("a refusal repeated three times in a row is believed: the follower stops and says why", async () => {
    const errors: string[] = [];
    const refused = () => [new ConnectError("you hold no seat at this table", Code.PermissionDenied)];
    const { source, asked } = scripted([script().slice(0, 2).map(msg), refused(), refused(), refused()]);
    const f = new Follower(source, { state: () => {}, error: (c, m) => errors.push(`${c}: ${m}`), sleep: async () => {} }, emptyState(T, 0));
    await f.run();
    expect(asked).toEqual([0n, 2n, 2n, 2n]);
    expect(errors).toEqual(["PermissionDenied: you hold no seat at this table"]);
  });

  it("learns its table and seat from the matched ticket before the table's events", () => {
    const f = new Follower({ events: async function* () {}, view: async () => create(SeatViewSchema) }, { state: () => {} });
    f.handle(create(SessionResponseSchema, { kind: { case: "ticket", value: { ticketId: "k", tableId: T, seat: 2 } } }));
    expect([f.state.tableId, f.state.seat]).toEqual([T, 2]);
  });
});
