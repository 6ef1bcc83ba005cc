// The table's look (issue 39): where each seat sits from this player's chair, the avatars'
// initials and colours, how long a taken trick stays on the felt, the sounds' notes and the
// card faces' corner labels.
import { describe, expect, it } from "vitest";
import { arrange, AVATAR_COLOURS, avatarColour, initials, partnerOf, placeOf } from "../src/ui/seats";
import { CATCH_UP_MS, COLLECT_MS, HOLD_MS, holdFor, shown, takenKey } from "../src/ui/trick";
import { SOUNDS } from "../src/ui/sound";
import { rankLabel } from "../src/ui/Card";

describe("the seats around the felt", () => {
  it("put me at the bottom, the next to play on my right and my partner opposite, from every seat", () => {
    expect(arrange(0)).toEqual({ bottom: 0, right: 1, top: 2, left: 3 });
    expect(arrange(1)).toEqual({ bottom: 1, right: 2, top: 3, left: 0 });
    expect(arrange(2)).toEqual({ bottom: 2, right: 3, top: 0, left: 1 });
    expect(arrange(3)).toEqual({ bottom: 3, right: 0, top: 1, left: 2 });
    for (const me of [0, 1, 2, 3]) {
      expect(arrange(me).top).toBe(partnerOf(me));
      expect(new Set(Object.values(arrange(me))).size).toBe(4);
      expect(placeOf(me, partnerOf(me))).toBe("top");
      expect(placeOf(me, me)).toBe("bottom");
      expect(placeOf(me, (me + 1) % 4)).toBe("right");
    }
  });
  it("show a spectator seat 0 at the bottom", () => {
    expect(arrange(-1)).toEqual(arrange(0));
    expect(placeOf(-1, 2)).toBe("top");
  });
});

describe("avatars", () => {
  it("take the first letters of the first two words, in any script", () => {
    expect(initials("Sara Ali Hassan")).toBe("SA");
    expect(initials("khalid")).toBe("K");
    expect(initials("سارة")).toBe("س");
    expect(initials("  عبد الله ")).toBe("عا");
    expect(initials("(Reem) 2")).toBe("R2");
    expect(initials("")).toBe("?");
    expect(initials("   ")).toBe("?");
  });
  it("give a name always the same colour, one of the palette's, the three bots three different ones", () => {
    expect(avatarColour("Reem")).toBe(avatarColour("Reem"));
    for (const n of ["Reem", "Khalid", "سارة", "", "Amal"]) expect(AVATAR_COLOURS).toContain(avatarColour(n));
    expect(new Set(["Bot 1", "Bot 2", "Bot 3"].map(avatarColour)).size).toBe(3);
    expect(new Set(["Bot 1", "Bot 2", "Bot 3", "Layla Haddad", "Reem", "Khalid", "Amal", "Badr", "Host", "سارة"].map(avatarColour)).size).toBeGreaterThan(5);
  });
});

describe("a taken trick on the felt", () => {
  const trick = [0, 1, 2, 3].map((seat) => ({ seat, card: seat * 13 + 5 }));
  const last = { cards: trick, taker: 2 };

  it("is held whole for HOLD_MS, then swept to its taker for COLLECT_MS, then the next trick shows", () => {
    const key = takenKey("t1", last);
    const hold = holdFor(takenKey("t1", null), key, last, 10_000, null, 0);
    expect(hold).toEqual({ cards: trick, taker: 2, since: 10_000 });
    const next = [{ seat: 2, card: 40 }];
    expect(shown(next, hold, 10_000)).toEqual({ cards: trick, phase: "hold", taker: 2, next: 10_000 + HOLD_MS });
    expect(shown(next, hold, 10_000 + HOLD_MS - 1).phase).toBe("hold");
    expect(shown(next, hold, 10_000 + HOLD_MS)).toEqual({ cards: trick, phase: "collect", taker: 2, next: 10_000 + HOLD_MS + COLLECT_MS });
    expect(shown(next, hold, 10_000 + HOLD_MS + COLLECT_MS)).toEqual({ cards: next, phase: "play", taker: -1, next: 0 });
    expect(HOLD_MS).toBeGreaterThanOrEqual(900); // ~1 s to see the fourth card (the table sends the take 60 ms after it)
  });
  it("is not held on the first view of a table (a reload, a spectator joining) nor again when a snapshot repeats it", () => {
    const key = takenKey("t1", last);
    expect(holdFor(null, key, last, 5_000, null, 0)).toBeNull();
    const reordered = { cards: [...trick].reverse(), taker: 2 };
    expect(takenKey("t1", reordered)).toBe(key);
    const hold = { ...last, since: 1 };
    expect(holdFor(key, takenKey("t1", reordered), reordered, 5_000, hold, 0)).toBe(hold);
  });
  it("is not held when the deal starts (no last trick) nor for another table's last trick", () => {
    const hold = { ...last, since: 1 };
    expect(holdFor(takenKey("t1", last), takenKey("t1", null), null, 5_000, hold, 0)).toBe(hold);
    expect(holdFor(takenKey("t1", null), takenKey("t2", last), last, 5_000, hold, 0)).toBeNull();
  });
  it("is not held while a table's first events catch up (a spectator's stream replays the game from its start)", () => {
    const key = takenKey("t1", last);
    expect(holdFor(takenKey("t1", null), key, last, 1_000 + CATCH_UP_MS - 1, null, 1_000)).toBeNull();
    expect(holdFor(takenKey("t1", null), key, last, 1_000 + CATCH_UP_MS, null, 1_000)).toEqual({ ...last, since: 1_000 + CATCH_UP_MS });
  });
  it("gives way to the next taken trick at once", () => {
    const first = holdFor(takenKey("t1", null), takenKey("t1", last), last, 5_000, null, 0);
    const other = { cards: trick.map((p) => ({ ...p, card: p.card + 1 })), taker: 0 };
    const second = holdFor(takenKey("t1", last), takenKey("t1", other), other, 5_300, first, 0);
    expect(second).toEqual({ ...other, since: 5_300 });
    expect(shown([], second, 5_300).cards).toEqual(other.cards);
  });
  it("without a hold shows the current trick as it is", () => {
    expect(shown(trick.slice(0, 2), null, 0)).toEqual({ cards: trick.slice(0, 2), phase: "play", taker: -1, next: 0 });
  });
});

describe("the sounds and the card corners", () => {
  it("are four short sounds made of notes", () => {
    expect(Object.keys(SOUNDS).sort()).toEqual(["card", "doubled", "trick", "turn"]);
    for (const notes of Object.values(SOUNDS)) {
      expect(notes.length).toBeGreaterThan(0);
      for (const [at, freq, len, , peak] of notes) {
        expect(at + len).toBeLessThanOrEqual(0.7);
        expect(freq).toBeGreaterThan(100);
        expect(peak).toBeLessThanOrEqual(0.1);
      }
    }
  });
  it("read 2-10, J, Q, K, A", () => {
    expect([0, 8, 9, 10, 11, 12].map(rankLabel)).toEqual(["2", "10", "J", "Q", "K", "A"]);
    expect(rankLabel(13 * 3 + 8)).toBe("10");
  });
});
