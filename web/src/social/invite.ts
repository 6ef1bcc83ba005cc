// Invitation links (issue 44). The social service makes them: `<origin>/invite/<kind>/<target>
// ?from=<player>&expires=<ms>`, a path the web app's server answers with the page itself.
// The page keeps the link (a player not signed in yet signs in first, and the sign-in may
// reload the page), shows the lobby's address, and once signed in asks the gateway what the
// link is to (Social.open_invite: checked there, expiry included), then opens it: the
// private table joined by its code, the table watched, or the competition.
import { useEffect, useState } from "preact/hooks";
import { InviteKind } from "../gen/trix/v1/social_pb";

export type InviteRoute =
  | { kind: "play"; code: string }
  | { kind: "watch"; tableId: string; invitation: string }
  | { kind: "competition"; competitionId: string };

const PATH = "/invite/";

/** The part of a link (or of the page's address) that names the invitation; "" if none. */
export function inviteCode(linkOrPath: string): string {
  const at = linkOrPath.indexOf(PATH);
  return at < 0 ? "" : linkOrPath.slice(at + PATH.length);
}

/** Where an opened invitation leads (OpenInviteResponse); null for a kind this page does not know. */
export function routeOf(r: { kind: InviteKind; target: string; invitation?: string }): InviteRoute | null {
  if (!r.target) return null;
  if (r.kind === InviteKind.PRIVATE_TABLE) return { kind: "play", code: r.target };
  if (r.kind === InviteKind.WATCH_TABLE) return { kind: "watch", tableId: r.target, invitation: r.invitation ?? "" };
  if (r.kind === InviteKind.COMPETITION) return { kind: "competition", competitionId: r.target };
  return null;
}

/** Where a not-yet-signed-in player's invitation waits. */
export const PENDING_KEY = "trix.invite";

type Store = Pick<Storage, "getItem" | "setItem" | "removeItem">;

/** The invitation the page was opened with (kept, and the address set back to the app's
 * root by `replace`), or the one kept while signing in; "" if none. */
export function pendingInvite(pathAndQuery: string, storage: Store | null, replace: () => void): string {
  const code = inviteCode(pathAndQuery);
  try {
    if (code) {
      storage?.setItem(PENDING_KEY, code);
      replace();
      return code;
    }
    return storage?.getItem(PENDING_KEY) ?? "";
  } catch {
    return code;
  }
}

export function clearPendingInvite(storage: Pick<Storage, "removeItem"> | null): void {
  try {
    storage?.removeItem(PENDING_KEY);
  } catch {
    /* private mode */
  }
}

/** Opens invitation links: the one the page was opened with, once signed in, and any other
 * (an invitation received) on demand. Returns the opener of a link. */
export function useInviteLinks(signedIn: boolean, api: () => { openInvite: (code: string) => Promise<{ kind: InviteKind; target: string; invitation?: string }> }, go: (r: InviteRoute) => void, fail: (err: unknown) => void): (link: string) => void {
  const storage = (() => {
    try {
      return localStorage;
    } catch {
      return null;
    }
  })();
  const [pending] = useState(() => pendingInvite(location.pathname + location.search, storage, () => history.replaceState(null, "", `/${location.hash}`)));
  const open = (code: string) =>
    void api()
      .openInvite(code)
      .then((r) => {
        const route = routeOf(r);
        if (route) go(route);
      }, fail);
  useEffect(() => {
    if (!signedIn || !pending) return;
    clearPendingInvite(storage);
    open(pending);
  }, [signedIn]);
  return (link) => open(inviteCode(link) || link);
}
