// The competitions' strings (./i18n_competitions, loaded with this code) and the facts of a
// competition as the tab and its page show them (issue 43).
import type { ComponentChildren } from "preact";
import type { CompetitionRow, PrizeView } from "../client/competitions";
import { formatDate } from "../client/lobby";
import type { T } from "./App";
import { VARIANT_KEYS } from "./i18n";
import type { Key } from "./i18n";
import { CDICTS } from "./i18n_competitions";
import type { CKey } from "./i18n_competitions";
import { fill, formatNumber } from "./fmt";
import type { Vars } from "./fmt";

/** The competitions' strings: plain (`c.s`) or with their {vars} isolated (`c`). */
export type C = ((key: CKey, vars?: Vars) => ComponentChildren[]) & { s: (key: CKey, vars?: Record<string, string | number>) => string; t: T };

export function cStrings(t: T): C {
  const dict = CDICTS[t.lang];
  const s = (key: CKey, vars: Record<string, string | number> = {}) =>
    dict[key].replace(/\{(\w+)\}/g, (_, k: string) => (typeof vars[k] === "number" ? formatNumber(t.lang, vars[k]) : String(vars[k] ?? `{${k}}`)));
  return Object.assign((key: CKey, vars: Vars = {}) => fill(t.lang, dict[key], vars), { s, t });
}

export function PrizeText({ c, p }: { c: C; p: PrizeView }) {
  if (p.kind === "none") return <>{c.s("noPrize")}</>;
  const coins = p.coins.map((n) => formatNumber(c.t.lang, n)).join(" / ");
  return <>{p.kind === "pool" ? c("prizePool", { coins: <bdi dir="ltr">{coins}</bdi>, fee: p.houseFee }) : c("prizeFixed", { coins: <bdi dir="ltr">{coins}</bdi> })}</>;
}

/** One competition's facts: variant, format, fee, prize, entrants, start, stage. */
export function Facts({ c, r }: { c: C; r: CompetitionRow }) {
  return (
    <dl class="facts">
      <dt>{c.t("variant")}</dt>
      <dd>
        {c.t(VARIANT_KEYS[r.variant] as Key)} · {c.s(r.format)} · {r.rounds === 1 ? c.s("round1") : r.rounds === 2 ? c.s("round2") : c("roundsN", { n: r.rounds })}
      </dd>
      <dt>{c.s("fee")}</dt>
      <dd data-fee={r.fee}>{r.fee ? c("coins", { n: r.fee }) : c.s("free")}</dd>
      <dt>{c.s("prize")}</dt>
      <dd>
        <PrizeText c={c} p={r.prize} />
      </dd>
      <dt>{c.s("entrants")}</dt>
      <dd data-entrants={r.entrants}>{c("entrantsOf", { n: r.entrants, cap: r.capacity })}</dd>
      <dt>{c.s("starts")}</dt>
      <dd>
        <time dateTime={new Date(r.startsAtMs).toISOString()}>
          <bdi>{formatDate(c.t.lang, r.startsAtMs)}</bdi>
        </time>
      </dd>
    </dl>
  );
}

