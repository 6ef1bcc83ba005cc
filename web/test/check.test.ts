// The record checker of the Verify page with the rules engine as WebAssembly (issue 39): it
// passes every golden record (tests/golden) and refuses the altered ones (tests/golden/altered,
// made by tests/support/altered.py) each with its reason, as `trix verify` does.
import { readFileSync, readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cardId } from "../src/client/cards";
import { checkPlay } from "../src/client/check";
import type { Check } from "../src/client/check";
import { engineRequested } from "../src/client/engine";
import { dealFromSeeds, hexToBytes } from "../src/client/fairness";
import { verifyRecord } from "../src/client/verify";

const GOLDEN = new URL("../../tests/golden/", import.meta.url);
const ALTERED = new URL("altered/", GOLDEN);

type Rec = Record<string, unknown> & { fairness?: Record<string, string | null>; deals: Record<string, unknown>[] };
const read = (dir: URL, name: string): Rec => JSON.parse(readFileSync(new URL(name, dir), "utf-8")) as Rec;
const golden = readdirSync(GOLDEN)
  .filter((f) => /^game_\d+\.json$/.test(f))
  .sort();

async function decksOf(rec: Rec): Promise<number[][][]> {
  const seed = rec.fairness?.server_seed;
  return Promise.all(
    rec.deals.map(async (deal, n) =>
      Array.isArray(deal.hands)
        ? (deal.hands as string[][]).map((h) => h.map((c) => cardId(c) as number).sort((a, b) => a - b))
        : dealFromSeeds(hexToBytes(seed as string), rec.fairness?.client_seed ?? "", n),
    ),
  );
}

/** The seat of deal 1's first play in the base record (game_0008), which the foreign card replaced. */
const SEAT_FOREIGN = (read(ALTERED, "game_0008_foreign.json").deals[1]?.plays as { seat: number }[])[0]?.seat;

const byId = (checks: Check[], id: Check["id"]) => checks.find((c) => c.id === id);

it("loads the engine only when a record is checked", () => expect(engineRequested()).toBe(false));

describe("the WebAssembly engine replays every golden record as the native one did", () => {
  it("has the 40 golden records", () => expect(golden.length).toBe(40));
  for (const name of golden) {
    it(name, async () => {
      const rec = read(GOLDEN, name);
      const checks = await checkPlay(rec, await decksOf(rec));
      expect(checks.map((c) => [c.id, c.ok])).toEqual([
        ["deals", true],
        ["play", true],
        ["scores", true],
        ["totals", true],
        ["ranking", true],
      ]);
      expect(byId(checks, "totals")).toMatchObject({ replayed: rec.totals });
      if (rec.fairness?.server_seed) {
        const r = await verifyRecord(JSON.stringify(rec));
        expect(r.ok && r.verified).toBe(true);
      }
    });
  }
});

describe("the Verify check refuses an altered record with its reason", () => {
  const verify = async (kind: string) => {
    const r = await verifyRecord(readFileSync(new URL(`game_0008_${kind}.json`, ALTERED), "utf-8"));
    if (!r.ok) throw new Error(r.error);
    expect(r.commitmentMatches && r.allMatch).toBe(true); // the seeds and hands are not what is wrong
    expect(r.verified).toBe(false);
    return r.checks;
  };
  it("cut to half its deals", async () => {
    const checks = await verify("cut");
    expect(byId(checks, "deals")).toEqual({ id: "deals", ok: false, count: 10, expected: 20, left: null });
    expect(byId(checks, "play")?.ok).toBe(true);
    expect(byId(checks, "totals")).toMatchObject({ ok: false, recorded: [185, -75, 165, -475], replayed: [75, -20, 45, -225] });
    expect(byId(checks, "ranking")).toMatchObject({ ok: false, replayed: null });
  });
  it("totals, ranking and a deal's scores edited", async () => {
    const checks = await verify("edited");
    expect(checks.map((c) => [c.id, c.ok])).toEqual([
      ["deals", true],
      ["play", true],
      ["scores", false],
      ["totals", false],
      ["ranking", false],
    ]);
    expect(byId(checks, "scores")).toMatchObject({ bad: [{ deal: 3, recorded: [-10, -90, -30, -65], replayed: [-15, -90, -30, -60] }] });
    expect(byId(checks, "totals")).toMatchObject({ recorded: [-475, -75, 165, 185], replayed: [185, -75, 165, -475] });
    expect(byId(checks, "ranking")).toMatchObject({ recorded: [4, 3, 2, 1], replayed: [1, 3, 2, 4] });
  });
  it("two of a seat's cards swapped between two tricks: must follow suit", async () => {
    const checks = await verify("swapped");
    expect(byId(checks, "play")).toEqual({
      id: "play",
      ok: false,
      failure: { where: { deal: 0, play: 1 }, reason: { kind: "illegal", refusal: { code: 4, detail: 2 }, seat: 0, action: cardId("JC") } },
    });
  });
  it("a card the seat never held", async () => {
    const checks = await verify("foreign");
    expect(byId(checks, "play")).toEqual({
      id: "play",
      ok: false,
      failure: { where: { deal: 1, play: 0 }, reason: { kind: "illegal", refusal: { code: 3, detail: -1 }, seat: SEAT_FOREIGN, action: cardId("3C") } },
    });
  });
});
