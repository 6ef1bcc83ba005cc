// The lobby's data (issue 39), without drawing: the public tables being played (the gateway's
// `live_tables` query) as rows to watch, and a finished game of the player's history as a line
// with its date, its opponents and its result. Names only, never ids: a seat shows the name the
// table announced (a bot marked as one), else "Seat n".
import type { Seat } from "../gen/trix/v1/common_pb";
import type { GameSummary, PublicTable } from "../gen/trix/v1/scoring_pb";

/** How often the lobby asks for the tables being played again while it is shown. */
export const LIVE_REFRESH_MS = 10_000;
/** Tables shown, and finished games of the player's shown in the lobby (the History page has them all). */
export const LIVE_SHOWN = 20;
export const RECENT_SHOWN = 5;

/** A seat as the lobby shows it: a name (null: none known, the page writes "Seat n") and a bot mark. */
export type SeatName = { seat: number; name: string | null; bot: boolean };

export function seatNames(seats: readonly Seat[]): SeatName[] {
  return [...seats]
    .sort((a, b) => a.index - b.index)
    .map((s) => ({ seat: s.index, name: s.displayName.trim() || null, bot: s.bot }));
}

/** A table being played, as a row of the lobby; `mySeat`: the player's own seat there (his
 * open game: he goes back to it rather than watch it), -1 when he has none. */
export type LiveRow = { tableId: string; variant: number; deal: number; deals: number; seats: SeatName[]; bots: number; mySeat: number };

/** The rows, the player's own open games first (then the most recently started first). */
export function liveRows(tables: readonly PublicTable[], me = ""): LiveRow[] {
  const rows = tables.map((t) => {
    const seats = seatNames(t.seats);
    const deals = t.dealsTotal;
    const mine = me ? t.seats.find((s) => s.playerId === me && !s.bot) : undefined;
    return {
      tableId: t.tableId,
      variant: t.variant,
      // Past the last deal (its GameEnded not seen yet): the last deal is still the one shown.
      deal: deals > 0 ? Math.min(t.dealNumber, deals) : t.dealNumber,
      deals,
      seats,
      bots: seats.filter((s) => s.bot).length,
      mySeat: mine ? mine.index : -1,
    };
  });
  return [...rows.filter((r) => r.mySeat >= 0), ...rows.filter((r) => r.mySeat < 0)];
}

/** A finished game of the player's, as a line: when it ended, the other three seats, the result. */
export type GameLine = { tableId: string; variant: number; endedMs: number; opponents: SeatName[]; place: number; points: number; partner: SeatName | null };

/** docs/rules.md §2: in a partnership variant the partner sits opposite (seat + 2). */
export function gameLine(g: GameSummary, partnership: boolean): GameLine {
  const seats = seatNames(g.seats);
  const opposite = (g.seat + 2) % 4;
  const partner = partnership ? (seats.find((s) => s.seat === opposite) ?? null) : null;
  return {
    tableId: g.tableId,
    variant: g.variant,
    endedMs: g.endedAt ? Number(g.endedAt.seconds) * 1000 + Math.floor(g.endedAt.nanos / 1e6) : 0,
    opponents: seats.filter((s) => s.seat !== g.seat && s.seat !== partner?.seat),
    place: g.place,
    points: g.totals?.values[g.seat] ?? 0,
    partner,
  };
}

const DATES = new Map<string, Intl.DateTimeFormat>();

/** A date and time in the page's language, Latin digits (as the rest of the page writes numbers). */
export function formatDate(lang: "ar" | "en", ms: number): string {
  let f = DATES.get(lang);
  if (!f) {
    f = new Intl.DateTimeFormat(lang === "ar" ? "ar-u-nu-latn" : "en", { dateStyle: "medium", timeStyle: "short" });
    DATES.set(lang, f);
  }
  return f.format(new Date(ms));
}
