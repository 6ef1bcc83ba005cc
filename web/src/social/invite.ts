// Invitation links (issue 44): a friend's invitation opens the page at `#/invite/<kind>/<target>`
// (`play` a private table by its code, `watch` a table, with a spectator invitation for a
// private one, or a `competition`), also for a player who is not signed in yet: the route is
// kept until he has signed in, then opened once.
import { InviteKind } from "../gen/trix/v1/social_pb";

export type InviteRoute =
  | { kind: "play"; code: string }
  | { kind: "watch"; tableId: string; invitation: string }
  | { kind: "competition"; competitionId: string };

const PREFIX = "#/invite/";

/** The route an invitation link (or a page's hash) names; null if none. */
export function parseInvite(linkOrHash: string): InviteRoute | null {
  const at = linkOrHash.indexOf(PREFIX);
  if (at < 0) return null;
  const parts = linkOrHash
    .slice(at + PREFIX.length)
    .split(/[?#]/)[0]!
    .split("/")
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return "";
      }
    });
  const [kind, target = "", extra = ""] = parts;
  if (!target) return null;
  if (kind === "play") return { kind: "play", code: target };
  if (kind === "watch") return { kind: "watch", tableId: target, invitation: extra };
  if (kind === "competition") return { kind: "competition", competitionId: target };
  return null;
}

/** The link's hash for a kind and target (the page's own links; the server's links match it). */
export function inviteHash(kind: InviteKind, target: string, invitation = ""): string {
  const name = kind === InviteKind.PRIVATE_TABLE ? "play" : kind === InviteKind.WATCH_TABLE ? "watch" : "competition";
  return `${PREFIX}${name}/${encodeURIComponent(target)}${invitation ? `/${encodeURIComponent(invitation)}` : ""}`;
}

/** Where a not-yet-signed-in player's invitation waits (the sign-in may reload the page). */
export const PENDING_KEY = "trix.invite";

/** The invitation the page was opened with, or the one kept while signing in; `take` clears it. */
export function pendingInvite(hash: string, storage: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null): InviteRoute | null {
  const fromHash = parseInvite(hash);
  try {
    if (fromHash) {
      storage?.setItem(PENDING_KEY, hash);
      return fromHash;
    }
    return parseInvite(storage?.getItem(PENDING_KEY) ?? "");
  } catch {
    return fromHash;
  }
}

export function clearPendingInvite(storage: Pick<Storage, "removeItem"> | null): void {
  try {
    storage?.removeItem(PENDING_KEY);
  } catch {
    /* private mode */
  }
}
