// The competition file checked in the browser (issue 43) as `trix verify-competition` checks it:
// the file the service's core publishes (tests/web/competition_vectors.py writes it, and
// tests/web/test_competition_vectors.py verifies it in Python) passes every check here; each
// forgery fails the check that names it.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { canonical, checkCompetition, parseRaw, planLedger } from "../src/client/competition_check";
import { verifyRecord } from "../src/client/verify";

const FILE = readFileSync(new URL("./competition-file.json", import.meta.url), "utf-8");
const verify = async (record: string) => {
  const r = await verifyRecord(record);
  return r.ok && r.verified;
};
type Doc = Record<string, any>;
const edited = (change: (d: Doc) => void): string => {
  // Edited as Python would write it back: the ratings keep their ".0".
  const d = JSON.parse(FILE) as Doc;
  change(d);
  return JSON.stringify(d).replace(/"rating":(\d+)(?=[,}])/g, '"rating":$1.0');
};

describe("the canonical form the digest is taken of", () => {
  it("sorts keys, drops spaces and keeps each number as written (Python's 1500.0)", () => {
    expect(canonical(parseRaw('{"b": [1, 2.50, -0.0], "a": {"z": "é\\n", "y": true, "x": null}, "r": 1500.0}'))).toBe(
      '{"a":{"x":null,"y":true,"z":"é\\n"},"b":[1,2.50,-0.0],"r":1500.0}',
    );
  });
  it("refuses what is not JSON", () => {
    expect(() => parseRaw("{\"a\":}")).toThrow(SyntaxError);
    expect(() => parseRaw("[1] x")).toThrow(SyntaxError);
  });
});

describe("the payouts recomputed from the ranking and the fees (money.py)", () => {
  it("keep the house fee, share the rest, give the odd coins to the first place, and skip bots", () => {
    const l = planLedger("c", 100, { pool: [60, 40], houseFee: 10 }, ["a", "b", "c"], ["c"], [["bot-1"], ["b"], ["a"]], []);
    // Held 300, refunded 50: pool 250, the house keeps 25, 225 shared 135 / 90; the bot's place goes to b.
    expect(l.map((e) => [e.kind, e.player, e.coins])).toEqual([
      ["hold", "a", 100],
      ["hold", "b", 100],
      ["hold", "c", 100],
      ["refund", "c", 50],
      ["prize", "b", 135],
      ["prize", "a", 90],
      ["house", "house", 25],
    ]);
  });
});

describe("a competition file checked in the browser", () => {
  it("verifies the file the service publishes: seed, every table's hash, players and record, payouts, digest", async () => {
    const seen: string[] = [];
    const r = await checkCompetition(FILE, verify, (t) => seen.push(t.table));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.tables.length).toBe(5);
    expect(seen).toEqual(r.tables.map((t) => t.table));
    expect(r.tables.every((t) => t.hash && t.players && t.record)).toBe(true);
    expect([r.seed, r.payouts, r.digest, r.strayRecords, r.verified]).toEqual([true, "", true, 0, true]);
    expect(r.computedDigest).toBe((JSON.parse(FILE) as Doc).digest);
  }, 60_000);

  it("fails a swapped card at its table: the record's hash and its whole-record check", async () => {
    const text = edited((d) => {
      const plays = d.records[d.tables[0].table].deals[0].plays;
      [plays[0], plays[1]] = [plays[1], plays[0]];
    });
    const r = await checkCompetition(text, verify);
    if (!r.ok) throw new Error("unreadable");
    const [first, ...rest] = r.tables;
    expect([first?.hash, first?.record]).toEqual([false, false]);
    expect(rest.every((t) => t.hash && t.record)).toBe(true);
    expect([r.digest, r.verified]).toEqual([true, false]);
  }, 60_000);

  it("fails a changed payout (payouts, digest), a changed seed (seed) and a stray record", async () => {
    const prize = await checkCompetition(edited((d) => (d.ledger.find((e: Doc) => e.kind === "prize").coins += 1)), verify);
    const seed = await checkCompetition(edited((d) => (d.seating.seed = "00".repeat(32))), verify);
    const stray = await checkCompetition(edited((d) => (d.records["webc1-r9-t0"] = d.records[d.tables[0].table])), verify);
    if (!prize.ok || !seed.ok || !stray.ok) throw new Error("unreadable");
    expect([prize.payouts, prize.digest, prize.verified]).toEqual(["conserved", false, false]);
    expect([seed.seed, seed.digest, seed.verified]).toEqual([false, false, false]);
    expect([stray.strayRecords, stray.digest, stray.verified]).toEqual([1, true, false]);
  }, 60_000);

  it("fails an altered or dropped complaint of the review period (digest)", async () => {
    const answer = await checkCompetition(edited((d) => (d.complaints[0].answer = "refunded")), verify);
    const dropped = await checkCompetition(edited((d) => d.complaints.pop()), verify);
    if (!answer.ok || !dropped.ok) throw new Error("unreadable");
    expect([answer.digest, answer.payouts, answer.verified]).toEqual([false, "", false]);
    expect([dropped.digest, dropped.verified]).toEqual([false, false]);
  }, 60_000);

  it("says when a text is not a competition file", async () => {
    expect(await checkCompetition("{", verify)).toEqual({ ok: false, error: "not-json" });
    expect(await checkCompetition('{"format":"trix-record/1"}', verify)).toEqual({ ok: false, error: "not-competition" });
  });
});
