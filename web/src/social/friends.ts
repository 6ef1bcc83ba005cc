// The friends list in the browser (issue 44): friends with their online status (in a game,
// in the lobby, offline: friends only), requests both ways to accept or decline, the players
// blocked, the invitations received. Pure functions over the social.proto messages
// (ListFriends, the session's SocialEvents): the page renders what these return.
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { FriendState, InviteKind, PresenceStatus } from "../gen/trix/v1/social_pb";
import type { Friend, SocialEvent } from "../gen/trix/v1/social_pb";

export type Entry = { playerId: string; name: string; state: FriendState; presence: PresenceStatus; tableId: string };
export type Invite = { from: string; name: string; kind: InviteKind; link: string; atMs: number };

export type FriendsState = {
  entries: Map<string, Entry>;
  /** Invitations received, newest first (at most INVITES_KEPT). */
  invites: Invite[];
  /** Chat timeout (ChatTimedOut): when the player may chat again, ms since the epoch. */
  chatTimedOutUntilMs: number;
};

export const INVITES_KEPT = 10;

export function emptyFriends(): FriendsState {
  return { entries: new Map(), invites: [], chatTimedOutUntilMs: 0 };
}

function entryOf(f: Friend): Entry {
  return { playerId: f.playerId, name: f.displayName, state: f.state, presence: f.state === FriendState.FRIENDS ? f.presence : PresenceStatus.UNSPECIFIED, tableId: f.tableId };
}

/** The list as ListFriends answered it (all its pages): it replaces what was known. */
export function fromList(s: FriendsState, friends: Friend[]): FriendsState {
  return { ...s, entries: new Map(friends.map((f) => [f.playerId, entryOf(f)])) };
}

/** The relation after one of the player's own actions (the RPC's answer). */
export function setState(s: FriendsState, playerId: string, state: FriendState, name = ""): FriendsState {
  const entries = new Map(s.entries);
  const old = entries.get(playerId);
  if (state === FriendState.UNSPECIFIED) entries.delete(playerId);
  else
    entries.set(playerId, {
      playerId,
      name: name || old?.name || playerId,
      state,
      presence: state === FriendState.FRIENDS ? (old?.presence ?? PresenceStatus.UNSPECIFIED) : PresenceStatus.UNSPECIFIED,
      tableId: state === FriendState.FRIENDS ? (old?.tableId ?? "") : "",
    });
  return { ...s, entries };
}

/** A social event of the player's session (chat lines are the chat's, ./chat). */
export function applyEvent(s: FriendsState, e: SocialEvent, nowMs: number): FriendsState {
  const ev = e.event;
  switch (ev.case) {
    case "friendRequestReceived": {
      const old = s.entries.get(ev.value.playerId);
      // A request from a player blocked, or a friend already, changes nothing.
      if (old && (old.state === FriendState.BLOCKED || old.state === FriendState.FRIENDS)) return s;
      // Crossing requests make friends at once (the server says so with an accept).
      return setState(s, ev.value.playerId, FriendState.INCOMING, ev.value.displayName);
    }
    case "friendRequestAccepted":
      return setState(s, ev.value.playerId, FriendState.FRIENDS, ev.value.displayName);
    case "friendPresenceChanged": {
      const old = s.entries.get(ev.value.playerId);
      if (!old || old.state !== FriendState.FRIENDS) return s;
      const entries = new Map(s.entries);
      entries.set(old.playerId, { ...old, presence: ev.value.presence, tableId: ev.value.presence === PresenceStatus.IN_GAME ? old.tableId : "" });
      return { ...s, entries };
    }
    case "inviteReceived": {
      const v = ev.value;
      const invite: Invite = { from: v.playerId, name: v.displayName, kind: v.kind, link: v.link, atMs: nowMs };
      return { ...s, invites: [invite, ...s.invites.filter((i) => i.link !== v.link)].slice(0, INVITES_KEPT) };
    }
    case "chatTimedOut":
      return { ...s, chatTimedOutUntilMs: ev.value.until ? timestampMs(ev.value.until) : 0 };
    default:
      return s;
  }
}

export function dismissInvite(s: FriendsState, link: string): FriendsState {
  return { ...s, invites: s.invites.filter((i) => i.link !== link) };
}

const ONLINE_ORDER: Record<number, number> = { [PresenceStatus.IN_GAME]: 0, [PresenceStatus.IN_LOBBY]: 1 };
const rank = (e: Entry) => ONLINE_ORDER[e.presence] ?? 2;
const byName = (a: Entry, b: Entry) => a.name.localeCompare(b.name);

export type Sections = { friends: Entry[]; incoming: Entry[]; requested: Entry[]; blocked: Entry[]; online: number };

/** The list as shown: friends (in a game, then in the lobby, then offline; by name within),
 * the requests received, the requests sent, the players blocked. */
export function sections(s: FriendsState): Sections {
  const all = [...s.entries.values()];
  const of = (st: FriendState) => all.filter((e) => e.state === st).sort(byName);
  const friends = of(FriendState.FRIENDS).sort((a, b) => rank(a) - rank(b) || byName(a, b));
  return {
    friends,
    incoming: of(FriendState.INCOMING),
    requested: of(FriendState.REQUESTED),
    blocked: of(FriendState.BLOCKED),
    online: friends.filter((f) => rank(f) < 2).length,
  };
}

export type PresenceKey = "inGame" | "inLobby" | "offline";

/** A friend's status as the page names it (not known = offline, docs: friends only). */
export function presenceKey(p: PresenceStatus): PresenceKey {
  return p === PresenceStatus.IN_GAME ? "inGame" : p === PresenceStatus.IN_LOBBY ? "inLobby" : "offline";
}
