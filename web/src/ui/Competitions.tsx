// The Competitions tab (issue 43), loaded when it is opened (the first load keeps its budget):
// the listed competitions, open, being played and finished, each with its fee, prize, entrants
// of the capacity and start; register and leave (the refund rule shown: half back before the
// start); create one with the main options. One competition's page is ./CompetitionPage.
import { create } from "@bufbuild/protobuf";
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import { Variant } from "../gen/trix/v1/common_pb";
import { Admission, CompetitionFormat, CompetitionOptionsSchema, CompetitionSpeed, SeatingOrder, Visibility } from "../gen/trix/v1/competitions_pb";
import type { Competition } from "../gen/trix/v1/competitions_pb";
import type { Gateway } from "../client/api";
import { competitionRow, sections } from "../client/competitions";
import type { CompetitionRow } from "../client/competitions";
import type { T } from "./App";
import { VARIANT_KEYS } from "./i18n";
import type { Key } from "./i18n";
import type { CKey } from "./i18n_competitions";
import { formatNumber } from "./fmt";
import { VariantOptions } from "./Lobby";
import { cStrings, Facts } from "./competitionText";
import type { C } from "./competitionText";
import "./competitions.css";

export { CompetitionPage } from "./CompetitionPage";

/** How often the tab asks for the listed competitions again while it is shown. */
const LIST_REFRESH_MS = 5000;

type TabProps = { t: T; gw: Gateway; me: string; opened: (id: string) => void };

export function CompetitionsTab({ t, gw, me, opened }: TabProps) {
  const c = cStrings(t);
  const [list, setList] = useState<Competition[] | null>(null);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  /** An action's refusal, shown until the next action (null: clear it). */
  const fail = (e: unknown) => setError(e === null ? "" : t("error", { message: ConnectError.from(e).rawMessage }));
  const load = () =>
    gw
      .listCompetitions({ limit: 100 })
      .then((r) => setList(r.competitions))
      .catch(fail);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), LIST_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  const now = Date.now();
  const rows = (list ?? []).map((x) => competitionRow(x, me, now));
  const s = sections(rows);
  const enter = async (r: CompetitionRow) => {
    setNote("");
    setError("");
    try {
      await gw.enterCompetition({ competitionId: r.id });
      setNote(c.s("registered"));
      opened(r.id);
    } catch (e) {
      fail(e);
    }
    void load();
  };
  const leave = async (r: CompetitionRow) => {
    setNote("");
    setError("");
    try {
      const back = await gw.withdrawFromCompetition({ competitionId: r.id });
      setNote(c.s("leaveDone", { n: Number(back.refund) }));
    } catch (e) {
      fail(e);
    }
    void load();
  };
  const section = (key: CKey, list: CompetitionRow[]) => (
    <section class="card-box comp-list" aria-labelledby={`comp-${key}`} data-section={key}>
      <h2 id={`comp-${key}`}>{c.s(key)}</h2>
      {list.length === 0 && <p class="note">{c.s("none")}</p>}
      <ul>
        {list.map((r) => (
          <li key={r.id} data-competition={r.id} data-stage={r.stage}>
            <div class="row">
              <strong>
                <a href={`#/competitions/${encodeURIComponent(r.id)}`}>{t(VARIANT_KEYS[r.variant] as Key)}</a>
              </strong>
              <span class="tag" data-stage-tag={r.stage}>
                {c.s(`stage_${r.stage}` as CKey)}
              </span>
              {r.organiser && <span class="tag">{c.s("organiserTag")}</span>}
            </div>
            <Facts c={c} r={r} />
            <div class="row actions">
              {r.canRegister && (
                <button type="button" class="primary" data-action="register" onClick={() => void enter(r)}>
                  {r.fee ? c.s("registerFor", { fee: c.s("coins", { n: r.fee }) }) : c.s("register")}
                </button>
              )}
              {r.canLeave && (
                <button type="button" data-action="leave" onClick={() => void leave(r)}>
                  {c.s("leave")}
                </button>
              )}
              <a class="button" href={`#/competitions/${encodeURIComponent(r.id)}`} data-open={r.id}>
                {c.s("openPage")}
              </a>
            </div>
            {r.canLeave && r.fee > 0 && <p class="note">{c("leaveRule", { n: r.refund })}</p>}
          </li>
        ))}
      </ul>
    </section>
  );
  return (
    <div class="competitions" aria-busy={list === null}>
      <section class="card-box">
        <div class="row">
          <h1>{c.s("title")}</h1>
          <button type="button" class="small" data-action="refresh-competitions" onClick={() => void load()}>
            {c.s("refresh")}
          </button>
        </div>
        <p>{c.s("intro")}</p>
        <p class="note" data-refund-rule="1">
          {c.s("refundRule")}
        </p>
        {error && <p role="alert">{error}</p>}
        {note && <p role="status">{note}</p>}
        <CreateForm c={c} gw={gw} created={(id) => (void load(), opened(id))} fail={fail} />
      </section>
      {section("open", s.open)}
      {section("running", s.running)}
      {section("finished", s.finished)}
    </div>
  );
}

const START_CHOICES_MIN = [1, 2, 5, 10, 30, 60, 1440];
const POOLS = [[100], [60, 40], [50, 30, 20]];
const PARTNERSHIP = new Set([Variant.TRIX_PARTNERSHIP, Variant.COMPLEX_PARTNERSHIP]);

function randomId(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** The main options of a new competition (the rest: the rules' defaults); the service
 * validates each and names the first bad one. */
function CreateForm({ c, gw, created, fail }: { c: C; gw: Gateway; created: (id: string) => void; fail: (e: unknown) => void }) {
  const t = c.t;
  const [f, setF] = useState({ variant: Variant.TRIX, points: false, rounds: 1, capacity: 16, startMin: 5, fee: 0, pool: -1, fixed: "", speed: CompetitionSpeed.NORMAL, approval: false, rating: false, botFill: true, chat: true, private: false });
  const [busy, setBusy] = useState(false);
  const set = (p: Partial<typeof f>) => setF({ ...f, ...p });
  // docs/adr/0026: a knockout of 1-4 rounds seats 4, 16, 64, 256 (partnership 4, 8, 16, 32).
  const knockoutCap = PARTNERSHIP.has(f.variant) ? 2 ** (f.rounds + 1) : 4 ** f.rounds;
  const capacity = f.points ? f.capacity : knockoutCap;
  const submit = async () => {
    setBusy(true);
    fail(null);
    try {
      const startsAt = Date.now() + f.startMin * 60_000;
      const fixed = f.fixed
        .split(/[,،\s]+/)
        .filter(Boolean)
        .map((x) => BigInt(Math.max(0, Math.floor(Number(x) || 0))));
      const options = create(CompetitionOptionsSchema, {
        variant: f.variant,
        format: f.points ? CompetitionFormat.POINTS : CompetitionFormat.KNOCKOUT,
        rounds: f.rounds,
        capacity,
        startsAtMs: BigInt(startsAt),
        registrationClosesAtMs: BigInt(startsAt),
        entryFee: BigInt(Math.max(0, Math.floor(f.fee))),
        speed: f.speed,
        admission: f.approval ? Admission.APPROVAL : Admission.AUTO,
        seating: f.rating ? SeatingOrder.RATING : SeatingOrder.RANDOM,
        botFill: f.botFill,
        chat: f.chat,
        visibility: f.private ? Visibility.PRIVATE : Visibility.LISTED,
        // No prize (-1), shares of the pool, or fixed coins per place.
        prize: f.pool < 0 ? { case: undefined } : f.pool < POOLS.length ? { case: "pool", value: { sharesPercent: POOLS[f.pool] ?? [100] } } : { case: "fixed", value: { coins: fixed } },
      });
      const r = await gw.organiseCompetition({ options, requestId: randomId() });
      if (r.competition) created(r.competition.competitionId);
    } catch (e) {
      fail(e);
    } finally {
      setBusy(false);
    }
  };
  const check = (key: "approval" | "rating" | "botFill" | "chat" | "private", label: CKey) => (
    <label>
      <input type="checkbox" name={key} checked={f[key]} onChange={(e) => set({ [key]: e.currentTarget.checked })} /> {c.s(label)}
    </label>
  );
  return (
    <details class="create-competition">
      <summary>{c.s("create")}</summary>
      <form
        class="create-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label>
          {t("variant")}{" "}
          <select name="variant" value={String(f.variant)} onChange={(e) => set({ variant: Number(e.currentTarget.value) as Variant })}>
            <VariantOptions t={t} />
          </select>
        </label>
        <label>
          {c.s("format")}{" "}
          <select name="format" value={f.points ? "points" : "knockout"} onChange={(e) => set({ points: e.currentTarget.value === "points" })}>
            <option value="knockout">{c.s("knockout")}</option>
            <option value="points">{c.s("points")}</option>
          </select>
        </label>
        <label>
          {c.s("rounds")}{" "}
          <select name="rounds" value={String(f.rounds)} onChange={(e) => set({ rounds: Number(e.currentTarget.value) })}>
            {[1, 2, 3, 4].map((n) => (
              <option key={n} value={String(n)}>
                {formatNumber(t.lang, n)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {c.s("capacity")}{" "}
          {f.points ? (
            <select name="capacity" value={String(f.capacity)} onChange={(e) => set({ capacity: Number(e.currentTarget.value) })}>
              {[4, 8, 12, 16, 32, 64, 128, 256].map((n) => (
                <option key={n} value={String(n)}>
                  {formatNumber(t.lang, n)}
                </option>
              ))}
            </select>
          ) : (
            <output name="capacity" data-capacity={capacity}>
              <bdi dir="ltr">{formatNumber(t.lang, capacity)}</bdi>
            </output>
          )}
        </label>
        <label>
          {c.s("startIn")}{" "}
          <select name="start" value={String(f.startMin)} onChange={(e) => set({ startMin: Number(e.currentTarget.value) })}>
            {START_CHOICES_MIN.map((m) => (
              <option key={m} value={String(m)}>
                {m === 1440 ? c.s("tomorrow") : c.s("minutes", { n: m })}
              </option>
            ))}
          </select>
        </label>
        <label>
          {c.s("fee")}{" "}
          <input name="fee" type="number" min={0} step={1} dir="ltr" value={String(f.fee)} onInput={(e) => set({ fee: Number(e.currentTarget.value) || 0 })} />
        </label>
        <label>
          {c.s("prizeKind")}{" "}
          <select name="prize" value={String(f.pool)} onChange={(e) => set({ pool: Number(e.currentTarget.value) })}>
            <option value="-1">{c.s("noPrize")}</option>
            {POOLS.map((p, i) => (
              <option key={i} value={String(i)}>
                {c.s("prizePoolOpt", { shares: p.map((x) => formatNumber(t.lang, x)).join(" / ") })}
              </option>
            ))}
            <option value={String(POOLS.length)}>{c.s("prizeFixedOpt")}</option>
          </select>
        </label>
        {f.pool >= POOLS.length && (
          <label>
            {c.s("fixedCoins")} <input name="fixed" dir="ltr" value={f.fixed} onInput={(e) => set({ fixed: e.currentTarget.value })} />
          </label>
        )}
        <label>
          {c.s("speed")}{" "}
          <select name="speed" value={String(f.speed)} onChange={(e) => set({ speed: Number(e.currentTarget.value) as CompetitionSpeed })}>
            <option value={String(CompetitionSpeed.NORMAL)}>{c.s("speedNormal")}</option>
            <option value={String(CompetitionSpeed.FAST)}>{c.s("speedFast")}</option>
            <option value={String(CompetitionSpeed.SLOW)}>{c.s("speedSlow")}</option>
          </select>
        </label>
        {check("approval", "approval")}
        {check("rating", "ratingSeating")}
        {check("botFill", "botFill")}
        {check("chat", "chat")}
        {check("private", "private")}
        <button type="submit" class="primary" data-action="create-competition" disabled={busy}>
          {c.s("createGo")}
        </button>
      </form>
    </details>
  );
}
