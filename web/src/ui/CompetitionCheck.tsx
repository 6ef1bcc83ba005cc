// The check of a competition's result in the browser (issue 43, docs/adr/0026): the
// competition file checked by ../client/competition_check with the Verify page's whole-record
// checks (the rules engine in WebAssembly, fetched with this check only), one line per check
// and per table, pass or fail, then the review period's complaints (table, entrant, text, the
// operator's answer or none), which the digest covers. The file is the gateway's download on
// a competition's page (`CompetitionCheck`), or one the player opens or pastes on the Verify
// page (`CompetitionFileCheck`: a file kept or passed on, checked without signing in).
import { useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import type { Gateway } from "../client/api";
import type { CompetitionCheck as Result, ComplaintLine, TableCheck } from "../client/competition_check";
import type { T } from "./App";
import { cStrings } from "./competitionText";
import type { C } from "./competitionText";
import "./competition_check.css";

const mark = (ok: boolean) => (ok ? "✔ " : "✘ ");

/** The check of a file `load` gives, its lines as they come. */
function useCheck(c: C) {
  const [busy, setBusy] = useState(false);
  const [tables, setTables] = useState<TableCheck[]>([]);
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState("");
  const run = async (load: () => Promise<string>) => {
    setBusy(true);
    setError("");
    setResult(null);
    setTables([]);
    try {
      const text = await load();
      const [{ checkCompetition }, { verifyRecord }] = await Promise.all([import("../client/competition_check"), import("../client/verify")]);
      const seen: TableCheck[] = [];
      const verify = async (record: string) => {
        const r = await verifyRecord(record);
        return r.ok && r.verified;
      };
      setResult(
        await checkCompetition(text, verify, (line) => {
          seen.push(line);
          setTables([...seen]);
        }),
      );
    } catch (e) {
      setError(c.t("error", { message: ConnectError.from(e).rawMessage }));
    } finally {
      setBusy(false);
    }
  };
  return { busy, tables, result, error, run };
}

export function CompetitionCheck({ c, gw, id, digest, commitment }: { c: C; gw: Gateway; id: string; digest: string; commitment: string }) {
  const check = useCheck(c);
  return (
    <section class="card-box comp-check" aria-labelledby="check-h">
      <h2 id="check-h">{c.s("check")}</h2>
      <p>{c.s("checkIntro")}</p>
      <dl class="facts">
        <dt>{c.s("commitment")}</dt>
        <dd>
          <code dir="ltr">{commitment}</code>
        </dd>
        <dt>{c.s("digest")}</dt>
        <dd>
          <code dir="ltr" data-digest={digest}>
            {digest}
          </code>
        </dd>
      </dl>
      <button
        type="button"
        data-action="check-competition"
        disabled={check.busy}
        onClick={() => void check.run(async () => (await gw.downloadCompetitionFile({ competitionId: id })).fileJson)}
      >
        {check.busy ? c.s("checking") : c.s("check")}
      </button>
      <Checked c={c} {...check} />
    </section>
  );
}

/** The Verify page's check of a competition file opened or pasted (no sign-in needed). */
export function CompetitionFileCheck({ t }: { t: T }) {
  const c = cStrings(t);
  const check = useCheck(c);
  const [text, setText] = useState("");
  return (
    <section class="card-box comp-check" aria-labelledby="check-file-h">
      <h2 id="check-file-h">{c.s("checkFile")}</h2>
      <p>{c.s("checkFileIntro")}</p>
      <label for="competition-file-open">{c.s("openFile")}</label>
      <input
        id="competition-file-open"
        type="file"
        accept=".json,application/json"
        onChange={(e) => {
          const file = e.currentTarget.files?.[0];
          if (file)
            void check.run(async () => {
              const read = await file.text();
              setText(read);
              return read;
            });
        }}
      />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void check.run(async () => text);
        }}
      >
        <label for="competition-file">{c.s("competitionFile")}</label>
        <textarea id="competition-file" dir="ltr" rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit" data-action="check-competition-file" disabled={check.busy || !text.trim()}>
          {check.busy ? c.s("checking") : c.s("check")}
        </button>
      </form>
      <Checked c={c} {...check} />
    </section>
  );
}

function Checked({ c, tables, result: r, error }: { c: C; tables: TableCheck[]; result: Result | null; error: string }) {
  return (
    <>
      {error && <p role="alert">{error}</p>}
      {r && !r.ok && (
        <p class="verdict bad" role="alert" data-comp-verdict="error">
          {c.s("chkUnreadable")}
        </p>
      )}
      {r && r.ok && (
        <p class={`verdict ${r.verified ? "ok" : "bad"}`} data-comp-verdict={r.verified ? "match" : "mismatch"}>
          {mark(r.verified)}
          {c.s(r.verified ? "chkOk" : "chkBad")}
        </p>
      )}
      <ul class="checks" aria-live="polite">
        {r && r.ok && (
          <li data-comp-check="seed" data-status={r.seed ? "ok" : "bad"}>
            {mark(r.seed)}
            {c.s(r.seed ? "chkSeedOk" : "chkSeedBad")}
          </li>
        )}
        {tables.map((x) => {
          const ok = x.hash && x.players && x.record;
          const what = !x.hash ? "chkHash" : !x.players ? "chkPlayers" : "chkRecord";
          return (
            <li key={x.table} data-comp-check="table" data-table={x.table} data-status={ok ? "ok" : "bad"}>
              {mark(ok)}
              {ok ? c("chkTableOk", { table: <bdi dir="ltr">{x.table}</bdi> }) : c("chkTableBad", { table: <bdi dir="ltr">{x.table}</bdi>, what: c.s(what) })}
            </li>
          );
        })}
        {r && r.ok && r.strayRecords > 0 && (
          <li data-comp-check="stray" data-status="bad">
            {mark(false)}
            {c("chkStray", { n: r.strayRecords })}
          </li>
        )}
        {r && r.ok && (
          <li data-comp-check="payouts" data-status={r.payouts ? "bad" : "ok"}>
            {mark(!r.payouts)}
            {c.s(r.payouts ? "chkPayoutsBad" : "chkPayoutsOk")}
          </li>
        )}
        {r && r.ok && (
          <li data-comp-check="complaints" data-status={r.digest && !r.complaintsProblem ? "ok" : "bad"}>
            {mark(r.digest && !r.complaintsProblem)}
            {r.complaintsProblem
              ? c.s("chkComplaintsBad")
              : c(r.digest ? "chkComplaintsOk" : "chkComplaintsNotCovered", { n: r.complaints.length })}
          </li>
        )}
        {r && r.ok && (
          <li data-comp-check="digest" data-status={r.digest ? "ok" : "bad"}>
            {mark(r.digest)}
            {c(r.digest ? "chkDigestOk" : "chkDigestBad", { digest: <code dir="ltr">{r.computedDigest.slice(0, 16)}…</code> })}
          </li>
        )}
      </ul>
      {r && r.ok && <Complaints c={c} complaints={r.complaints} covered={r.digest} />}
    </>
  );
}

/** The review period's complaints, each with its table, entrant, text and answer. */
function Complaints({ c, complaints, covered }: { c: C; complaints: ComplaintLine[]; covered: boolean }) {
  return (
    <section class="comp-complaints" aria-labelledby="complaints-h" data-covered={covered ? "yes" : "no"}>
      <h3 id="complaints-h">{c.s("complaintsH")}</h3>
      {complaints.length === 0 ? (
        <p data-complaints="none">{c.s("noComplaints")}</p>
      ) : (
        <ol class="complaints">
          {complaints.map((k) => (
            <li key={k.id} data-complaint={k.id} data-answered={k.answer === null ? "no" : "yes"}>
              <p class="complaint-head">{c("complaintBy", { table: <bdi dir="ltr">{k.table}</bdi>, player: <bdi>{k.player}</bdi> })}</p>
              <blockquote data-complaint-text>
                <bdi dir="auto">{k.text}</bdi>
              </blockquote>
              <p data-complaint-answer>
                {k.answer === null ? c.s("complaintNoAnswer") : c("complaintAnswer", { operator: <bdi>{k.operator ?? ""}</bdi>, answer: <bdi dir="auto">{k.answer}</bdi> })}
              </p>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
