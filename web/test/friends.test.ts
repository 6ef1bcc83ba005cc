// The friends view-model (issue 44): the list in its sections and order, presence for
// friends only, requests and answers as session events, invitations kept newest first,
// and invitation links that survive a sign-in.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { FriendSchema, FriendState, InviteKind, PresenceStatus, SocialEventSchema } from "../src/gen/trix/v1/social_pb";
import type { SocialEvent } from "../src/gen/trix/v1/social_pb";
import { applyEvent, dismissInvite, emptyFriends, fromList, INVITES_KEPT, presenceKey, sections, setState } from "../src/social/friends";
import { clearPendingInvite, inviteCode, pendingInvite, routeOf } from "../src/social/invite";

const friend = (id: string, name: string, state: FriendState, presence = PresenceStatus.UNSPECIFIED) => create(FriendSchema, { playerId: id, displayName: name, state, presence });
const ev = (event: SocialEvent["event"]) => create(SocialEventSchema, { event });
const names = (list: { name: string }[]) => list.map((e) => e.name);

describe("the friends list", () => {
  it("shows friends in a game, then in the lobby, then offline, then requests both ways and the blocked", () => {
    const s = fromList(emptyFriends(), [
      friend("a", "Zaid", FriendState.FRIENDS, PresenceStatus.OFFLINE),
      friend("b", "Badr", FriendState.FRIENDS, PresenceStatus.IN_LOBBY),
      friend("c", "Reem", FriendState.FRIENDS, PresenceStatus.IN_GAME),
      friend("d", "Dana", FriendState.INCOMING),
      friend("e", "Eyad", FriendState.REQUESTED),
      friend("f", "Fadi", FriendState.BLOCKED),
      friend("g", "Amal", FriendState.FRIENDS, PresenceStatus.IN_LOBBY),
    ]);
    const v = sections(s);
    expect(names(v.friends)).toEqual(["Reem", "Amal", "Badr", "Zaid"]);
    expect([names(v.incoming), names(v.requested), names(v.blocked), v.online]).toEqual([["Dana"], ["Eyad"], ["Fadi"], 3]);
    expect(v.friends.map((f) => presenceKey(f.presence))).toEqual(["inGame", "inLobby", "inLobby", "offline"]);
  });
  it("never shows a presence for someone who is not a friend", () => {
    const s = fromList(emptyFriends(), [friend("d", "Dana", FriendState.INCOMING, PresenceStatus.IN_GAME)]);
    expect(sections(s).incoming[0]?.presence).toBe(PresenceStatus.UNSPECIFIED);
    const t = applyEvent(s, ev({ case: "friendPresenceChanged", value: { playerId: "d", presence: PresenceStatus.IN_LOBBY } as never }), 0);
    expect(t).toBe(s);
  });
});

describe("requests and answers", () => {
  it("a request received is listed to answer; its acceptance makes a friend whose presence then changes", () => {
    let s = applyEvent(emptyFriends(), ev({ case: "friendRequestReceived", value: { playerId: "d", displayName: "Dana" } as never }), 0);
    expect(names(sections(s).incoming)).toEqual(["Dana"]);
    s = setState(s, "d", FriendState.FRIENDS);
    s = applyEvent(s, ev({ case: "friendPresenceChanged", value: { playerId: "d", presence: PresenceStatus.IN_GAME } as never }), 0);
    expect(sections(s).friends.map((f) => [f.name, presenceKey(f.presence)])).toEqual([["Dana", "inGame"]]);
  });
  it("the other's acceptance of the player's request makes them friends; removing leaves no trace", () => {
    let s = setState(emptyFriends(), "e", FriendState.REQUESTED, "Eyad");
    s = applyEvent(s, ev({ case: "friendRequestAccepted", value: { playerId: "e", displayName: "Eyad" } as never }), 0);
    expect(names(sections(s).friends)).toEqual(["Eyad"]);
    s = setState(s, "e", FriendState.UNSPECIFIED);
    expect(s.entries.size).toBe(0);
  });
  it("a request from a player blocked changes nothing", () => {
    const s = setState(emptyFriends(), "f", FriendState.BLOCKED, "Fadi");
    expect(applyEvent(s, ev({ case: "friendRequestReceived", value: { playerId: "f", displayName: "Fadi" } as never }), 0)).toBe(s);
  });
});

describe("invitations", () => {
  it("are kept newest first, once per link, at most ten, and dismissed one by one", () => {
    let s = emptyFriends();
    for (let i = 0; i < INVITES_KEPT + 2; i++)
      s = applyEvent(s, ev({ case: "inviteReceived", value: { playerId: "a", displayName: "Ali", kind: InviteKind.PRIVATE_TABLE, link: `L${i}` } as never }), i);
    s = applyEvent(s, ev({ case: "inviteReceived", value: { playerId: "a", displayName: "Ali", kind: InviteKind.WATCH_TABLE, link: "L11" } as never }), 99);
    expect(s.invites.map((i) => i.link).slice(0, 3)).toEqual(["L11", "L10", "L9"]);
    expect(s.invites.length).toBe(INVITES_KEPT);
    expect(dismissInvite(s, "L11").invites[0]?.link).toBe("L10");
  });
  it("a chat timeout is kept until when it ends", () => {
    const s = applyEvent(emptyFriends(), ev({ case: "chatTimedOut", value: { until: timestampFromMs(5_000) } as never }), 0);
    expect(s.chatTimedOutUntilMs).toBe(5_000);
  });
  it("links are opened by their code; the gateway's answer says where to go", () => {
    const link = "http://127.0.0.1:8080/invite/table/AB12?from=p1&expires=99";
    expect(inviteCode(link)).toBe("table/AB12?from=p1&expires=99");
    expect(inviteCode("/")).toBe("");
    expect(routeOf({ kind: InviteKind.PRIVATE_TABLE, target: "AB12" })).toEqual({ kind: "play", code: "AB12" });
    expect(routeOf({ kind: InviteKind.WATCH_TABLE, target: "t1", invitation: "inv" })).toEqual({ kind: "watch", tableId: "t1", invitation: "inv" });
    expect(routeOf({ kind: InviteKind.COMPETITION, target: "c9" })).toEqual({ kind: "competition", competitionId: "c9" });
    expect(routeOf({ kind: InviteKind.UNSPECIFIED, target: "x" })).toBeNull();
    expect(routeOf({ kind: InviteKind.PRIVATE_TABLE, target: "" })).toBeNull();
  });
  it("a link opened before signing in waits for the sign-in, the address back to the lobby's", () => {
    const kept = new Map<string, string>();
    const storage = { getItem: (k: string) => kept.get(k) ?? null, setItem: (k: string, v: string) => void kept.set(k, v), removeItem: (k: string) => void kept.delete(k) };
    let replaced = 0;
    const replace = () => void (replaced += 1);
    expect(pendingInvite("/invite/table/AB12?from=p1&expires=9", storage, replace)).toBe("table/AB12?from=p1&expires=9");
    expect(replaced).toBe(1);
    expect(pendingInvite("/", storage, replace)).toBe("table/AB12?from=p1&expires=9"); // after the sign-in's reload
    expect(replaced).toBe(1);
    clearPendingInvite(storage);
    expect(pendingInvite("/", storage, replace)).toBe("");
  });
});
