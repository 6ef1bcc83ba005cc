// Both languages are complete: the same keys, none empty, the same {placeholders}; the
// card and contract names as players say them; Arabic when the browser prefers it.
import { describe, expect, it } from "vitest";
import { ar, en, preferredLang, translate } from "../src/ui/i18n";

const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("the interface's two languages", () => {
  it("have exactly the same keys, none empty", () => {
    expect(Object.keys(ar).sort()).toEqual(Object.keys(en).sort());
    for (const [k, v] of [...Object.entries(en), ...Object.entries(ar)]) expect(v.trim(), k).not.toBe("");
  });
  it("fill the same placeholders in every string", () => {
    for (const k of Object.keys(en) as (keyof typeof en)[]) expect(holes(ar[k]), k).toEqual(holes(en[k]));
  });
  it("name the contracts as players say them", () => {
    expect([ar.cKing, ar.cQueens, ar.cDiamonds, ar.cTricks, ar.cTrix, ar.cComplex]).toEqual(["شيخ الكبة", "البنات", "الديناري", "اللطوش", "تركس", "كمبلكس"]);
    expect(translate("ar", "cardOf", { rank: ar.rank13, suit: ar.suitH })).toBe("شايب كبة");
  });
  it("default to Arabic when the browser prefers it, else English, and keep a choice", () => {
    expect(preferredLang(null, ["ar-SA", "en"])).toBe("ar");
    expect(preferredLang(null, ["fr", "en-US", "ar"])).toBe("en");
    expect(preferredLang(null, [])).toBe("en");
    expect(preferredLang("ar", ["en-US"])).toBe("ar");
  });
});
