// The Verify page's check (تحقق, docs/rules.md §11, §12): from a game record alone, recompute
// the commitment from the revealed server seed and every deal's hands from the seeds, then
// check the rest of the record with the rules engine (check.ts: the number of deals, the play,
// every deal's points, the totals, the ranking), as `trix verify` does. Never asks the server.
import { cardId } from "./cards";
import { checkPlay } from "./check";
import type { Check } from "./check";
import { commitment, dealFromSeeds, hexToBytes } from "./fairness";

export type DealCheck = {
  index: number;
  /** "match": the listed hands (or every hand, when omitted: derived) agree with §11. */
  status: "match" | "mismatch";
  /** The seats whose listed hand is not the derived one. */
  badSeats: number[];
  hands: number[][];
};

export type VerifyResult =
  | { ok: false; error: string }
  | {
      ok: true;
      commitment: string;
      commitmentMatches: boolean;
      clientSeed: string;
      deals: DealCheck[];
      /** The commitment and every deal's hands agree with the seeds (§11). */
      allMatch: boolean;
      /** The rest of the record, replayed by the rules engine (none when the hands differ). */
      checks: Check[];
      /** Every check passed: the one verdict the page shows. */
      verified: boolean;
    };

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function cardsOf(list: unknown): number[] | null {
  if (!Array.isArray(list)) return null;
  const ids: number[] = [];
  for (const c of list) {
    const id = typeof c === "string" ? cardId(c) : null;
    if (id === null) return null;
    ids.push(id);
  }
  return ids;
}

export async function verifyRecord(text: string): Promise<VerifyResult> {
  let rec: unknown;
  try {
    rec = JSON.parse(text);
  } catch {
    return { ok: false, error: "not-json" };
  }
  if (!isObj(rec) || !isObj(rec.fairness) || !Array.isArray(rec.deals)) return { ok: false, error: "not-record" };
  const f = rec.fairness;
  const seedHex = f.server_seed;
  if (typeof seedHex !== "string" || !/^[0-9a-f]{64}$/.test(seedHex)) return { ok: false, error: "no-seed" };
  const clientSeed = typeof f.client_seed === "string" ? f.client_seed : "";
  const seed = hexToBytes(seedHex);
  const computed = await commitment(seed);
  const deals: DealCheck[] = [];
  for (let n = 0; n < rec.deals.length; n++) {
    const deal: unknown = rec.deals[n];
    const hands = await dealFromSeeds(seed, clientSeed, n);
    const badSeats: number[] = [];
    if (isObj(deal) && deal.hands !== undefined && deal.hands !== null) {
      const listed = Array.isArray(deal.hands) ? deal.hands.map(cardsOf) : [];
      for (let s = 0; s < 4; s++) {
        const mine = listed[s];
        const want = hands[s] as number[];
        const same = mine && mine.length === 13 && [...mine].sort((a, b) => a - b).every((c, i) => c === want[i]);
        if (!same) badSeats.push(s);
      }
    }
    deals.push({ index: n, status: badSeats.length ? "mismatch" : "match", badSeats, hands });
  }
  const commitmentMatches = typeof f.commitment === "string" && f.commitment === computed;
  const allMatch = commitmentMatches && deals.every((d) => d.status === "match");
  let checks: Check[];
  try {
    checks = deals.every((d) => d.status === "match") ? await checkPlay(rec, deals.map((d) => d.hands)) : [];
  } catch {
    return { ok: false, error: "engine" };
  }
  return {
    ok: true,
    commitment: computed,
    commitmentMatches,
    clientSeed,
    deals,
    allMatch,
    checks,
    verified: allMatch && checks.length > 0 && checks.every((c) => c.ok),
  };
}
