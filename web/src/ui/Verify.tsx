// The Verify page (تحقق, docs/rules.md §11): a pasted record, or a finished table's record
// fetched by id, checked in the browser; states the algorithm and the terminal command.
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import type { Gateway } from "../client/api";
import { VERIFY_COMMAND, verifyRecord } from "../client/verify";
import type { VerifyResult } from "../client/verify";
import type { T } from "./App";

const ERRORS = { "not-json": "notJson", "not-record": "notRecord", "no-seed": "noSeed" } as const;

export function VerifyPage({ t, gw, initial }: { t: T; gw: Gateway | null; initial: string }) {
  const [text, setText] = useState(initial);
  const [tableId, setTableId] = useState("");
  const [result, setResult] = useState<VerifyResult | null>(null);
  const [error, setError] = useState("");
  const check = async (record: string) => setResult(await verifyRecord(record));
  useEffect(() => {
    if (initial) void check(initial);
  }, [initial]);

  const load = async () => {
    if (!gw || !tableId.trim()) return;
    setError("");
    try {
      const r = await gw.query({ query: { case: "gameRecord", value: { tableId: tableId.trim() } } });
      const rec = r.result.case === "gameRecord" ? r.result.value.recordJson : "";
      setText(rec);
      await check(rec);
    } catch (err) {
      setError(t("error", { message: ConnectError.from(err).rawMessage }));
    }
  };

  return (
    <section class="card-box verify">
      <h1>{t("verifyTitle")}</h1>
      <p>{t("verifyIntro")}</p>
      {gw && (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void load();
          }}
        >
          <label for="tid">{t("tableId")}</label>
          <input id="tid" value={tableId} dir="ltr" onInput={(e) => setTableId(e.currentTarget.value)} />
          <button type="submit">{t("load")}</button>
        </form>
      )}
      {error && <p role="alert">{error}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void check(text);
        }}
      >
        <label for="record">{t("record")}</label>
        <textarea id="record" dir="ltr" rows={6} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <button type="submit" data-action="check">
          {t("check")}
        </button>
      </form>
      {result && <Result t={t} r={result} />}
      <details>
        <summary>{t("verifyCommand")}</summary>
        <p>{t("verifyAlgo")}</p>
        <pre dir="ltr">{VERIFY_COMMAND}</pre>
      </details>
    </section>
  );
}

function Result({ t, r }: { t: T; r: VerifyResult }) {
  if (!r.ok)
    return (
      <p class="verdict bad" role="alert" data-verdict="error">
        {t(ERRORS[r.error as keyof typeof ERRORS] ?? "notRecord")}
      </p>
    );
  return (
    <div class="result" aria-live="polite">
      <p class={`verdict ${r.allMatch ? "ok" : "bad"}`} data-verdict={r.allMatch ? "match" : "mismatch"}>
        {r.allMatch ? `✔ ${t("allOk")}` : `✘ ${t("someBad")}`}
      </p>
      <p data-commitment={r.commitmentMatches ? "match" : "mismatch"}>{r.commitmentMatches ? `✔ ${t("commitmentOk")}` : `✘ ${t("commitmentBad")}`}</p>
      <ul class="deals">
        {r.deals.map((d) => (
          <li key={d.index} data-deal={d.index} data-status={d.status}>
            {d.status === "match" ? `✔ ${t("dealOk", { n: d.index + 1 })}` : `✘ ${t("dealBad", { n: d.index + 1, detail: d.detail })}`}
          </li>
        ))}
      </ul>
    </div>
  );
}
