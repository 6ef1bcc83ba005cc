// The page's social store (issue 44) over a scripted gateway: a refusal is said in the chat
// and the line is not shown as sent; an undelivered line stays in its author's view alone;
// the events stream feeds the chat and the friends list and is followed again after a break.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ChatChannelKind, ChatLineSchema, FriendSchema, FriendState, SocialEventSchema } from "../src/gen/trix/v1/social_pb";
import type { Friend, SocialEvent } from "../src/gen/trix/v1/social_pb";
import { visible } from "../src/social/chat";
import { sections } from "../src/social/friends";
import { SocialStore } from "../src/social/store";
import type { SocialApi } from "../src/social/store";

type Script = { send?: () => Promise<{ delivered: boolean }>; streams: SocialEvent[][]; friends?: Friend[] };

function scripted(script: Script): SocialApi & { sent: unknown[]; opened: number } {
  const api = {
    sent: [] as unknown[],
    opened: 0,
    sendChat: async (req: unknown) => {
      api.sent.push(req);
      return (await (script.send ?? (async () => ({ delivered: true })))()) as never;
    },
    listChatHistory: async () => ({ lines: [], nextPageToken: "" }) as never,
    listFriends: async () => ({ friends: script.friends ?? [], nextPageToken: "" }) as never,
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

const chatLine = (id: number, author: string) =>
  create(SocialEventSchema, {
    event: { case: "chatLine", value: create(ChatLineSchema, { channel: { kind: ChatChannelKind.TABLE_PLAYERS, id: "t1" }, lineId: BigInt(id), authorId: author, content: { case: "text", value: `l${id}` } }) },
  });
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
});
