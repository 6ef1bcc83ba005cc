// What the trick area shows, and when (issue 39). The table sends the fourth card and the
// trick's taking ~60 ms apart, so the state has the trick empty before the eye saw it full:
// the interface holds the taken trick on the felt for HOLD_MS, then sweeps it to its taker
// for COLLECT_MS, then shows the current trick (the next one's cards may already be there).
// Only the display waits: the state, the hand and the legal cards are never delayed.
import type { Played } from "../client/state";

export const HOLD_MS = 1000;
export const COLLECT_MS = 400;
/** A table's first moments on the screen are a catch-up (a spectator's stream replays the game
 * from its start, a resume replays what it missed): no trick is held then. */
export const CATCH_UP_MS = 1500;

export type Taken = { cards: Played[]; taker: number };
/** A taken trick held on the felt from `since` (ms). */
export type Hold = Taken & { since: number };
export type Shown = {
  cards: Played[];
  /** "play": the current trick; "hold": a taken trick still in place; "collect": going to its taker. */
  phase: "play" | "hold" | "collect";
  taker: number;
  /** When what is shown changes next (ms, for a timer to draw it again); 0: not before the state does. */
  next: number;
};

/** The last trick's identity on a table ("<table>|" for none): the same trick from an event or
 * from a snapshot (a reload, a resume after a gap) has the same key. */
export function takenKey(tableId: string, last: Taken | null): string {
  if (!last || !last.cards.length) return `${tableId}|`;
  return `${tableId}|${last.taker}:${last.cards.map((p) => p.card).sort((a, b) => a - b).join(",")}`;
}

export const tableOf = (key: string): string => key.slice(0, key.lastIndexOf("|"));

/** The hold that starts when the last trick changes from `prevKey` to `key` at `now`: a trick
 * taken while this table was on the screen (since `shownSince`, past its catch-up). None on the
 * first view of a table (a reload, a spectator joining: that trick was taken before), while
 * its events catch up, or when there is no last trick. */
export function holdFor(prevKey: string | null, key: string, last: Taken | null, now: number, current: Hold | null, shownSince: number): Hold | null {
  if (prevKey === null || key === prevKey || !last || key.endsWith("|")) return current;
  if (tableOf(key) !== tableOf(prevKey)) return null; // another table: its first view
  if (now - shownSince < CATCH_UP_MS) return null;
  return { cards: last.cards, taker: last.taker, since: now };
}

/** What the trick area shows at `now`: the held trick, then its sweep, then `trick`. */
export function shown(trick: Played[], hold: Hold | null, now: number): Shown {
  if (hold) {
    const collect = hold.since + HOLD_MS;
    const end = collect + COLLECT_MS;
    if (now < collect) return { cards: hold.cards, phase: "hold", taker: hold.taker, next: collect };
    if (now < end) return { cards: hold.cards, phase: "collect", taker: hold.taker, next: end };
  }
  return { cards: trick, phase: "play", taker: -1, next: 0 };
}
