// The app's hook into chat, friends and invitation links (issue 44): what App places on the
// table's screen, the private table's waiting screen and the lobby, and the invitation link
// the page was opened with, opened once signed in. The panels themselves load after sign-in
// (./lazy).
import { useMemo } from "preact/hooks";
import type { ComponentChildren } from "preact";
import type { Gateway } from "../client/api";
import type { GameState } from "../client/state";
import { InviteKind } from "../gen/trix/v1/social_pb";
import type { Lang } from "../ui/i18n";
import { socialApi } from "./gateway";
import { useInviteLinks } from "./invite";
import { AtTable, Friends } from "./lazy";

export type SocialSlots = {
  /** The chat and the friends below a table's hand (null before sign-in). */
  atTable: (game: GameState, spectator: boolean) => ComponentChildren;
  /** The friends list; with a private table's code, each friend may be invited to it. */
  friends: (privateCode?: string) => ComponentChildren;
};

export function useSocial(
  gw: Gateway,
  me: string,
  lang: Lang,
  join: (code: string) => void,
  watch: (tableId: string, invitation?: string) => void,
  fail: (err: unknown) => void,
): SocialSlots {
  const social = useMemo(() => (me ? { me, api: () => socialApi(gw) } : null), [me]);
  const open = useInviteLinks(!!me, () => socialApi(gw), (r) => {
    if (r.kind === "play") join(r.code);
    else if (r.kind === "watch") watch(r.tableId, r.invitation);
    else location.hash = `#/competitions/${encodeURIComponent(r.competitionId)}`;
  }, fail);
  return {
    atTable: (game, spectator) => social && <AtTable social={social} lang={lang} game={game} spectator={spectator} open={open} watch={watch} />,
    friends: (code) =>
      social && <Friends social={social} lang={lang} open={open} watch={watch} inviteTo={code ? { kind: InviteKind.PRIVATE_TABLE, target: code } : undefined} />,
  };
}
