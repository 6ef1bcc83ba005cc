// Where each seat sits around the felt, and its avatar (issue 39). Pure: no DOM, tested in
// test/look.test.ts.

export type Place = "bottom" | "right" | "top" | "left";

/** The seats around the felt as this player sees them: himself at the bottom, the next to play
 * on his right (play moves to the right, docs/rules.md §1), his partner opposite (seats 0 and
 * 2, 1 and 3 play together in a partnership variant, §2). A spectator sees seat 0 at the
 * bottom. */
export function arrange(mySeat: number): Record<Place, number> {
  const me = mySeat >= 0 && mySeat < 4 ? mySeat : 0;
  return { bottom: me, right: (me + 1) % 4, top: (me + 2) % 4, left: (me + 3) % 4 };
}

/** The place of a seat around the felt, from this player's chair. */
export function placeOf(mySeat: number, seat: number): Place {
  const a = arrange(mySeat);
  return (Object.keys(a) as Place[]).find((p) => a[p] === seat) ?? "bottom";
}

/** Seats 0 and 2, 1 and 3 are partners (§2). */
export function partnerOf(seat: number): number {
  return (seat + 2) % 4;
}

/** Up to two letters for an avatar: the first letters of the first two words ("Sara Ali" ->
 * "SA", "سارة" -> "س"), upper case where the script has one; "?" for no name. */
export function initials(name: string): string {
  const words = name.trim().split(/\s+/u).filter(Boolean);
  const letters = words.slice(0, 2).map((w) => [...w].find((ch) => /[\p{L}\p{N}]/u.test(ch)) ?? "");
  const s = letters.join("").toLocaleUpperCase();
  return s || "?";
}

/** Avatar colours far apart from each other, each dark enough for white initials (WCAG AA). */
export const AVATAR_COLOURS = ["#b91c1c", "#c2410c", "#a16207", "#15803d", "#0f766e", "#0369a1", "#1d4ed8", "#6d28d9", "#a21caf", "#be185d", "#4d7c0f", "#475569"];

/** The avatar's colour from the name: the same name is always the same colour, on every
 * device (FNV-1a over its UTF-16 units, mixed, picks one of AVATAR_COLOURS). */
export function avatarColour(name: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // A final mix: names a letter apart ("Bot 1", "Bot 3") land far apart.
  h = Math.imul(h ^ (h >>> 16), 0x45d9f3b) >>> 0;
  h = (h ^ (h >>> 16)) >>> 0;
  return AVATAR_COLOURS[h % AVATAR_COLOURS.length] ?? "#475569";
}
