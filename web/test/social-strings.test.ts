// The chat's and friends' strings (issue 44) are complete in both languages: the same keys,
// none empty, the same {placeholders}; the statuses as friends see them.
import { describe, expect, it } from "vitest";
import { ar, en, socialStrings } from "../src/social/strings";

const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe("the social strings", () => {
  it("have the same keys and placeholders in Arabic and English, none empty", () => {
    expect(Object.keys(ar).sort()).toEqual(Object.keys(en).sort());
    for (const k of Object.keys(en) as (keyof typeof en)[]) {
      expect(ar[k].trim(), k).not.toBe("");
      expect(holes(ar[k]), k).toEqual(holes(en[k]));
    }
  });
  it("fill their placeholders in the page's language", () => {
    expect(socialStrings("en")("chatMute", { name: "Reem" })).toBe("Mute Reem");
    expect(socialStrings("ar")("chatMute", { name: "ريم" })).toBe("كتم ريم");
    expect([socialStrings("ar")("inGame"), socialStrings("ar")("inLobby"), socialStrings("ar")("offline")]).toEqual(["في لعبة", "في الردهة", "غير متصل"]);
  });
});
