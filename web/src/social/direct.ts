// Direct messages between friends in the browser (issue 44): one conversation open at a
// time, its history paged back (the social service keeps a conversation's last 100 lines),
// new lines live from the player's social events, unread counts per friend for the others.
// A direct channel's id is the other player, for both parties (social.proto ChatChannel).
// Pure functions over the social.proto messages; a line id is kept once.
import { ChatChannelKind } from "../gen/trix/v1/social_pb";
import type { ChatLine } from "../gen/trix/v1/social_pb";
import { insert, lineOf } from "./chat";
import type { Line } from "./chat";

export type Conversation = {
  friendId: string;
  name: string;
  lines: Line[];
  /** The token of the next (older) page; "" when there is none. */
  older: string;
  /** The first page came. */
  loaded: boolean;
  /** The last refusal of a send, said under the conversation. */
  refusal: string;
};

export function openConversation(friendId: string, name: string): Conversation {
  return { friendId, name, lines: [], older: "", loaded: false, refusal: "" };
}

/** The friend a direct line is with, or "" when it is no direct line. */
export function directWith(m: ChatLine): string {
  return m.channel?.kind === ChatChannelKind.DIRECT ? m.channel.id : "";
}

/** A live line or one of a page: kept once, in order; another conversation's line is ignored. */
export function receiveDirect(c: Conversation, m: ChatLine): Conversation {
  if (directWith(m) !== c.friendId) return c;
  const lines = insert(c.lines, lineOf(m));
  return lines ? { ...c, lines } : c;
}

/** A page of history (newest first, as the server sends it) and the token of the next one. */
export function pageOf(c: Conversation, page: ChatLine[], older: string): Conversation {
  return { ...page.reduce(receiveDirect, c), older, loaded: true };
}

/** The author's own line the server did not deliver (the friend blocked him, or it was
 * filtered): kept in his view alone, marked. */
export function undeliveredDirect(c: Conversation, me: string, text: string, phraseId: string, nowMs: number): Conversation {
  const line: Line = { lineId: 0n, authorId: me, authorName: "", text, phraseId, sentAtMs: nowMs, undelivered: true };
  return { ...c, lines: insert(c.lines, line) ?? c.lines, refusal: "" };
}

/** The lines shown: a muted player's left out (his view only). */
export function shownDirect(c: Conversation, muted: ReadonlySet<string>): Line[] {
  return c.lines.filter((l) => !muted.has(l.authorId));
}

/** Unread direct lines per friend: one more for a friend's line outside the open conversation. */
export function countUnread(unread: Record<string, number>, m: ChatLine, me: string, open: string): Record<string, number> {
  const friend = directWith(m);
  if (!friend || m.authorId === me || friend === open) return unread;
  return { ...unread, [friend]: (unread[friend] ?? 0) + 1 };
}
