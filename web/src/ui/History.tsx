// The player's finished games, the leaderboard of a variant (./Lobby), and the replay viewer that
// steps through a finished game's record (docs/rules.md §12) deal by deal, trick by trick. The
// hands come from the record, or (when it omits them) from the revealed seeds (§11).
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import { Contract } from "../gen/trix/v1/common_pb";
import type { Gateway } from "../client/api";
import { cardId } from "../client/cards";
import { dealFromSeeds, hexToBytes } from "../client/fairness";
import type { T } from "./App";
import { CardFace } from "./Table";
import { CONTRACT_KEYS } from "./i18n";
import { GameLines, Leaderboard } from "./Lobby";
import { Name, Num, tx } from "./fmt";

/** The names a page shows for the player ids of records and the leaderboard: a bot seat's
 * name (the gateway's "Bot <seat + 1>" for the record's `bot-<seat>`), "You", a name seen at a
 * table on this device, else the seat (never a raw id). */
function playerName(t: T, me: string, names: Record<string, string>, id: string, seat: number): { name: string; bot: boolean } {
  const bot = /^bot-(\d)$/.exec(id);
  if (bot) return { name: `Bot ${Number(bot[1]) + 1}`, bot: true };
  if (id && id === me) return { name: t("you"), bot: false };
  return { name: names[id] ?? (seat >= 0 ? t("seat", { n: seat + 1 }) : t("player")), bot: false };
}

export function HistoryPage({ t, gw, me, names }: { t: T; gw: Gateway; me: string; names: Record<string, string> }) {
  return (
    <section class="card-box history">
      <h1>{t("history")}</h1>
      <GameLines t={t} gw={gw} pageSize={20} />
      <Leaderboard t={t} gw={gw} me={me} names={names} />
    </section>
  );
}

type Deal = { contract: Contract; owner: number; hands: number[][]; plays: { seat: number; card: number }[]; scores: number[] | null };

/** The record's deals with every hand known (listed, or derived from the revealed seeds). */
export async function replayDeals(text: string): Promise<{ players: string[]; deals: Deal[] }> {
  const rec = JSON.parse(text) as {
    players?: string[];
    fairness?: { server_seed?: string | null; client_seed?: string | null };
    deals?: { hands?: string[][]; owner?: number; contract?: string; plays?: { seat: number; card: string }[]; scores?: number[] | null }[];
  };
  const seed = rec.fairness?.server_seed;
  const deals: Deal[] = [];
  for (const [n, d] of (rec.deals ?? []).entries()) {
    const listed = d.hands?.map((h) => h.map((c) => cardId(c) ?? -1));
    const hands = listed ?? (seed ? await dealFromSeeds(hexToBytes(seed), rec.fairness?.client_seed ?? "", n) : [[], [], [], []]);
    deals.push({
      contract: Contract[(d.contract ?? "UNSPECIFIED") as keyof typeof Contract] ?? Contract.UNSPECIFIED,
      owner: d.owner ?? 0,
      hands,
      plays: (d.plays ?? []).map((p) => ({ seat: p.seat, card: cardId(p.card) ?? -1 })),
      scores: d.scores ?? null,
    });
  }
  return { players: rec.players ?? [], deals };
}

export function ReplayPage({ t, gw, tableId, me, names }: { t: T; gw: Gateway; tableId: string; me: string; names: Record<string, string> }) {
  const [game, setGame] = useState<{ players: string[]; deals: Deal[] } | null>(null);
  const [error, setError] = useState("");
  const [d, setD] = useState(0);
  const [k, setK] = useState(0);
  useEffect(() => {
    gw.query({ query: { case: "gameRecord", value: { tableId } } })
      .then((r) => replayDeals(r.result.case === "gameRecord" ? r.result.value.recordJson : "{}"))
      .then(setGame)
      .catch((e: unknown) => setError(e instanceof SyntaxError ? t("notRecord") : ConnectError.from(e).rawMessage));
  }, [tableId]);
  if (error) return <p role="alert">{t("error", { message: error })}</p>;
  if (!game) return <p>…</p>;
  const deal = game.deals[d];
  if (!deal) return <p>{t("notRecord")}</p>;
  const shown = deal.plays.slice(0, k);
  const trix = deal.contract === Contract.TRIX;
  const trick = trix ? [] : shown.slice(shown.length - (shown.length % 4 || (shown.length ? 4 : 0)));
  const go = (nd: number, nk: number) => {
    const dd = Math.max(0, Math.min(game.deals.length - 1, nd));
    setD(dd);
    setK(Math.max(0, Math.min(game.deals[dd]?.plays.length ?? 0, nk)));
  };
  return (
    <section class="card-box replay" data-deal={d} data-step={k}>
      <h1>{t("replay")}</h1>
      <p>
        {tx(t, "deal", { n: d + 1, total: game.deals.length })} · {t("contract")}: {t(CONTRACT_KEYS[deal.contract] ?? "none")} · {tx(t, "play", { n: k, total: deal.plays.length })}
      </p>
      <div class="row" role="group" aria-label={t("replay")}>
        <button type="button" data-go="prev-deal" onClick={() => go(d - 1, 0)}>
          {t("prevDeal")}
        </button>
        <button type="button" data-go="prev-trick" onClick={() => go(d, k - 4)}>
          {t("prevTrick")}
        </button>
        <button type="button" data-go="next-trick" onClick={() => go(d, k + 4)}>
          {t("nextTrick")}
        </button>
        <button type="button" data-go="next-deal" onClick={() => go(d + 1, 0)}>
          {t("nextDeal")}
        </button>
      </div>
      {[0, 1, 2, 3].map((s) => (
        <div class="replay-seat" key={s} data-seat={s}>
          <ReplayName t={t} who={playerName(t, me, names, game.players[s] ?? "", s)} />
          <span class="hand" dir="ltr">
            {(deal.hands[s] ?? [])
              .filter((c) => !shown.some((p) => p.card === c))
              .sort((a, b) => a - b)
              .map((c) => (
                <CardFace t={t} id={c} small key={c} />
              ))}
          </span>
        </div>
      ))}
      <div class="felt-line" dir="ltr" data-on-table="1">
        {(trix ? shown : trick).map((p) => (
          <CardFace t={t} id={p.card} key={p.card} />
        ))}
      </div>
      {deal.scores && k === deal.plays.length && (
        <p data-deal-scores="1">
          {deal.scores.map((p, s) => (
            <span key={s}>
              {s > 0 && " · "}
              <Num lang={t.lang} n={p} />
            </span>
          ))}
        </p>
      )}
    </section>
  );
}

function ReplayName({ t, who }: { t: T; who: { name: string; bot: boolean } }) {
  return (
    <strong class="name">
      <Name>{who.name}</Name>
      {who.bot && <span class="tag">{t("bot")}</span>}
    </strong>
  );
}
