// The host's view of his private table before it starts: who has joined, in the
// order they joined, and in a partnership variant who plays with whom (the host and the first
// friend are partners, sitting opposite: docs/rules.md §1). Asked of the gateway every 2 s
// while the lobby is shown.
import { useEffect, useState } from "preact/hooks";
import type { PrivateTablePlayer } from "../gen/trix/v1/matchmaking_pb";
import type { Gateway } from "../client/api";
import type { T } from "./App";

const POLL_MS = 2000;

export function PrivateLobby({ t, gw, code }: { t: T; gw: Gateway; code: string }) {
  const [players, setPlayers] = useState<PrivateTablePlayer[]>([]);
  useEffect(() => {
    let stopped = false;
    let timer = 0;
    const poll = async () => {
      try {
        const r = await gw.getPrivateGame({ code });
        if (!stopped) setPlayers(r.players);
      } catch {
        // A refused or lost call: the list stays as it was, the next poll tries again.
      }
      if (!stopped) timer = window.setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [gw, code]);
  const partnership = players.some((p) => p.team >= 0);
  return (
    <div class="private-lobby">
      <p>{t("joinedCount", { n: players.length })}</p>
      <ol class="joined">
        {players.map((p, i) => (
          <li key={i} data-joined={i} data-team={p.team}>
            <bdi>{p.displayName || t("seat", { n: i + 1 })}</bdi>
            {p.host && <span class="tag">{t("hostTag")}</span>}
            {partnership && <span class="tag">{t("teamTag", { n: p.team + 1 })}</span>}
          </li>
        ))}
      </ol>
      {partnership && <p class="hint">{t("partnersHint")}</p>}
    </div>
  );
}
