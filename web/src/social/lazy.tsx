// The chat and friends panels as the app places them (issue 44), fetched with their strings
// and styles only once a player has signed in: the first page (the sign-in form) carries
// none of their code (ADR 0016, the first-load budget).
import { useEffect, useState } from "preact/hooks";
import { InviteKind } from "../gen/trix/v1/social_pb";
import type { ChatProps, FriendsProps } from "./panels";
import type { SocialApi } from "./store";

type Panels = typeof import("./panels");
type Store = typeof import("./store");

let loading: Promise<[Panels, Store]> | null = null;

function usePanels(): [Panels, Store] | null {
  const [mods, setMods] = useState<[Panels, Store] | null>(null);
  useEffect(() => {
    let live = true;
    loading ??= Promise.all([import("./panels"), import("./store")]);
    void loading.then((m) => live && setMods(m), () => (loading = null));
    return () => {
      live = false;
    };
  }, []);
  return mods;
}

/** Who is signed in, and how to reach the gateway's social RPCs. */
export type Social = { me: string; api: () => SocialApi };

export function Chat({ social, ...props }: Omit<ChatProps, "store"> & { social: Social }) {
  const mods = usePanels();
  if (!mods) return null;
  const [{ ChatPanel }, { socialStore }] = mods;
  return <ChatPanel store={socialStore(social.api, social.me)} {...props} />;
}

export function Friends({ social, ...props }: Omit<FriendsProps, "store"> & { social: Social }) {
  const mods = usePanels();
  if (!mods) return null;
  const [{ FriendsPanel }, { socialStore }] = mods;
  return <FriendsPanel store={socialStore(social.api, social.me)} {...props} />;
}

/** The social part of a table's screen: the chat, and while the game runs the friends, to
 * invite to watch it. */
export function AtTable({ social, lang, game, spectator, open, watch }: Omit<ChatProps, "store"> & Omit<FriendsProps, "store" | "inviteTo"> & { social: Social }) {
  return (
    <>
      <Chat social={social} lang={lang} game={game} spectator={spectator} />
      {!game.finished && <Friends social={social} lang={lang} open={open} watch={watch} inviteTo={{ kind: InviteKind.WATCH_TABLE, target: game.tableId }} />}
    </>
  );
}
