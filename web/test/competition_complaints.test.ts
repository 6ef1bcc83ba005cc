// The review period's complaints in the browser's competition check (issue 43): read from the
// competition file in the order filed, checked as `trix verify-competition` checks them
// (complaints.py `check_file`), and covered by the digest (an altered one fails it:
// competition_check.test.ts); one the service could not have kept fails the complaints' check.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkCompetition, parseRaw, readComplaints } from "../src/client/competition_check";
import type { Raw } from "../src/client/competition_check";
import { verifyRecord } from "../src/client/verify";

const FILE = readFileSync(new URL("./competition-file.json", import.meta.url), "utf-8");
const verify = async (record: string) => {
  const r = await verifyRecord(record);
  return r.ok && r.verified;
};
type Doc = Record<string, any>;
const HUMANS = new Set(["p03", "p07"]);
const TABLES = new Set(["c-r1-t0", "c-r2-t0"]);
const complaint = (n: number, over: Doc = {}): Doc => ({ id: `c-k${n}`, player: "p03", table: "c-r1-t0", text: "slow?", answer: null, operator: null, ...over });
const problem = (list: Doc[]) => readComplaints("c", parseRaw(JSON.stringify(list)) as Raw[], HUMANS, TABLES).problem;

describe("the complaints of a competition file", () => {
  it("are shown in the order filed, with their answers or none, and the digest covers them", async () => {
    const r = await checkCompetition(FILE, verify);
    if (!r.ok) throw new Error("unreadable");
    expect(r.complaints).toEqual([
      { id: "webc1-k1", player: "p03", table: "webc1-r1-t1", text: "اللاعب في المقعد ٢ لم يتبع اللون", answer: "checked: every card legal", operator: "admin" },
      { id: "webc1-k2", player: "p07", table: "webc1-r2-t0", text: "slow?", answer: null, operator: null },
    ]);
    expect([r.complaintsProblem, r.digest, r.verified]).toEqual(["", true, true]);
  }, 60_000);

  it("are refused when the service could not have kept them, as trix verify-competition refuses them", () => {
    expect(problem([complaint(1), complaint(2, { player: "p07", table: "c-r2-t0", answer: "fine", operator: "admin" })])).toBe("");
    expect(problem([complaint(2)])).toBe("id");
    expect(problem([complaint(1, { player: "bot-1" })])).toBe("who");
    expect(problem([complaint(1, { table: "c-r9-t0" })])).toBe("who");
    expect(problem([complaint(1, { text: "" })])).toBe("text");
    expect(problem([complaint(1, { text: "ل".repeat(1001) })])).toBe("text");
    expect(problem([complaint(1, { text: "ل".repeat(1000) })])).toBe("");
    expect(problem([complaint(1, { answer: "fine" })])).toBe("answer");
    expect(problem([complaint(1, { operator: "admin" })])).toBe("answer");
    expect(problem([1, 2, 3, 4, 5, 6].map((n) => complaint(n)))).toBe("many");
    expect(problem([1, 2, 3, 4, 5].map((n) => complaint(n)))).toBe("");
  });
});
