// The host's view of his private table before it starts: who has joined, in the order they
// joined, asked of the gateway every 2 s while shown, and the start. In a partnership variant
// the host and the first friend are partners, sitting opposite (docs/rules.md §1), unless the
// host names another of those who joined as his partner before he starts.
import { useEffect, useState } from "preact/hooks";
import type { PrivateTablePlayer } from "../gen/trix/v1/matchmaking_pb";
import type { Gateway } from "../client/api";
import type { T } from "./App";

const POLL_MS = 2000;

type Props = { t: T; gw: Gateway; code: string; fail: (err: unknown) => void };

export function PrivateLobby({ t, gw, code, fail }: Props) {
  const [players, setPlayers] = useState<PrivateTablePlayer[]>([]);
  const [partner, setPartner] = useState(1);
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
  const choosing = partnership && players.length >= 3;
  const chosen = partner < players.length ? partner : 1;
  // The teams as they will sit: the host and his partner, then the others.
  const team = (i: number) => (!partnership ? -1 : i === 0 || i === chosen ? 0 : 1);
  return (
    <div class="private-lobby">
      <p>{t("joinedCount", { n: players.length })}</p>
      <ol class="joined">
        {players.map((p, i) => (
          <li key={i} data-joined={i} data-team={team(i)}>
            <bdi>{p.displayName || t("seat", { n: i + 1 })}</bdi>
            {p.host && <span class="tag">{t("hostTag")}</span>}
            {partnership && <span class="tag">{t("teamTag", { n: team(i) + 1 })}</span>}
            {choosing && i > 0 && (
              <label>
                <input type="radio" name="partner" value={i} checked={i === chosen} onChange={() => setPartner(i)} /> {t("partnerChoice")}
              </label>
            )}
          </li>
        ))}
      </ol>
      {partnership && <p class="hint">{t("partnersHint")}</p>}
      <button type="button" data-action="start-private" onClick={() => void gw.startPrivateGame({ code, partner: choosing ? chosen : 0 }).catch(fail)}>
        {t("startBots")}
      </button>
    </div>
  );
}
