// Numbers and names on a page that may run right to left (issue 39): every number the
// interface shows goes through `formatNumber` (Intl.NumberFormat in the page's language) and
// sits in its own left-to-right isolate (`Num`), so -75 never reads "75-" on the Arabic page;
// a name sits in an isolate of its own direction (`Name`), so a Latin name does not reorder
// the Arabic text around it; `fill` does both for the {vars} of a translated line.
import type { ComponentChildren } from "preact";
import type { T } from "./App";
import type { Key, Lang } from "./i18n";

/** Latin digits in both languages: the ones the server, the records and `trix` print; no
 * grouping: a score sheet is written as players write it (-1250, not -1,250). */
const LOCALES: Record<Lang, string> = { ar: "ar-u-nu-latn", en: "en" };
const FORMATS = new Map<Lang, Intl.NumberFormat>();

export function formatNumber(lang: Lang, n: number): string {
  let f = FORMATS.get(lang);
  if (!f) {
    f = new Intl.NumberFormat(LOCALES[lang], { useGrouping: false, maximumFractionDigits: 0 });
    FORMATS.set(lang, f);
  }
  // The direction marks Intl puts before an Arabic minus sign (LRM, ALM) are left out: `Num`'s
  // left-to-right isolate places the sign, and a copied score carries no invisible character.
  return f.format(n).replace(BIDI_MARKS, "");
}

const BIDI_MARKS = /[\u200e\u200f\u061c]/g;

/** A number in a left-to-right isolate, formatted for the page's language. */
export function Num({ lang, n }: { lang: Lang; n: number }) {
  return (
    <bdi class="num" dir="ltr">
      {formatNumber(lang, n)}
    </bdi>
  );
}

/** A name (a player's, a bot's) isolated in its own direction. */
export function Name({ children }: { children: ComponentChildren }) {
  return <bdi class="name-iso">{children}</bdi>;
}

export type Vars = Record<string, ComponentChildren>;

/** A translated line whose {vars} are isolated from the text around them (<bdi>): a number
 * is formatted for the page's language and runs left to right, anything else keeps its own
 * direction. `template` is the translated line with its {holes} left in. */
export function fill(lang: Lang, template: string, vars: Vars = {}): ComponentChildren[] {
  return template.split(/\{(\w+)\}/).map((part, i) => {
    if (i % 2 === 0) return part;
    const v = vars[part];
    if (typeof v === "number") return <Num key={i} lang={lang} n={v} />;
    if (v !== null && typeof v === "object") return v;
    return <bdi key={i}>{v ?? `{${part}}`}</bdi>;
  });
}

/** `t(key)` with its {vars} isolated (see `fill`), in the page's language. */
export function tx(t: T, key: Key, vars: Vars = {}): ComponentChildren[] {
  return fill(t.lang, t(key), vars);
}
