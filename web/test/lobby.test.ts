// The lobby's data (issue 39): a table being played as a row to watch (names, bots marked,
// the deal), and a finished game as a line with its date, partner, opponents and result.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { SeatSchema, Variant } from "../src/gen/trix/v1/common_pb";
import { GameSummarySchema, PublicTableSchema } from "../src/gen/trix/v1/scoring_pb";
import { formatDate, gameLine, liveRows, seatNames } from "../src/client/lobby";

const seats = (names: string[], bots: boolean[], ids = "p") =>
  // Listed out of order: the lobby puts them in seat order.
  [3, 1, 2, 0].map((i) => create(SeatSchema, { index: i, playerId: `${ids}${i}`, displayName: names[i] ?? "", bot: bots[i] ?? false }));

describe("the tables being played", () => {
  it("show each seat by name in seat order, bots marked, and the deal being played", () => {
    const table = create(PublicTableSchema, {
      tableId: "t1",
      variant: Variant.COMPLEX,
      seats: seats(["Ali", "Bot 2", "ريم", "Bot 4"], [false, true, false, true]),
      dealNumber: 3,
      dealsTotal: 8,
    });
    const [row] = liveRows([table]);
    expect(row).toEqual({
      tableId: "t1",
      variant: Variant.COMPLEX,
      deal: 3,
      deals: 8,
      bots: 2,
      mySeat: -1,
      seats: [
        { seat: 0, name: "Ali", bot: false },
        { seat: 1, name: "Bot 2", bot: true },
        { seat: 2, name: "ريم", bot: false },
        { seat: 3, name: "Bot 4", bot: true },
      ],
    });
  });
  it("put the player's own open game first, with his seat there (he goes back to it, not watch it)", () => {
    const other = create(PublicTableSchema, { tableId: "other", seats: seats(["A", "B", "C", "D"], [false, false, false, false], "q") });
    const mine = create(PublicTableSchema, { tableId: "mine", seats: seats(["A", "B", "Me", "D"], [false, true, false, true]) });
    const rows = liveRows([other, mine], "p2");
    expect(rows.map((r) => [r.tableId, r.mySeat])).toEqual([
      ["mine", 2],
      ["other", -1],
    ]);
    // A bot playing the seat of that id is not the player; without an id nothing is his.
    expect(liveRows([mine], "p1")[0]?.mySeat).toBe(-1);
    expect(liveRows([other, mine]).map((r) => r.mySeat)).toEqual([-1, -1]);
  });
  it("never show a deal past the game's last one (its end not seen yet)", () => {
    const table = create(PublicTableSchema, { tableId: "t2", variant: Variant.TRIX, dealNumber: 21, dealsTotal: 20 });
    expect(liveRows([table])[0]?.deal).toBe(20);
  });
  it("leave a seat without a name to the page (\"Seat n\"), never show its id", () => {
    expect(seatNames([create(SeatSchema, { index: 2, playerId: "g41738d98270a4aa", displayName: "  " })])).toEqual([{ seat: 2, name: null, bot: false }]);
  });
});

describe("a finished game of the player's", () => {
  const ended = Date.UTC(2026, 11, 5, 18, 30);
  const summary = (variant: Variant, seat: number) =>
    create(GameSummarySchema, {
      tableId: "done",
      variant,
      seat,
      place: 2,
      totals: { values: [-150, 20, -75, 40] },
      endedAt: timestampFromMs(ended),
      seats: seats(["Me", "Bot 2", "Friend", "Zed"], [false, true, false, false]),
    });
  it("has its date, its opponents (the three others in singles) and the player's place and points", () => {
    const line = gameLine(summary(Variant.TRIX, 0), false);
    expect(line.endedMs).toBe(ended);
    expect(line.partner).toBeNull();
    expect(line.opponents.map((s) => s.name)).toEqual(["Bot 2", "Friend", "Zed"]);
    expect([line.place, line.points]).toEqual([2, -150]);
  });
  it("in partnership names the partner opposite apart from the two opponents (docs/rules.md §2)", () => {
    const line = gameLine(summary(Variant.TRIX_PARTNERSHIP, 0), true);
    expect(line.partner?.name).toBe("Friend");
    expect(line.opponents.map((s) => s.name)).toEqual(["Bot 2", "Zed"]);
  });
  it("written as a date in the page's language with Latin digits", () => {
    for (const lang of ["ar", "en"] as const) {
      const text = formatDate(lang, ended);
      expect(text).toMatch(/2026/);
      expect(text).not.toMatch(/[\u0660-\u0669]/);
    }
  });
});
