// Issue 39: on the Arabic page -75 read "75-". Every number goes through one helper
// (Intl.NumberFormat in the page's language, Latin digits, no grouping) and sits in its own
// left-to-right isolate; a name sits in an isolate of its own direction.
import { describe, expect, it } from "vitest";
import type { VNode } from "preact";
import { fill, formatNumber, Name, Num } from "../src/ui/fmt";

/** A component's output (Num, Name are plain functions of their props). */
const draw = (v: unknown): VNode<Record<string, unknown>> => {
  const node = v as VNode<Record<string, unknown>>;
  return typeof node.type === "function" ? draw((node.type as (p: unknown) => unknown)(node.props)) : node;
};
/** Bidi controls Intl adds (LRM, ALM): invisible, they only fix the direction. */
const visible = (s: string) => s.replace(/[\u200e\u200f\u061c]/g, "");

describe("formatNumber, the one number format of the page", () => {
  it("writes a negative score with its minus sign before the digits in both languages", () => {
    for (const lang of ["ar", "en"] as const) {
      expect(visible(formatNumber(lang, -75))).toBe("-75");
      expect(visible(formatNumber(lang, 0))).toBe("0");
      expect(visible(formatNumber(lang, 200))).toBe("200");
    }
    expect(formatNumber("en", -75)).toBe("-75");
  });
  it("keeps Latin digits and no grouping on the Arabic page, as the score sheet and trix print", () => {
    expect(visible(formatNumber("ar", -1250))).toBe("-1250");
    expect(visible(formatNumber("en", -1250))).toBe("-1250");
    expect(formatNumber("ar", 1250)).not.toMatch(/[\u0660-\u0669\u06f0-\u06f9]/);
  });
  it("is Intl.NumberFormat in the page's locale, without the invisible direction marks it adds", () => {
    const intl = new Intl.NumberFormat("ar-u-nu-latn", { useGrouping: false }).format(-75);
    expect(formatNumber("ar", -75)).toBe(visible(intl));
    expect(formatNumber("ar", -75)).toBe("-75"); // the isolate (Num) places the sign
  });
});

describe("the bidi isolation of numbers and names", () => {
  it("puts a number in a left-to-right <bdi>, formatted by the helper", () => {
    const node = draw(Num({ lang: "ar", n: -75 }));
    expect(node.type).toBe("bdi");
    expect(node.props.dir).toBe("ltr");
    expect(node.props.class).toBe("num");
    expect(node.props.children).toBe(formatNumber("ar", -75));
  });
  it("puts a name in a <bdi> of its own direction (no dir: the browser takes it from the name)", () => {
    const node = draw(Name({ children: "Khalid" }));
    expect(node.type).toBe("bdi");
    expect(node.props.dir).toBeUndefined();
    expect(node.props.children).toBe("Khalid");
  });
  it("isolates every {var} of a translated line: numbers left to right, names in a <bdi>", () => {
    const parts = fill("ar", "الفريق {a} + {b}: {n}", { a: "Khalid", b: "ريم", n: -105 });
    expect(parts.filter((p) => typeof p === "string")).toEqual(["الفريق ", " + ", ": ", ""]);
    const [a, b, n] = parts.filter((p) => typeof p !== "string").map(draw);
    expect([a?.type, a?.props.children]).toEqual(["bdi", "Khalid"]);
    expect([b?.type, b?.props.children]).toEqual(["bdi", "ريم"]);
    expect([n?.type, n?.props.dir, n?.props.children]).toEqual(["bdi", "ltr", formatNumber("ar", -105)]);
  });
  it("leaves an unknown {var} visible rather than dropping it", () => {
    const [, hole] = fill("en", "Deal {n}", {}).map((p) => (typeof p === "string" ? p : draw(p)));
    expect((hole as VNode<Record<string, unknown>>).props.children).toBe("{n}");
  });
});
