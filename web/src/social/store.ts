// The player's social state in the page (issue 44): one per signed-in player, shared by the
// chat panel and the friends panel. It follows the player's social events (chat lines,
// requests, presence, invitations; resumed with a backoff when the stream ends, like the
// table's events), asks the friends list and a table's history, and calls the gateway's
// social RPCs; the view-models (./chat, ./friends) say what the panels show.
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { ChatChannelKind, ChatChannelSchema, FriendState, InviteKind } from "../gen/trix/v1/social_pb";
import type { SocialEvent, SocialService } from "../gen/trix/v1/social_pb";
import * as chat from "./chat";
import type { ChatState, Room } from "./chat";
import * as dm from "./direct";
import type { Conversation } from "./direct";
import * as fr from "./friends";
import type { FriendsState } from "./friends";

/** The calls the page makes: the gateway's social RPCs (the same requests as SocialService's;
 * the player is the caller's token). */
export type SocialCalls = Pick<
  Client<typeof SocialService>,
  "sendChat" | "listChatHistory" | "requestFriend" | "answerFriendRequest" | "removeFriend" | "setBlocked" | "listFriends" | "sendInvite" | "setMuted" | "reportLine"
>;
export interface SocialApi extends SocialCalls {
  /** A seated player's setting (docs/rules.md §15): the gateway sends him the table's
   * spectators' lines live (on) or stops. */
  setSpectatorChat(tableId: string, on: boolean): Promise<unknown>;
  /** The player's social events, from now on, until `signal` aborts or the stream ends. */
  events(signal: AbortSignal): AsyncIterable<SocialEvent>;
}

/** Lines per page of a direct conversation's history. */
const DIRECT_PAGE = 30;

const SHOW_SPECTATORS_KEY = "trix.chat.spectators";
const setting = {
  get: (): boolean => {
    try {
      return localStorage.getItem(SHOW_SPECTATORS_KEY) === "1";
    } catch {
      return false;
    }
  },
  set: (v: boolean): void => {
    try {
      localStorage.setItem(SHOW_SPECTATORS_KEY, v ? "1" : "0");
    } catch {
      /* private mode */
    }
  },
};

export class SocialStore {
  chat: ChatState | null = null;
  friends: FriendsState = fr.emptyFriends();
  /** The last failure of a friends call, said in the friends panel. */
  friendsError = "";
  /** The players this player muted (his view only), from the server's list at start. */
  muted = new Set<string>();
  /** The open direct conversation, and unread direct lines per friend. */
  direct: Conversation | null = null;
  directUnread: Record<string, number> = {};
  private listeners = new Set<() => void>();
  private stop = new AbortController();
  private clientLine = 0;

  constructor(
    readonly api: SocialApi,
    readonly me: string,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(): void {
    for (const fn of this.listeners) fn();
  }

  private setChat(c: ChatState): void {
    this.chat = c;
    this.emit();
  }

  /** Follow the events and ask the list; until close(). */
  start(): void {
    void this.follow();
    void this.refreshFriends();
  }

  close(): void {
    this.stop.abort();
  }

  private async follow(): Promise<void> {
    let delay = 500;
    while (!this.stop.signal.aborted) {
      try {
        for await (const e of this.api.events(this.stop.signal)) {
          this.apply(e);
          delay = 500;
        }
      } catch {
        /* the stream broke: resumed below */
      }
      if (this.stop.signal.aborted) return;
      await this.sleep(delay);
      delay = Math.min(delay * 2, 8000);
      // What was missed while away: the list, the table's lines and the conversation's; the
      // setting again (a new stream may be on another gateway).
      await this.refreshFriends();
      if (this.chat) await this.loadHistory(this.chat.tableId);
      this.tellSpectatorSetting();
      if (this.direct) await this.loadDirect(this.direct.friendId, "");
    }
  }

  apply(e: SocialEvent): void {
    const ev = e.event;
    if (ev.case === "chatLine") {
      if (dm.directWith(ev.value)) {
        if (this.direct) this.direct = dm.receiveDirect(this.direct, ev.value);
        this.directUnread = dm.countUnread(this.directUnread, ev.value, this.me, this.direct?.friendId ?? "");
        this.emit();
      } else if (this.chat) this.setChat(chat.receive(this.chat, ev.value));
      return;
    }
    if (ev.case === "chatTimedOut" && this.chat && ev.value.until) this.chat = chat.timedOut(this.chat, Number(ev.value.until.seconds) * 1000);
    this.friends = fr.applyEvent(this.friends, e, Date.now());
    this.emit();
  }

  async refreshFriends(): Promise<void> {
    try {
      const all = [];
      let pageToken = "";
      let muted: string[] = [];
      do {
        const r = await this.api.listFriends({ pageToken });
        all.push(...r.friends);
        if (!pageToken) muted = r.mutedPlayerIds; // all of them, on the first page
        pageToken = r.nextPageToken;
      } while (pageToken);
      this.friends = fr.fromList(this.friends, all);
      this.muted = new Set(muted);
      if (this.chat) this.chat = { ...this.chat, muted: new Set(muted) };
      this.friendsError = "";
    } catch (err) {
      this.friendsError = chat.refusalOf(err, 0).message;
    }
    this.emit();
  }

  /** The chat of a table (players' channel, and the spectators' one): its recent lines. */
  openTable(tableId: string, spectator = false): void {
    if (this.chat?.tableId === tableId && this.chat.spectator === spectator) return;
    this.setChat({ ...chat.emptyChat(tableId, this.me, setting.get(), spectator), muted: new Set(this.muted) });
    void this.loadHistory(tableId);
    this.tellSpectatorSetting();
  }

  /** A seated player's setting to the gateway, which then sends the spectators' lines live. */
  private tellSpectatorSetting(): void {
    const c = this.chat;
    if (c && !c.spectator && c.showSpectators) void this.api.setSpectatorChat(c.tableId, true).catch(() => undefined);
  }

  private async loadHistory(tableId: string, rooms: Room[] = ["players", "spectators"]): Promise<void> {
    for (const room of rooms) {
      try {
        const r = await this.api.listChatHistory({ channel: create(ChatChannelSchema, { kind: chat.kindOf(room), id: tableId }) });
        if (this.chat?.tableId === tableId) this.setChat(chat.history(this.chat, r.lines));
      } catch {
        /* a channel this player may not read (a spectator's setting is the server's too) */
      }
    }
  }

  setOpen(open: boolean): void {
    if (this.chat) this.setChat(chat.setOpen(this.chat, open));
  }

  /** A player's setting: read the spectators' channel too (its lines so far fetched at once). */
  showSpectators(show: boolean): void {
    setting.set(show);
    if (!this.chat) return;
    this.setChat(chat.setShowSpectators(this.chat, show));
    if (!this.chat.spectator) void this.api.setSpectatorChat(this.chat.tableId, show).catch(() => undefined);
    if (show) void this.loadHistory(this.chat.tableId, ["spectators"]);
  }

  /** Sends free text or a quick phrase; a refusal is said in the panel, an undelivered line
   * stays in the author's view alone. True when the server took it. */
  async send(room: Room, content: { text: string } | { phraseId: string }): Promise<boolean> {
    const c = this.chat;
    if (!c) return false;
    this.clientLine += 1;
    const clientLineId = `${Date.now().toString(36)}-${this.clientLine}`;
    try {
      const r = await this.api.sendChat({
        channel: { kind: chat.kindOf(room), id: c.tableId },
        content: "text" in content ? { case: "text", value: content.text } : { case: "phraseId", value: content.phraseId },
        clientLineId,
      });
      if (!r.delivered && this.chat) {
        const text = "text" in content ? content.text : "";
        this.setChat(chat.undelivered(this.chat, room, text, "phraseId" in content ? content.phraseId : "", Date.now()));
      } else if (this.chat?.refusal) this.setChat({ ...this.chat, refusal: null });
      return true;
    } catch (err) {
      if (this.chat) this.setChat(chat.refused(this.chat, chat.refusalOf(err, Date.now())));
      return false;
    }
  }

  async mute(playerId: string, muted: boolean): Promise<void> {
    this.muted = new Set(this.muted);
    if (muted) this.muted.add(playerId);
    else this.muted.delete(playerId);
    if (this.chat) this.setChat(chat.setMuted(this.chat, playerId, muted)); // the page's view at once
    await this.api.setMuted({ playerId, muted }).catch(() => undefined);
  }

  async report(room: Room, lineId: bigint, reason: string): Promise<void> {
    const c = this.chat;
    if (!c) return;
    await this.api.reportLine({ channel: { kind: chat.kindOf(room), id: c.tableId }, lineId, reason });
    if (this.chat) this.setChat(chat.markReported(this.chat, room, lineId));
  }

  /** Opens the conversation with a friend: its newest page, then his lines live. */
  openDirect(friendId: string, name: string): void {
    if (this.direct?.friendId !== friendId) this.direct = dm.openConversation(friendId, name);
    this.directUnread = { ...this.directUnread, [friendId]: 0 };
    this.emit();
    void this.loadDirect(friendId, "");
  }

  closeDirect(): void {
    this.direct = null;
    this.emit();
  }

  /** The conversation's next older page. */
  olderDirect(): Promise<void> {
    return this.direct?.older ? this.loadDirect(this.direct.friendId, this.direct.older) : Promise.resolve();
  }

  private async loadDirect(friendId: string, pageToken: string): Promise<void> {
    try {
      const channel = create(ChatChannelSchema, { kind: ChatChannelKind.DIRECT, id: friendId });
      const r = await this.api.listChatHistory({ channel, pageSize: DIRECT_PAGE, pageToken });
      if (this.direct?.friendId !== friendId) return;
      // The newest page leaves the older token as it was once older pages were read.
      const older = pageToken || !this.direct.loaded ? r.nextPageToken : this.direct.older;
      this.direct = dm.pageOf(this.direct, r.lines, older);
    } catch (err) {
      if (this.direct?.friendId === friendId) this.direct = { ...this.direct, refusal: chat.refusalOf(err, 0).message };
    }
    this.emit();
  }

  /** Sends a direct line; it comes back live on the events (the author's copy too). */
  async sendDirect(content: { text: string } | { phraseId: string }): Promise<boolean> {
    const c = this.direct;
    if (!c) return false;
    this.clientLine += 1;
    try {
      const r = await this.api.sendChat({
        channel: { kind: ChatChannelKind.DIRECT, id: c.friendId },
        content: "text" in content ? { case: "text", value: content.text } : { case: "phraseId", value: content.phraseId },
        clientLineId: `${Date.now().toString(36)}-${this.clientLine}`,
      });
      if (this.direct?.friendId !== c.friendId) return true;
      this.direct = r.delivered
        ? { ...this.direct, refusal: "" }
        : dm.undeliveredDirect(this.direct, this.me, "text" in content ? content.text : "", "phraseId" in content ? content.phraseId : "", Date.now());
      this.emit();
      return true;
    } catch (err) {
      if (this.direct?.friendId === c.friendId) this.direct = { ...this.direct, refusal: chat.refusalOf(err, Date.now()).message };
      this.emit();
      return false;
    }
  }

  private async friendCall(playerId: string, name: string, call: () => Promise<FriendState>): Promise<void> {
    try {
      this.friends = fr.setState(this.friends, playerId, await call(), name);
      this.friendsError = "";
    } catch (err) {
      this.friendsError = chat.refusalOf(err, 0).message;
    }
    this.emit();
  }

  requestFriend(playerId: string, name: string): Promise<void> {
    return this.friendCall(playerId, name, async () => (await this.api.requestFriend({ playerId })).state);
  }

  answer(playerId: string, accept: boolean): Promise<void> {
    return this.friendCall(playerId, "", async () => (await this.api.answerFriendRequest({ playerId, accept })).state);
  }

  remove(playerId: string): Promise<void> {
    return this.friendCall(playerId, "", async () => {
      await this.api.removeFriend({ playerId });
      return FriendState.UNSPECIFIED;
    });
  }

  block(playerId: string, blocked: boolean, name = ""): Promise<void> {
    return this.friendCall(playerId, name, async () => {
      await this.api.setBlocked({ playerId, blocked });
      return blocked ? FriendState.BLOCKED : FriendState.UNSPECIFIED;
    });
  }

  /** Invites a friend; the link the server made (also for a player not signed in yet). */
  async invite(playerId: string, kind: InviteKind, target: string): Promise<string> {
    try {
      const r = await this.api.sendInvite({ playerId, kind, target });
      return r.link;
    } catch (err) {
      this.friendsError = chat.refusalOf(err, 0).message;
      this.emit();
      return "";
    }
  }

  dismissInvite(link: string): void {
    this.friends = fr.dismissInvite(this.friends, link);
    this.emit();
  }
}

let current: SocialStore | null = null;

/** The signed-in player's store (a new one when the player changes). */
export function socialStore(api: () => SocialApi, me: string): SocialStore {
  if (current?.me !== me) {
    current?.close();
    current = new SocialStore(api(), me);
    current.start();
  }
  return current;
}
