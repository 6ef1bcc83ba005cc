// The browser's §11 shuffle and commitment against vectors the Python side generated
// (tests/web/fairness_vectors.py; tests/web/test_fairness_vectors.py keeps the file current).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { commitment, dealFromSeeds, hexToBytes, shuffledDeck } from "../src/client/fairness";
import { verifyRecord } from "../src/client/verify";
import vectorFile from "./fairness-vectors.json";

type Shuffle = { server_seed: string; client_seed: string; n: number; commitment: string; deck: number[]; hands: number[][] };
const vectors = vectorFile as unknown as {
  shuffles: Shuffle[];
  record: Record<string, unknown> & { fairness: Record<string, string>; deals: Record<string, unknown>[] };
};

describe("docs/rules.md §11 in the browser equals trix.fairness", () => {
  it("has vectors", () => expect(vectors.shuffles.length).toBeGreaterThanOrEqual(4));
  for (const v of vectors.shuffles) {
    it(`commitment, deck and hands of ${JSON.stringify(v.client_seed)} deal ${v.n}`, async () => {
      const seed = hexToBytes(v.server_seed);
      expect(await commitment(seed)).toBe(v.commitment);
      expect(await shuffledDeck(seed, v.client_seed, v.n)).toEqual(v.deck);
      expect(await dealFromSeeds(seed, v.client_seed, v.n)).toEqual(v.hands);
    });
  }
});

describe("the Verify page's check of a record", () => {
  it("reports every deal matching for an untouched record", async () => {
    const r = await verifyRecord(JSON.stringify(vectors.record));
    expect(r.ok && r.commitmentMatches && r.allMatch && r.deals.length).toBe(2);
  });
  it("reports a mismatch for a tampered hand", async () => {
    const rec = structuredClone(vectors.record);
    const hands = rec.deals[0]?.hands as string[][];
    const [a, b] = [hands[0]?.[0] as string, hands[1]?.[0] as string];
    hands[0]![0] = b;
    hands[1]![0] = a;
    const r = await verifyRecord(JSON.stringify(rec));
    if (!r.ok) throw new Error(r.error);
    expect(r.allMatch).toBe(false);
    expect(r.deals.map((d) => d.status)).toEqual(["mismatch", "match"]);
    expect(r.deals[0]?.badSeats).toEqual([0, 1]);
  });
  it("refuses a played card the seat never held (hands omitted): the engine's replay", async () => {
    // a whole game (the vectors' record is two made-up deals): tests/golden/game_0008, hands derived
    const rec = JSON.parse(readFileSync(new URL("../../tests/golden/game_0008.json", import.meta.url), "utf-8")) as typeof vectors.record;
    const plays = rec.deals[1]?.plays as { seat: number; card: string }[];
    const seat = (plays[0]!.seat + 1) % 4;
    plays[0]!.seat = seat;
    const r = await verifyRecord(JSON.stringify(rec));
    if (!r.ok) throw new Error(r.error);
    expect(r.allMatch && !r.verified).toBe(true);
    expect(r.checks.find((c) => c.id === "play")).toMatchObject({ ok: false, failure: { where: { deal: 1, play: 0 }, reason: { kind: "illegal", seat } } });
  });
  it("reports a commitment that does not match the revealed seed", async () => {
    const rec = structuredClone(vectors.record);
    rec.fairness.commitment = "0".repeat(64);
    const r = await verifyRecord(JSON.stringify(rec));
    expect(r.ok && !r.commitmentMatches && !r.allMatch).toBe(true);
  });
  it("refuses what is not a record", async () => {
    expect(await verifyRecord("{")).toEqual({ ok: false, error: "not-json" });
    expect(await verifyRecord('{"fairness":{"server_seed":null},"deals":[]}')).toEqual({ ok: false, error: "no-seed" });
  });
});

describe("the replay viewer's deals", () => {
  it("take listed hands, and derive omitted ones from the revealed seeds (§11)", async () => {
    const { replayDeals } = await import("../src/ui/History");
    const { deals, players } = await replayDeals(JSON.stringify(vectors.record));
    expect(players).toEqual(["p1", "p2", "p3", "p4"]);
    const seed = hexToBytes(vectors.record.fairness.server_seed as string);
    for (const n of [0, 1]) {
      const derived = await dealFromSeeds(seed, vectors.record.fairness.client_seed as string, n);
      expect(deals[n]?.hands.map((h) => [...h].sort((a, b) => a - b))).toEqual(derived);
    }
    expect(deals[1]?.plays.length).toBe(4);
  });
});
