// The Verify page's check (تحقق, docs/rules.md §11, §12): from a game record alone, recompute
// the commitment from the revealed server seed and every deal's hands from the seeds, and
// say per deal whether the record matches. Never asks the server.
import { cardId } from "./cards";
import { commitment, dealFromSeeds, hexToBytes } from "./fairness";

export type DealCheck = {
  index: number;
  /** "match": the listed hands (or, when omitted, every played card) agree with §11. */
  status: "match" | "mismatch";
  /** What differs, in the record's own terms (seat and card), when it does not match. */
  detail: string;
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
      allMatch: boolean;
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

/** The equivalent command line for a person who prefers the terminal. */
export const VERIFY_COMMAND = "trix verify record.json";

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
    const problems: string[] = [];
    if (!isObj(deal)) {
      problems.push("not a deal");
    } else {
      if (deal.hands !== undefined && deal.hands !== null) {
        const listed = Array.isArray(deal.hands) ? deal.hands.map(cardsOf) : [];
        for (let s = 0; s < 4; s++) {
          const mine = listed[s];
          const want = hands[s] as number[];
          const same = mine && mine.length === 13 && [...mine].sort((a, b) => a - b).every((c, i) => c === want[i]);
          if (!same) problems.push(`hand of seat ${s}`);
        }
      }
      const plays = Array.isArray(deal.plays) ? deal.plays : [];
      plays.forEach((p: unknown, i: number) => {
        const seat = isObj(p) && typeof p.seat === "number" ? p.seat : -1;
        const card = isObj(p) && typeof p.card === "string" ? cardId(p.card) : null;
        if (seat < 0 || seat > 3 || card === null || !(hands[seat] as number[]).includes(card)) {
          problems.push(`play ${i}`);
        }
      });
    }
    deals.push({ index: n, status: problems.length ? "mismatch" : "match", detail: problems.join(", "), hands });
  }
  const commitmentMatches = typeof f.commitment === "string" && f.commitment === computed;
  return {
    ok: true,
    commitment: computed,
    commitmentMatches,
    clientSeed,
    deals,
    allMatch: commitmentMatches && deals.every((d) => d.status === "match"),
  };
}
