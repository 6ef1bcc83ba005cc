// A competition file (`trix-competition/1`, docs/adr/0026) checked in the browser during the
// review period, as `trix verify-competition` does, with Web Crypto and the rules engine in
// WebAssembly only: the seating seed against its commitment, every table's record against the
// hash and the players the file lists, every record with the Verify page's whole-record checks
// (verify.ts), the payouts recomputed from the ranking and the fees (the service's
// money.py rules) with coins conserved, the review period's complaints as the service keeps
// them (complaints.py `check_file`), and the digest recomputed over the file's fields (the
// complaints and their answers among them: an altered one fails it). Not
// re-run here: the draw of the seating and the bracket from the seed (the terminal's command
// does it). The digest is SHA-256 of the canonical JSON (keys sorted, no spaces, UTF-8) the
// service wrote with Python; a number keeps the text the file gives it (1500.0 stays 1500.0,
// as Python writes it back), so the file is read by a parser of its own (`parseRaw`).
import { bytesToHex, commitment, hexToBytes } from "./fairness";

/** The fields the digest covers, as services/trix/competitions/digest.py DIGESTED. */
export const DIGESTED = ["format", "competition_id", "options", "humans", "paid", "left_before_start", "refused", "seating", "cancelled", "tables", "ranking", "ledger", "complaints"] as const;
export const FORMAT = "trix-competition/1";

/** A JSON number as written: its text is what the canonical form prints. */
export class RawNumber {
  constructor(readonly text: string) {}
  get value(): number {
    return Number(this.text);
  }
}
export type Raw = null | boolean | string | RawNumber | Raw[] | { [k: string]: Raw };

/** JSON text to a value whose numbers keep their text; throws SyntaxError on bad JSON. */
export function parseRaw(text: string): Raw {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i] as string)) i++;
  };
  const bad = (): never => {
    throw new SyntaxError(`bad JSON at ${i}`);
  };
  const value = (): Raw => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const o: { [k: string]: Raw } = {};
      ws();
      if (text[i] === "}") return i++, o;
      for (;;) {
        ws();
        const k = value();
        if (typeof k !== "string") bad();
        ws();
        if (text[i++] !== ":") bad();
        o[k as string] = value();
        ws();
        const d = text[i++];
        if (d === "}") return o;
        if (d !== ",") bad();
      }
    }
    if (c === "[") {
      i++;
      const a: Raw[] = [];
      ws();
      if (text[i] === "]") return i++, a;
      for (;;) {
        a.push(value());
        ws();
        const d = text[i++];
        if (d === "]") return a;
        if (d !== ",") bad();
      }
    }
    if (c === '"') {
      const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(i));
      if (!m) bad();
      i += (m as RegExpExecArray)[0].length;
      return JSON.parse((m as RegExpExecArray)[0]) as string;
    }
    const n = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    if (n) {
      i += n[0].length;
      return new RawNumber(n[0]);
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    return bad();
  };
  const v = value();
  ws();
  if (i !== text.length) bad();
  return v;
}

/** Python's json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False). */
export function canonical(v: Raw): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return JSON.stringify(v);
  if (v instanceof RawNumber) return v.text;
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k] as Raw)}`).join(",")}}`;
}

/** Back to plain JSON values (numbers as numbers), for the record checks. */
export function plain(v: Raw): unknown {
  if (v instanceof RawNumber) return v.value;
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

export async function sha256Hex(text: string): Promise<string> {
  return bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}

const obj = (v: Raw | undefined): { [k: string]: Raw } | null => (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof RawNumber) ? v : null);
const arr = (v: Raw | undefined): Raw[] | null => (Array.isArray(v) ? v : null);
const str = (v: Raw | undefined): string => (typeof v === "string" ? v : "");
const num = (v: Raw | undefined): number => (v instanceof RawNumber ? v.value : NaN);
const strs = (v: Raw | undefined): string[] => (arr(v) ?? []).map(str);

export type LedgerLine = { key: string; kind: string; player: string; coins: number };

/** The service's plan (services/trix/competitions/money.py), from the file's own fields. */
export function planLedger(
  id: string,
  fee: number,
  prize: { fixed: number[] } | { pool: number[]; houseFee: number },
  paid: readonly string[],
  left: readonly string[],
  ranking: readonly (readonly string[])[] | null,
  refused: readonly string[],
): LedgerLine[] {
  const key = (kind: string, player: string) => `competition.${id}.${kind}.${player}`;
  const out: LedgerLine[] = fee ? paid.map((p) => ({ key: key("hold", p), kind: "hold", player: p, coins: fee })) : [];
  for (const p of paid) {
    const back = left.includes(p) ? Math.floor(fee / 2) : ranking === null || refused.includes(p) ? fee : 0;
    if (back) out.push({ key: key("refund", p), kind: "refund", player: p, coins: back });
  }
  const sum = (kind: string) => out.filter((e) => e.kind === kind).reduce((a, e) => a + e.coins, 0);
  const pool = sum("hold") - sum("refund");
  if (ranking !== null) {
    let amounts: number[];
    if ("fixed" in prize) amounts = [...prize.fixed];
    else {
      const shared = pool - Math.floor((pool * prize.houseFee) / 100);
      amounts = prize.pool.map((s) => Math.floor((shared * s) / 100));
      if (amounts.length) amounts[0] = (amounts[0] ?? 0) + shared - amounts.reduce((a, b) => a + b, 0);
    }
    const winners = ranking.map((u) => u.filter((p) => !p.startsWith("bot-"))).filter((u) => u.length);
    amounts.forEach((amount, place) => {
      const unit = winners[place];
      if (!unit) return;
      const each = Math.floor(amount / unit.length);
      const odd = amount - each * unit.length;
      unit.forEach((p, i) => {
        const coins = each + (i === 0 ? odd : 0);
        if (coins) out.push({ key: key("prize", p), kind: "prize", player: p, coins });
      });
    });
  }
  out.push({ key: key("house", "house"), kind: "house", player: "house", coins: pool - sum("prize") });
  return out;
}

/** Why the ledger does not conserve coins (docs/adr/0026), or "" when it does. */
export type PayoutProblem = "" | "keys" | "bot" | "negative" | "conserved" | "plan";

export function conservationProblem(entries: readonly LedgerLine[]): PayoutProblem {
  if (new Set(entries.map((e) => e.key)).size !== entries.length) return "keys";
  if (entries.some((e) => e.kind === "prize" && e.player.startsWith("bot-"))) return "bot";
  if (entries.some((e) => e.coins < 0 && e.kind !== "house")) return "negative";
  const held = entries.filter((e) => e.kind === "hold").reduce((a, e) => a + e.coins, 0);
  const out = entries.filter((e) => e.kind !== "hold").reduce((a, e) => a + e.coins, 0);
  return held === out ? "" : "conserved";
}

/** A complaint of the review period as the file keeps it (complaints.py `as_file`). */
export type ComplaintLine = { id: string; player: string; table: string; text: string; answer: string | null; operator: string | null };
/** Why the file's complaints are not ones the service could have kept (complaints.py
 * `check_file`), or "" when they are. */
export type ComplaintProblem = "" | "id" | "who" | "text" | "answer" | "many";
export const MAX_COMPLAINT_TEXT = 1000;
export const MAX_COMPLAINTS_PER_ENTRANT = 5;

/** The file's complaints, and `check_file`'s look at them: numbered `<competition>-k1`... in
 * the order filed, each by an entrant at the start against a listed table, a text of 1 to 1000
 * characters, an answer with its operator or neither, at most 5 per entrant. */
export function readComplaints(id: string, raw: Raw[], humans: ReadonlySet<string>, tables: ReadonlySet<string>): { complaints: ComplaintLine[]; problem: ComplaintProblem } {
  const complaints: ComplaintLine[] = [];
  const filed = new Map<string, number>();
  const chars = (v: Raw | undefined) => (typeof v === "string" ? [...v].length : -1); // code points, as Python's len
  const sized = (v: Raw | undefined) => chars(v) >= 1 && chars(v) <= MAX_COMPLAINT_TEXT;
  let problem: ComplaintProblem = "";
  raw.forEach((item, i) => {
    const c = obj(item) ?? {};
    const [answer, operator] = [c.answer ?? null, c.operator ?? null]; // absent: null, as Python's get
    const line = { id: str(c.id), player: str(c.player), table: str(c.table), text: str(c.text), answer: typeof c.answer === "string" ? c.answer : null, operator: typeof c.operator === "string" ? c.operator : null };
    complaints.push(line);
    filed.set(line.player, (filed.get(line.player) ?? 0) + 1);
    const why: ComplaintProblem =
      c.id !== `${id}-k${i + 1}`
        ? "id"
        : !humans.has(line.player) || !tables.has(line.table)
          ? "who"
          : !sized(c.text)
            ? "text"
            : (answer === null) !== (operator === null) || !(answer === null || (sized(answer) && typeof operator === "string"))
              ? "answer"
              : (filed.get(line.player) ?? 0) > MAX_COMPLAINTS_PER_ENTRANT
                ? "many"
                : "";
    problem ||= why;
  });
  return { complaints, problem };
}

/** One table's line: its record's hash and players as listed, and the whole-record checks. */
export type TableCheck = { table: string; round: number; hash: boolean; players: boolean; record: boolean };
export type CompetitionCheck =
  | { ok: false; error: "not-json" | "not-competition" }
  | {
      ok: true;
      seed: boolean;
      tables: TableCheck[];
      /** A record in the file for no listed table. */
      strayRecords: number;
      /** "" or why the ledger is not the one the ranking and the fees give. */
      payouts: PayoutProblem;
      /** The review period's complaints and their answers, in the order filed (the digest covers them). */
      complaints: ComplaintLine[];
      complaintsProblem: ComplaintProblem;
      digest: boolean;
      computedDigest: string;
      verified: boolean;
    };

/** `verify`: the whole-record checks of one record (verify.ts), true when they all pass. */
export async function checkCompetition(text: string, verify: (record: string) => Promise<boolean>, onTable?: (t: TableCheck) => void): Promise<CompetitionCheck> {
  let doc: Raw;
  try {
    doc = parseRaw(text);
  } catch {
    return { ok: false, error: "not-json" };
  }
  const d = obj(doc);
  if (!d || d.format !== FORMAT || !obj(d.seating) || !arr(d.tables) || !obj(d.records) || !arr(d.ledger) || !arr(d.complaints)) return { ok: false, error: "not-competition" };
  const seating = obj(d.seating) as { [k: string]: Raw };
  const seedHex = str(seating.seed);
  let seed = false;
  try {
    seed = /^[0-9a-f]+$/.test(seedHex) && (await commitment(hexToBytes(seedHex))) === str(seating.commitment);
  } catch {
    seed = false;
  }
  const records = obj(d.records) as { [k: string]: Raw };
  const tables: TableCheck[] = [];
  for (const t of arr(d.tables) as Raw[]) {
    const row = obj(t) ?? {};
    const id = str(row.table);
    const record = records[id];
    const rec = obj(record);
    const hash = record !== undefined && (await sha256Hex(canonical(record))) === str(row.record_sha256);
    const players = !!rec && canonical(rec.players ?? null) === canonical(row.players ?? null);
    let passed = false;
    if (rec) {
      try {
        passed = await verify(JSON.stringify(plain(rec)));
      } catch {
        passed = false;
      }
    }
    const line = { table: id, round: num(row.round), hash, players, record: passed };
    tables.push(line);
    onTable?.(line);
  }
  const listed = new Set(tables.map((t) => t.table));
  const strayRecords = Object.keys(records).filter((k) => !listed.has(k)).length;
  const ledger: LedgerLine[] = (arr(d.ledger) as Raw[]).map((e) => {
    const o = obj(e) ?? {};
    return { key: str(o.key), kind: str(o.kind), player: str(o.player), coins: num(o.coins) };
  });
  let payouts: PayoutProblem = conservationProblem(ledger);
  if (!payouts) {
    const o = obj(d.options) ?? {};
    const pz = obj(o.prize) ?? {};
    const prize = arr(pz.pool) ? { pool: (arr(pz.pool) as Raw[]).map(num), houseFee: num(pz.house_fee_percent) } : { fixed: (arr(pz.fixed) ?? []).map(num) };
    const ranking = d.cancelled === true ? null : (arr(d.ranking) ?? []).map(strs);
    const expected = planLedger(str(d.competition_id), num(o.entry_fee) || 0, prize, strs(d.paid), strs(d.left_before_start), ranking, strs(d.refused));
    if (JSON.stringify(expected) !== JSON.stringify(ledger)) payouts = "plan";
  }
  const humans = new Set((arr(d.humans) ?? []).map((h) => str((obj(h) ?? {}).player)));
  const { complaints, problem: complaintsProblem } = readComplaints(str(d.competition_id), arr(d.complaints) as Raw[], humans, listed);
  const covered: { [k: string]: Raw } = {};
  for (const name of DIGESTED) covered[name] = d[name] ?? null;
  const computedDigest = await sha256Hex(canonical(covered));
  const digest = computedDigest === str(d.digest);
  const verified = seed && digest && !payouts && !complaintsProblem && strayRecords === 0 && tables.every((t) => t.hash && t.players && t.record);
  return { ok: true, seed, tables, strayRecords, payouts, complaints, complaintsProblem, digest, computedDigest, verified };
}
