// Both languages are complete: the same keys, none empty, the same {placeholders}; the
// card and contract names as players say them; Arabic when the browser prefers it.
import { describe, expect, it } from "vitest";
import { ar, en, preferredLang, translate } from "../src/ui/i18n";
import { ar as arC, en as enC } from "../src/ui/i18n_competitions";

const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("the interface's two languages", () => {
  it("have exactly the same keys, none empty", () => {
    expect(Object.keys(ar).sort()).toEqual(Object.keys(en).sort());
    for (const [k, v] of [...Object.entries(en), ...Object.entries(ar)]) expect(v.trim(), k).not.toBe("");
  });
  it("have the competitions' strings (loaded with their page) complete in both, with the same placeholders", () => {
    expect(Object.keys(arC).sort()).toEqual(Object.keys(enC).sort());
    for (const [k, v] of [...Object.entries(enC), ...Object.entries(arC)]) expect(v.trim(), k).not.toBe("");
    for (const k of Object.keys(enC) as (keyof typeof enC)[]) expect(holes(arC[k]), k).toEqual(holes(enC[k]));
    for (const v of Object.values(arC)) expect(v).not.toMatch(/روبوت/);
  });
  it("fill the same placeholders in every string", () => {
    for (const k of Object.keys(en) as (keyof typeof en)[]) expect(holes(ar[k]), k).toEqual(holes(en[k]));
  });
  it("name the contracts as players say them", () => {
    expect([ar.cKing, ar.cQueens, ar.cDiamonds, ar.cTricks, ar.cTrix, ar.cComplex]).toEqual(["شيخ الكبة", "البنات", "الديناري", "اللطوش", "تركس", "كمبلكس"]);
    expect(translate("ar", "cardOf", { rank: ar.rank13, suit: ar.suitH })).toBe("شايب كبة");
  });
  it("give each variant one name, say “your kingdom”, one word for the contract and كمبيوتر for bots (issue 39)", () => {
    expect([ar.variantTrix, ar.variantTrixP, ar.variantComplex, ar.variantComplexP]).toEqual(["تركس", "تركس شراكة", "كمبلكس", "كمبلكس شراكة"]);
    expect([ar.kingdomYours, en.kingdomYours]).toEqual(["مملكتك", "Your kingdom"]);
    expect(ar.bot).toBe("كمبيوتر");
    // The contract is العقد wherever the contract is meant; اللعبة is only ever the whole game.
    for (const k of ["contract", "chooseContract", "contractTimer", "rContractPlayed", "rContractVariant", "rContractMissing"] as const) {
      expect(ar[k], k).toMatch(/العقد|عقد/);
      expect(ar[k], k).not.toMatch(/اللعبة|لعبة/);
    }
    for (const v of Object.values(ar)) expect(v).not.toMatch(/روبوت/);
  });
  it("name the sound toggle by what it is, its state apart", () => {
    expect([en.sound, en.soundOn, en.soundOff]).toEqual(["Sound", "on", "off"]);
    expect([ar.sound, ar.soundOn, ar.soundOff]).toEqual(["الصوت", "يعمل", "مكتوم"]);
  });
  it("default to Arabic when the browser prefers it, else English, and keep a choice", () => {
    expect(preferredLang(null, ["ar-SA", "en"])).toBe("ar");
    expect(preferredLang(null, ["fr", "en-US", "ar"])).toBe("en");
    expect(preferredLang(null, [])).toBe("en");
    expect(preferredLang("ar", ["en-US"])).toBe("ar");
  });
});
