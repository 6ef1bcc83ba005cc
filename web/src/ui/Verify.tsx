// The Verify page (تحقق, docs/rules.md §11, §12): a pasted record, or a finished table's record
// fetched by id, checked in the browser: the seeds, then the whole record replayed by the rules
// engine (WebAssembly, fetched with the check's code only when a record is checked), one line
// per check in the page's language, numbers and ids isolated (<bdi>). States the algorithm and
// the terminal command. Below it, a competition file's check (./CompetitionCheck).
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import type { Gateway } from "../client/api";
import { SUITS, RANKS } from "../client/cards";
import type { Check, PlayFailure, Reason } from "../client/check";
import type { VerifyResult } from "../client/verify";
import type { T } from "./App";
import type { Key } from "./i18n";
import { formatNumber, tx } from "./fmt";
import type { Vars } from "./fmt";

const ERRORS = { "not-json": "notJson", "not-record": "notRecord", "no-seed": "noSeed", engine: "engineFailed" } as const;
/** The same check in a terminal (services/trix/records_cli.py). */
const VERIFY_COMMAND = "trix verify record.json";
const SUIT_SIGNS = "♣♦♥♠";

/** A translated line whose {vars} are isolated from the text around them (./fmt): a number,
 * a list of numbers or a card keeps its own direction on the Arabic page. */
const fill = (t: T, key: Key, vars: Vars = {}): ComponentChildren[] => tx(t, key, vars);

const n1 = (i: number) => i + 1; // deals, plays and seats counted from 1 on the page
const nums = (v: number[] | null, t: T) => (v ? <bdi dir="ltr">{v.map((n) => formatNumber(t.lang, n)).join(" / ")}</bdi> : <bdi>{t("none")}</bdi>);
const card = (id: number) => <bdi dir="ltr">{`${RANKS[id % 13]}${SUIT_SIGNS[Math.floor(id / 13)] ?? SUITS[Math.floor(id / 13)]}`}</bdi>;

const ILLEGAL: Record<number, Key> = {
  1: "rNotYourTurn",
  2: "rWrongPhase",
  3: "rNotInHand",
  4: "rMustFollow",
  5: "rLayout",
  6: "rContractPlayed",
  7: "rContractVariant",
  8: "rCannotDouble",
  9: "rAnswered",
  10: "rGameOver",
  17: "rDealEnded",
};

function reasonText(t: T, r: Reason): ComponentChildren[] {
  switch (r.kind) {
    case "illegal": {
      const { code, detail } = r.refusal;
      return fill(t, ILLEGAL[code] ?? "rBadAction", {
        seat: n1(r.seat),
        turn: n1(detail),
        card: card(code === 8 ? detail : r.action),
        suit: <bdi>{SUIT_SIGNS[detail] ?? "?"}</bdi>,
      });
    }
    case "malformed":
      return fill(t, "rMalformed", { field: <bdi dir="ltr">{r.field}</bdi> });
    case "owner":
      return fill(t, "rOwner", { recorded: n1(r.recorded), owner: n1(r.owner) });
    case "contract-missing":
      return fill(t, "rContractMissing");
    case "no-doubling":
      return fill(t, "rNoDoubling");
    case "not-eligible":
      return fill(t, "rNotEligible", { seat: n1(r.seat) });
    case "answered":
      return fill(t, "rAnswered");
    case "missing-answer":
      return fill(t, "rMissingAnswer", { seat: n1(r.seat) });
    case "deal-ended":
      return fill(t, "rDealEnded");
    case "unfinished":
      return fill(t, "rUnfinished", { next: n1(r.next) });
    case "game-over":
      return fill(t, "rGameOver");
  }
}

function failureText(t: T, f: PlayFailure): ComponentChildren[] {
  const { deal, play, answer } = f.where;
  const where =
    play !== undefined
      ? fill(t, "wherePlay", { deal: n1(deal), play: n1(play) })
      : answer !== undefined
        ? fill(t, "whereAnswer", { deal: n1(deal), answer: n1(answer) })
        : fill(t, "whereDeal", { deal: n1(deal) });
  return fill(t, "chkPlayBad", { where: <span>{where}</span>, reason: <span>{reasonText(t, f.reason)}</span> });
}

function checkLines(t: T, c: Check): ComponentChildren[][] {
  switch (c.id) {
    case "deals":
      if (c.left !== null && c.ok) return [fill(t, "chkDealsLeft", { count: c.count, expected: c.expected, seat: n1(c.left) })];
      return [fill(t, c.ok ? "chkDealsOk" : "chkDealsBad", { count: c.count, expected: c.expected })];
    case "play":
      return [c.ok ? fill(t, "chkPlayOk", { deals: c.deals, answers: c.answers, cards: c.cards }) : failureText(t, c.failure)];
    case "scores":
      if (c.ok) return [fill(t, "chkScoresOk")];
      return c.bad.map((b) => fill(t, "chkScoresBad", { deal: n1(b.deal), recorded: nums(b.recorded, t), replayed: nums(b.replayed, t) }));
    case "totals":
      return [c.ok ? fill(t, "chkTotalsOk", { totals: nums(c.replayed, t) }) : fill(t, "chkTotalsBad", { recorded: nums(c.recorded, t), replayed: nums(c.replayed, t) })];
    case "ranking":
      return [c.ok ? fill(t, "chkRankingOk", { ranking: nums(c.replayed, t) }) : fill(t, "chkRankingBad", { recorded: nums(c.recorded, t), replayed: nums(c.replayed, t) })];
  }
}

/** `table`: a finished game's id (the lobby's "Verify" link, #/verify/<id>): its record is
 * fetched and checked at once. */
export function VerifyPage({ t, gw, initial, table = "" }: { t: T; gw: Gateway | null; initial: string; table?: string }) {
  const [text, setText] = useState(initial);
  const [tableId, setTableId] = useState(table);
  const [result, setResult] = useState<VerifyResult | null>(null);
  const [error, setError] = useState("");
  // A competition file's check (issue 43), its code and strings loaded with the page.
  const [files, setFiles] = useState<typeof import("./CompetitionCheck") | null>(null);
  useEffect(() => {
    void import("./CompetitionCheck").then(setFiles);
  }, []);
  const check = async (record: string) => {
    const { verifyRecord } = await import("../client/verify"); // with the engine: only when checked
    setResult(await verifyRecord(record));
  };
  useEffect(() => {
    if (initial) void check(initial);
  }, [initial]);
  useEffect(() => {
    if (table && !initial) void load();
  }, [table, gw !== null]);

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
      {files && <files.CompetitionFileCheck t={t} />}
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
  const mark = (ok: boolean) => (ok ? "✔ " : "✘ ");
  return (
    <div class="result" aria-live="polite">
      <p class={`verdict ${r.verified ? "ok" : "bad"}`} data-verdict={r.verified ? "match" : "mismatch"}>
        {r.verified ? `✔ ${t("allOk")}` : `✘ ${t("someBad")}`}
      </p>
      <p data-commitment={r.commitmentMatches ? "match" : "mismatch"}>{r.commitmentMatches ? `✔ ${t("commitmentOk")}` : `✘ ${t("commitmentBad")}`}</p>
      <ul class="checks">
        {r.checks.length === 0 && (
          <li data-check="play" data-status="bad">
            {mark(false)}
            {t("chkPlayHands")}
          </li>
        )}
        {r.checks.map((c) =>
          checkLines(t, c).map((line, i) => (
            <li key={`${c.id}${i}`} data-check={c.id} data-status={c.ok ? "ok" : "bad"}>
              {mark(c.ok)}
              {line}
            </li>
          )),
        )}
      </ul>
      <ul class="deals">
        {r.deals.map((d) => (
          <li key={d.index} data-deal={d.index} data-status={d.status}>
            {d.status === "match"
              ? [mark(true), ...fill(t, "dealOk", { n: d.index + 1 })]
              : [mark(false), ...fill(t, "dealBad", { n: d.index + 1, seats: <bdi>{d.badSeats.map(n1).join(", ")}</bdi> })]}
          </li>
        ))}
      </ul>
    </div>
  );
}
