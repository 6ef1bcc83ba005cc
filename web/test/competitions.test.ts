// The competitions' view-models (issue 43): a listed competition as a row (fee, prize, entrants,
// what leaving gives back), the knockout bracket round by round with who went on, the points
// standings, the player's status and his next table, and the payouts.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Variant } from "../src/gen/trix/v1/common_pb";
import {
  CompetitionFormat,
  CompetitionLedgerEntrySchema,
  CompetitionSchema,
  CompetitionState,
  CompetitionTableSchema,
  EntrantState,
  StandingRowSchema,
} from "../src/gen/trix/v1/competitions_pb";
import {
  bracketView,
  competitionRow,
  knockoutTables,
  leaveRefund,
  myLatestTable,
  myNextTable,
  myStatus,
  payoutsView,
  poolCoins,
  sections,
  standingsView,
} from "../src/client/competitions";

const NOW = 1_700_000_000_000;

const competition = (state: CompetitionState, entrants: [string, EntrantState][], extra: Partial<{ fee: bigint; format: CompetitionFormat; pool: number[]; fixed: bigint[] }> = {}) =>
  create(CompetitionSchema, {
    competitionId: "c1",
    organiserId: "org",
    state,
    options: {
      variant: Variant.TRIX,
      rounds: 2,
      format: extra.format ?? CompetitionFormat.KNOCKOUT,
      capacity: 16,
      entryFee: extra.fee ?? 100n,
      startsAtMs: BigInt(NOW + 60_000),
      registrationClosesAtMs: BigInt(NOW + 30_000),
      prize: extra.fixed ? { case: "fixed", value: { coins: extra.fixed } } : { case: "pool", value: { sharesPercent: extra.pool ?? [50, 30, 20] } },
    },
    entrants: entrants.map(([playerId, state]) => ({ playerId, displayName: playerId, state })),
  });

const table = (round: number, index: number, players: string[], places: number[] = []) =>
  create(CompetitionTableSchema, { round, index, tableId: `c1-r${round}-t${index}`, players, ended: places.length > 0, places });

describe("a competition as a row of the Competitions tab", () => {
  it("counts the entrants still in, prices the pool prize after the house fee, and offers registration", () => {
    const c = competition(CompetitionState.REGISTRATION, [
      ["a", EntrantState.ACCEPTED],
      ["b", EntrantState.PENDING],
      ["c", EntrantState.LEFT_BEFORE_START],
    ]);
    const row = competitionRow(c, "me", NOW);
    expect([row.entrants, row.capacity, row.fee, row.stage, row.mine, row.canRegister, row.canLeave]).toEqual([2, 16, 100, "registration", null, true, false]);
    // Pool 200, the house keeps 10 %: 180 shared 50 / 30 / 20.
    expect(row.prize).toEqual({ kind: "pool", shares: [50, 30, 20], houseFee: 10, pool: 200, coins: [90, 54, 36] });
    expect(competitionRow(c, "me", NOW + 31_000).canRegister).toBe(false); // registration closed
  });
  it("lets an entrant leave with half the fee back before the start, and not after it", () => {
    const open = competitionRow(competition(CompetitionState.REGISTRATION, [["me", EntrantState.ACCEPTED]], { fee: 75n }), "me", NOW);
    expect([open.mine, open.canRegister, open.canLeave, open.refund]).toEqual(["accepted", false, true, 37]);
    const running = competitionRow(competition(CompetitionState.RUNNING, [["me", EntrantState.ACCEPTED]], { fee: 75n }), "me", NOW);
    expect([running.canLeave, running.refund]).toEqual([false, 0]); // after the start: leave the table instead
    expect([leaveRefund(100, "closed"), leaveRefund(100, "running"), leaveRefund(0, "registration")]).toEqual([50, 0, 0]);
  });
  it("shows a fixed prize as declared, and sorts the tab into open, running and finished", () => {
    const fixed = competitionRow(competition(CompetitionState.FINISHED, [], { fixed: [500n, 200n] }), "me", NOW);
    expect(fixed.prize).toEqual({ kind: "fixed", coins: [500, 200] });
    const rows = [CompetitionState.CLOSED, CompetitionState.REVIEW, CompetitionState.CANCELLED, CompetitionState.REGISTRATION].map((s) =>
      competitionRow(competition(s, []), "me", NOW),
    );
    const s = sections(rows);
    expect([s.open.map((r) => r.stage), s.running.map((r) => r.stage), s.finished.map((r) => r.stage)]).toEqual([["closed", "registration"], ["review"], ["cancelled"]]);
  });
  it("rounds a pool share down and gives the remainder to the first place", () => {
    expect(poolCoins(1000, [50, 30, 20], 10)).toEqual([450, 270, 180]);
    expect(poolCoins(7, [50, 50], 0)).toEqual([4, 3]);
  });
});

describe("the knockout bracket", () => {
  it("has every round from the options, the rounds not drawn yet empty", () => {
    expect(knockoutTables(16, 2, false)).toEqual([4, 1]);
    expect(knockoutTables(64, 3, false)).toEqual([16, 4, 1]);
    expect(knockoutTables(16, 3, true)).toEqual([4, 2, 1]);
    const b = bracketView([table(1, 0, ["a", "b", "c", "me"])], "me", [4, 1]);
    expect(b.map((r) => [r.round, r.tables.length, r.expected])).toEqual([[1, 1, 4], [2, 0, 1]]);
    expect(b[0]?.tables[0]?.mine).toBe(true);
  });
  it("marks who went on: the table's winner before the next round is drawn, then whoever sits in it", () => {
    const ended = table(1, 0, ["a", "bot-1", "c", "me"], [2, 4, 3, 1]);
    const before = bracketView([ended], "me", [4, 1]);
    expect(before[0]?.tables[0]?.seats.map((s) => [s.player, s.bot, s.place, s.on])).toEqual([
      ["a", false, 2, false],
      ["bot-1", true, 4, false],
      ["c", false, 3, false],
      ["me", false, 1, true],
    ]);
    const after = bracketView([ended, table(2, 0, ["x", "me", "y", "z"])], "me", [4, 1]);
    expect(after[0]?.tables[0]?.seats.filter((s) => s.on).map((s) => s.player)).toEqual(["me"]);
    // The final's winner goes nowhere: there is no later round.
    const final = bracketView([ended, table(2, 0, ["x", "me", "y", "z"], [1, 2, 3, 4])], "me", [4, 1]);
    expect(final[1]?.tables[0]?.seats.some((s) => s.on)).toBe(false);
  });
});

describe("the player's status and next table", () => {
  const entrants: [string, EntrantState][] = [["me", EntrantState.ACCEPTED]];
  it("opens the latest table he is seated at that has not ended", () => {
    const tables = [table(1, 2, ["a", "me", "b", "c"], [2, 1, 3, 4]), table(2, 0, ["me", "x", "y", "z"])];
    expect(myNextTable(tables, "me")).toEqual({ tableId: "c1-r2-t0", seat: 0, round: 2 });
    expect(myNextTable(tables.slice(0, 1), "me")).toBeNull();
    // Ended or not, his latest table: the result he has not seen when a round went by unwatched.
    expect(myLatestTable(tables.slice(0, 1), "me")).toEqual({ tableId: "c1-r1-t2", seat: 1, round: 1 });
    expect(myLatestTable(tables, "nobody")).toBeNull();
    expect(myStatus(competition(CompetitionState.RUNNING, entrants), tables, [], "me")).toEqual({ kind: "playing", tableId: "c1-r2-t0", round: 2 });
  });
  it("says through after a won table, out after a lost one, and the place once the final ranking is known", () => {
    const won = [table(1, 0, ["a", "me", "b", "c"], [2, 1, 3, 4])];
    const lost = [table(1, 0, ["a", "me", "b", "c"], [1, 2, 3, 4])];
    const running = competition(CompetitionState.RUNNING, entrants);
    expect(myStatus(running, won, [], "me")).toEqual({ kind: "through", round: 1 });
    expect(myStatus(running, lost, [], "me")).toEqual({ kind: "out", round: 1 });
    expect(myStatus(competition(CompetitionState.REVIEW, entrants), lost, ["a", "me", "b", "c"], "me")).toEqual({ kind: "placed", place: 2 });
    expect(myStatus(competition(CompetitionState.REGISTRATION, entrants), [], [], "me")).toEqual({ kind: "registered" });
    expect(myStatus(competition(CompetitionState.REGISTRATION, [["me", EntrantState.PENDING]]), [], [], "me")).toEqual({ kind: "pending" });
    expect(myStatus(competition(CompetitionState.REGISTRATION, []), [], [], "me")).toEqual({ kind: "none" });
  });
  it("finds a partner's place in a unit of two", () => {
    expect(myStatus(competition(CompetitionState.FINISHED, entrants), [], ["a+b", "c+me"], "me")).toEqual({ kind: "placed", place: 2 });
  });
});

describe("the standings and the payouts", () => {
  it("rank the units in the service's order and mark the player's", () => {
    const rows = [create(StandingRowSchema, { players: ["a"], points: 6, wins: 2, score: 120n }), create(StandingRowSchema, { players: ["me"], points: 5, wins: 1, score: -40n, out: true })];
    expect(standingsView(rows, "me")).toEqual([
      { rank: 1, players: ["a"], points: 6, wins: 2, score: 120, out: false, me: false },
      { rank: 2, players: ["me"], points: 5, wins: 1, score: -40, out: true, me: true },
    ]);
  });
  it("list each player's prize and refund and check fees = prizes + refunds + house", () => {
    const e = (kind: string, playerId: string, coins: bigint) => create(CompetitionLedgerEntrySchema, { key: `competition.c1.${kind}.${playerId}`, kind, playerId, coins });
    const p = payoutsView([e("hold", "a", 100n), e("hold", "me", 100n), e("hold", "b", 100n), e("refund", "b", 50n), e("prize", "me", 200n), e("house", "house", 50n)], "me");
    expect(p.lines).toEqual([
      { player: "me", prize: 200, refund: 0, me: true },
      { player: "b", prize: 0, refund: 50, me: false },
    ]);
    expect([p.fees, p.prizes, p.refunds, p.house, p.conserved]).toEqual([300, 200, 50, 50, true]);
  });
});
