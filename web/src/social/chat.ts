// The table's chat in the browser (issue 44, docs/rules.md §15): the players' channel and the
// spectators' one kept apart, quick phrases shown in the reader's language, the player's own
// mutes (his view only), reported lines, the unread badge, and what the composer offers:
// quick phrases only to partners while a deal is played under the default `partner_chat`.
// Pure functions over the social.proto messages: the same lines in give the same view out,
// whatever order and however often they were delivered (a line id is kept once).
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { PartnerChat, Variant } from "../gen/trix/v1/common_pb";
import { ChatChannelKind } from "../gen/trix/v1/social_pb";
import type { ChatLine } from "../gen/trix/v1/social_pb";
import type { GameState } from "../client/state";
import { phraseText } from "./phrases";
import type { Lang } from "./phrases";

/** The two channels of a table. */
export type Room = "players" | "spectators";
/** docs/rules.md §15: a channel keeps its last 100 lines; the page keeps no more. */
export const KEPT_LINES = 100;
/** docs/rules.md §15: free text is at most 280 characters. */
export const MAX_TEXT = 280;

export type Line = {
  /** The line's id in its channel; 0 for the author's own line not delivered. */
  lineId: bigint;
  authorId: string;
  authorName: string;
  text: string;
  /** A quick phrase's id, shown in the reader's language; "" for free text. */
  phraseId: string;
  /** A quick phrase's texts as the server sent them (a phrase this page does not know yet). */
  phraseTexts?: { en: string; ar: string };
  sentAtMs: number;
  /** The author's own line the server did not deliver: shown to him alone (he is not told why). */
  undelivered?: boolean;
  /** The page reported it. */
  reported?: boolean;
};

export type Refusal = { kind: "partners" | "spectator" | "tooFast" | "timedOut" | "invalid" | "failed"; message: string; untilMs?: number };

export type ChatState = {
  tableId: string;
  me: string;
  lines: Record<Room, Line[]>;
  /** Players whose lines this page hides (the server keeps the mute; this is its view). */
  muted: Set<string>;
  /** A player's setting (docs/rules.md §15): whether he reads the spectators' channel. */
  showSpectators: boolean;
  /** This page watches the table: it reads (and writes in) the spectators' channel always. */
  spectator: boolean;
  /** Whether the panel is open (lines arriving while it is closed count as unread). */
  open: boolean;
  unread: number;
  /** The server's last refusal, said in the panel until the next line goes. */
  refusal: Refusal | null;
  /** Timed out of chat until then (ms since the epoch; 0: not). */
  timedOutUntilMs: number;
};

export function emptyChat(tableId: string, me: string, showSpectators = false, spectator = false): ChatState {
  return { tableId, me, lines: { players: [], spectators: [] }, muted: new Set(), showSpectators, spectator, open: false, unread: 0, refusal: null, timedOutUntilMs: 0 };
}

export function roomOf(kind: ChatChannelKind): Room | null {
  if (kind === ChatChannelKind.TABLE_PLAYERS) return "players";
  if (kind === ChatChannelKind.TABLE_SPECTATORS) return "spectators";
  return null;
}

export function kindOf(room: Room): ChatChannelKind {
  return room === "players" ? ChatChannelKind.TABLE_PLAYERS : ChatChannelKind.TABLE_SPECTATORS;
}

export function lineOf(m: ChatLine): Line {
  const c = m.content;
  return {
    lineId: m.lineId,
    authorId: m.authorId,
    authorName: m.authorName,
    text: c.case === "text" ? c.value : "",
    phraseId: c.case === "phrase" ? c.value.id : "",
    ...(c.case === "phrase" ? { phraseTexts: { en: c.value.textEn, ar: c.value.textAr } } : {}),
    sentAtMs: m.sentAt ? timestampMs(m.sentAt) : 0,
  };
}

/** Whether the page reads a room: the players' always, the spectators' when watching or when
 * the player's setting says so. */
export function reads(s: ChatState, room: Room): boolean {
  return room === "players" || s.spectator || s.showSpectators;
}

/** Whether a line counts for the badge: someone else's, not muted, in a channel read. */
function counts(s: ChatState, room: Room, line: Line): boolean {
  return line.authorId !== s.me && !s.muted.has(line.authorId) && reads(s, room);
}

export function insert(list: Line[], line: Line): Line[] | null {
  if (line.lineId > 0n && list.some((x) => x.lineId === line.lineId)) return null;
  const out = [...list, line].sort((a, b) => (a.lineId === 0n || b.lineId === 0n ? a.sentAtMs - b.sentAtMs : a.lineId < b.lineId ? -1 : 1));
  return out.slice(-KEPT_LINES);
}

/** A line from the server (a session event or a page of history), for this table's channels only. */
export function receive(s: ChatState, m: ChatLine): ChatState {
  const room = m.channel ? roomOf(m.channel.kind) : null;
  if (!room || m.channel?.id !== s.tableId) return s;
  const line = lineOf(m);
  const lines = insert(s.lines[room], line);
  if (!lines) return s;
  const unread = !s.open && counts(s, room, line) ? s.unread + 1 : s.unread;
  return { ...s, lines: { ...s.lines, [room]: lines }, unread };
}

/** A page of history (newest first, as the server sends it): never counted as unread. */
export function history(s: ChatState, page: ChatLine[]): ChatState {
  const { unread } = s;
  return { ...page.reduce(receive, s), unread };
}

/** The author's own line the server did not deliver: kept in his view alone. */
export function undelivered(s: ChatState, room: Room, text: string, phraseId: string, nowMs: number): ChatState {
  const line: Line = { lineId: 0n, authorId: s.me, authorName: "", text, phraseId, sentAtMs: nowMs, undelivered: true };
  return { ...s, lines: { ...s.lines, [room]: insert(s.lines[room], line) ?? s.lines[room] }, refusal: null };
}

/** The lines a room shows: muted players' left out; the spectators' room only if read. */
export function visible(s: ChatState, room: Room): Line[] {
  if (!reads(s, room)) return [];
  return s.lines[room].filter((l) => !s.muted.has(l.authorId));
}

export function setOpen(s: ChatState, open: boolean): ChatState {
  return { ...s, open, unread: open ? 0 : s.unread };
}

export function setMuted(s: ChatState, playerId: string, muted: boolean): ChatState {
  const next = new Set(s.muted);
  if (muted) next.add(playerId);
  else next.delete(playerId);
  return { ...s, muted: next };
}

export function setShowSpectators(s: ChatState, show: boolean): ChatState {
  return { ...s, showSpectators: show };
}

export function markReported(s: ChatState, room: Room, lineId: bigint): ChatState {
  return { ...s, lines: { ...s.lines, [room]: s.lines[room].map((l) => (l.lineId === lineId ? { ...l, reported: true } : l)) } };
}

/** What the reader is shown: free text as written, a quick phrase in his language. */
export function lineText(line: Line, lang: Lang): string {
  if (!line.phraseId) return line.text;
  const known = phraseText(line.phraseId, lang);
  if (known) return known;
  return (lang === "ar" ? line.phraseTexts?.ar : line.phraseTexts?.en) || line.phraseTexts?.en || line.phraseId;
}

const PARTNERSHIP = new Set([Variant.TRIX_PARTNERSHIP, Variant.COMPLEX_PARTNERSHIP]);

/** Whether a deal is being played: dealt and not scored yet (docs/rules.md §15 "from the deal
 * until it is scored"). */
export function dealInPlay(g: GameState): boolean {
  if (g.finished || g.sequence === 0n) return false;
  if (g.deals.some((d) => d.dealIndex === g.dealIndex)) return false;
  return g.hand.length > 0 || g.handSizes.some((n) => n > 0);
}

export type Composer = {
  /** The channel this page writes in: a seated player the players', a spectator the spectators'. */
  room: Room;
  /** Whether free text is offered (else quick phrases only, `why` says so). */
  freeText: boolean;
  why: "" | "partners";
};

/** docs/rules.md §15: what the page offers. The server decides: a refusal is shown as such. */
export function composer(g: GameState, spectator: boolean): Composer {
  if (spectator || g.seat < 0) return { room: "spectators", freeText: true, why: "" };
  const partnerChat = g.options?.partnerChat ?? PartnerChat.UNSPECIFIED;
  const phrasesOnly = PARTNERSHIP.has(g.variant) && partnerChat !== PartnerChat.FREE_TEXT && dealInPlay(g);
  return { room: "players", freeText: !phrasesOnly, why: phrasesOnly ? "partners" : "" };
}

/** The retry delay a RESOURCE_EXHAUSTED carries (`retry-after` seconds, or "retry in N s"). */
function retrySeconds(e: ConnectError): number {
  const header = Number(e.metadata.get("retry-after") ?? "");
  if (header > 0) return header;
  const m = /(\d+(?:\.\d+)?)\s*s\b/.exec(e.rawMessage);
  return m ? Math.ceil(Number(m[1])) : 0;
}

/** A SendChat failure as the panel says it, with the server's own message kept. */
export function refusalOf(err: unknown, nowMs: number): Refusal {
  const e = ConnectError.from(err);
  const message = e.rawMessage;
  if (e.code === Code.PermissionDenied) return { kind: /spectat/i.test(message) ? "spectator" : "partners", message };
  if (e.code === Code.ResourceExhausted) {
    const s = retrySeconds(e);
    const timedOut = /time(d)? ?out/i.test(message);
    return { kind: timedOut ? "timedOut" : "tooFast", message, ...(s ? { untilMs: nowMs + s * 1000 } : {}) };
  }
  if (e.code === Code.InvalidArgument) return { kind: "invalid", message };
  return { kind: "failed", message: message || Code[e.code] };
}

export function refused(s: ChatState, r: Refusal): ChatState {
  return { ...s, refusal: r, timedOutUntilMs: r.kind === "timedOut" && r.untilMs ? r.untilMs : s.timedOutUntilMs };
}

export function timedOut(s: ChatState, untilMs: number): ChatState {
  return { ...s, timedOutUntilMs: untilMs, refusal: { kind: "timedOut", message: "", untilMs } };
}

/** The seat names of the table's players, for "mute" and "report" labels of the lines. */
export function authorLabel(line: Line, me: string, you: string): string {
  return line.authorId === me ? you : line.authorName || line.authorId;
}
