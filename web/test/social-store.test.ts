// The page's social store (issue 44) over a scripted gateway: a refusal is said in the chat
// and the line is not shown as sent; an undelivered line stays in its author's view alone;
// the events stream feeds the chat and the friends list and is followed again after a break.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ChatChannelKind, ChatLineSchema, FriendSchema, FriendState, SocialEventSchema } from "../src/gen/trix/v1/social_pb";
import type { ChatLine, Friend, SocialEvent } from "../src/gen/trix/v1/social_pb";
import { visible } from "../src/social/chat";
import { sections } from "../src/social/friends";
import { SocialStore } from "../src/social/store";
import type { SocialApi } from "../src/social/store";

type History = { lines: ChatLine[]; nextPageToken: string };
type Script = {
  send?: () => Promise<{ delivered: boolean }>;
  streams: SocialEvent[][];
  friends?: Friend[];
  muted?: string[];
  /** History pages by page token ("" = the newest). */
  pages?: Record<string, History>;
};

function scripted(script: Script): SocialApi & { sent: unknown[]; opened: number; spectatorChat: [string, boolean][]; asked: unknown[] } {
  const api = {
    sent: [] as unknown[],
    opened: 0,
    spectatorChat: [] as [string, boolean][],
    asked: [] as unknown[],
    setSpectatorChat: async (tableId: string, on: boolean) => void api.spectatorChat.push([tableId, on]),
    sendChat: async (req: unknown) => {
      api.sent.push(req);
      return (await (script.send ?? (async () => ({ delivered: true })))()) as never;
    },
    listChatHistory: async (req: { pageToken?: string }) => {
      api.asked.push(req);
      return (script.pages?.[req.pageToken ?? ""] ?? { lines: [], nextPageToken: "" }) as never;
    },
    listFriends: async () => ({ friends: script.friends ?? [], nextPageToken: "", mutedPlayerIds: script.muted ?? [] }) as never,
    requestFriend: async () => ({ state: FriendState.REQUESTED }) as never,
    answerFriendRequest: async () => ({ state: FriendState.FRIENDS }) as never,
    removeFriend: async () => ({}) as never,
    setBlocked: async () => ({}) as never,
    sendInvite: async () => ({ link: "/invite/table/X?from=a&expires=1" }) as never,
    setMuted: async () => ({}) as never,
    reportLine: async () => ({ reportId: "r1" }) as never,
    async *events(signal: AbortSignal) {
      const batch = script.streams[api.opened++];
      if (!batch) return await new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("closed"))));
      for (const e of batch) yield e;
      throw new ConnectError("stream idle", Code.Unavailable);
    },
  };
  return api;
}

const line = (id: number, author: string, kind = ChatChannelKind.TABLE_PLAYERS, channel = "t1") =>
  create(ChatLineSchema, { channel: { kind, id: channel }, lineId: BigInt(id), authorId: author, content: { case: "text", value: `l${id}` } });
const chatLine = (id: number, author: string, kind = ChatChannelKind.TABLE_PLAYERS, channel = "t1") =>
  create(SocialEventSchema, { event: { case: "chatLine", value: line(id, author, kind, channel) } });
const direct = (id: number, author: string, friend: string) => chatLine(id, author, ChatChannelKind.DIRECT, friend);
const request = (id: string) => create(SocialEventSchema, { event: { case: "friendRequestReceived", value: { playerId: id, displayName: id.toUpperCase() } } });
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("the social store", () => {
  it("says the server's refusal and keeps the text out of the channel", async () => {
    const api = scripted({ streams: [], send: async () => Promise.reject(new ConnectError("free text between partners is refused during a deal", Code.PermissionDenied)) });
    const s = new SocialStore(api, "me", async () => undefined);
    s.openTable("t1");
    expect(await s.send("players", { text: "I hold the king" })).toBe(false);
    expect(s.chat?.refusal?.kind).toBe("partners");
    expect(visible(s.chat!, "players")).toEqual([]);
  });
  it("keeps an undelivered line in its author's view alone, marked", async () => {
    const api = scripted({ streams: [], send: async () => ({ delivered: false }) });
    const s = new SocialStore(api, "me", async () => undefined);
    s.openTable("t1");
    expect(await s.send("players", { phraseId: "greeting" })).toBe(true);
    expect(visible(s.chat!, "players").map((l) => [l.authorId, l.phraseId, l.undelivered])).toEqual([["me", "greeting", true]]);
    expect(api.sent).toHaveLength(1);
  });
  it("follows the events into the chat and the friends list, again after the stream breaks", async () => {
    // The server's list, asked again after the break, has the request the stream brought.
    const friends = [create(FriendSchema, { playerId: "dana", displayName: "DANA", state: FriendState.INCOMING })];
    const api = scripted({ streams: [[chatLine(1, "ali"), request("dana")], [chatLine(2, "ali")]], friends });
    const slept: number[] = [];
    const s = new SocialStore(api, "me", async (ms) => void slept.push(ms));
    s.openTable("t1");
    s.start();
    for (let i = 0; i < 20 && api.opened < 3; i++) await tick();
    expect(visible(s.chat!, "players").map((l) => l.text)).toEqual(["l1", "l2"]);
    expect(sections(s.friends).incoming.map((e) => e.name)).toEqual(["DANA"]);
    expect(slept[0]).toBe(500);
    s.close();
  });
  it("tells the gateway a seated player's spectators' setting, again after the stream breaks; never for a spectator", async () => {
    const api = scripted({ streams: [[]] });
    const s = new SocialStore(api, "me", async () => undefined);
    s.openTable("t1");
    s.showSpectators(true);
    s.start();
    for (let i = 0; i < 20 && api.opened < 2; i++) await tick();
    s.showSpectators(false);
    expect(api.spectatorChat).toEqual([
      ["t1", true],
      ["t1", true],
      ["t1", false],
    ]);
    s.openTable("t2", true);
    s.showSpectators(true);
    expect(api.spectatorChat).toHaveLength(3);
    s.close();
  });
  it("loads the player's mutes at start: a muted player's lines stay hidden after a reload", async () => {
    const api = scripted({ streams: [[chatLine(1, "ali"), chatLine(2, "badr")]], muted: ["ali"] });
    const s = new SocialStore(api, "me", async () => undefined);
    await s.refreshFriends();
    s.openTable("t1");
    s.start();
    for (let i = 0; i < 20 && api.opened < 2; i++) await tick();
    expect([...s.muted]).toEqual(["ali"]);
    expect(visible(s.chat!, "players").map((l) => l.authorId)).toEqual(["badr"]);
    await s.mute("ali", false);
    expect(visible(s.chat!, "players").map((l) => l.authorId)).toEqual(["ali", "badr"]);
    s.close();
  });
  it("opens a conversation with a friend: its history paged back, his lines live, the others' counted unread", async () => {
    const pages = { "": { lines: [line(5, "me", ChatChannelKind.DIRECT, "dana"), line(4, "dana", ChatChannelKind.DIRECT, "dana")], nextPageToken: "p2" }, p2: { lines: [line(1, "dana", ChatChannelKind.DIRECT, "dana")], nextPageToken: "" } };
    const api = scripted({ streams: [], pages });
    const s = new SocialStore(api, "me", async () => undefined);
    s.openDirect("dana", "Dana");
    for (let i = 0; i < 5; i++) await tick();
    expect(s.direct?.lines.map((l) => l.lineId)).toEqual([4n, 5n]);
    expect(s.direct?.older).toBe("p2");
    await s.olderDirect();
    expect(s.direct?.lines.map((l) => l.lineId)).toEqual([1n, 4n, 5n]);
    expect(s.direct?.older).toBe("");
    s.apply(direct(6, "dana", "dana"));
    s.apply(direct(6, "dana", "dana")); // delivered twice, kept once
    s.apply(direct(2, "eyad", "eyad"));
    s.apply(chatLine(7, "dana")); // a table's line is not the conversation's
    expect(s.direct?.lines.map((l) => l.lineId)).toEqual([1n, 4n, 5n, 6n]);
    expect(s.directUnread).toEqual({ dana: 0, eyad: 1 });
    expect(await s.sendDirect({ text: "مرحبا" })).toBe(true);
    expect(api.sent).toEqual([expect.objectContaining({ channel: { kind: ChatChannelKind.DIRECT, id: "dana" }, content: { case: "text", value: "مرحبا" } })]);
    s.openDirect("eyad", "Eyad");
    expect(s.directUnread.eyad).toBe(0);
    expect(api.asked).toContainEqual(expect.objectContaining({ channel: expect.objectContaining({ kind: ChatChannelKind.DIRECT, id: "eyad" }) }));
  });
  it("keeps an undelivered direct line in its author's view alone, and says a refusal", async () => {
    let answer: () => Promise<{ delivered: boolean }> = async () => ({ delivered: false });
    const api = scripted({ streams: [], send: () => answer() });
    const s = new SocialStore(api, "me", async () => undefined);
    s.openDirect("dana", "Dana");
    await s.sendDirect({ phraseId: "greeting" });
    expect(s.direct?.lines.map((l) => [l.authorId, l.phraseId, l.undelivered])).toEqual([["me", "greeting", true]]);
    answer = async () => Promise.reject(new ConnectError("direct messages go to friends only", Code.PermissionDenied));
    expect(await s.sendDirect({ text: "hi" })).toBe(false);
    expect(s.direct?.refusal).toBe("direct messages go to friends only");
  });
});
