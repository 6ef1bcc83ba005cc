// The check of a competition's result in the browser (issue 43, docs/adr/0026): the
// competition file downloaded from the gateway and checked by ../client/competition_check with
// the Verify page's whole-record checks (the rules engine in WebAssembly, fetched with this
// check only), one line per check and per table, pass or fail.
import { useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import type { Gateway } from "../client/api";
import type { CompetitionCheck as Result, TableCheck } from "../client/competition_check";
import type { C } from "./competitionText";

const mark = (ok: boolean) => (ok ? "✔ " : "✘ ");

export function CompetitionCheck({ c, gw, id, digest, commitment }: { c: C; gw: Gateway; id: string; digest: string; commitment: string }) {
  const [busy, setBusy] = useState(false);
  const [tables, setTables] = useState<TableCheck[]>([]);
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState("");
  const run = async () => {
    setBusy(true);
    setError("");
    setResult(null);
    setTables([]);
    try {
      const file = await gw.downloadCompetitionFile({ competitionId: id });
      const [{ checkCompetition }, { verifyRecord }] = await Promise.all([import("../client/competition_check"), import("../client/verify")]);
      const seen: TableCheck[] = [];
      const verify = async (record: string) => {
        const r = await verifyRecord(record);
        return r.ok && r.verified;
      };
      setResult(
        await checkCompetition(file.fileJson, verify, (line) => {
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
  const r = result;
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
      <button type="button" data-action="check-competition" disabled={busy} onClick={() => void run()}>
        {busy ? c.s("checking") : c.s("check")}
      </button>
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
          <li data-comp-check="digest" data-status={r.digest ? "ok" : "bad"}>
            {mark(r.digest)}
            {c(r.digest ? "chkDigestOk" : "chkDigestBad", { digest: <code dir="ltr">{r.computedDigest.slice(0, 16)}…</code> })}
          </li>
        )}
      </ul>
    </section>
  );
}
