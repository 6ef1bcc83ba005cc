// The lobby (issue 39), below the start screen: the public tables being played, each watched
// with one tap (leaving returns here), the player's own open game first, to go back to; the player's last finished games with their date,
// opponents, result, replay and Verify; the leaderboard, saying why games with computer players
// are not on it. The lines of games and the leaderboard are the History page's too.
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import { Variant } from "../gen/trix/v1/common_pb";
import type { GameSummary, LeaderboardEntry } from "../gen/trix/v1/scoring_pb";
import type { Gateway } from "../client/api";
import { formatDate, gameLine, LIVE_REFRESH_MS, LIVE_SHOWN, liveRows, RECENT_SHOWN } from "../client/lobby";
import type { LiveRow, SeatName } from "../client/lobby";
import { isPartnership } from "../client/state";
import type { T } from "./App";
import { VARIANT_KEYS } from "./i18n";
import type { Key } from "./i18n";
import { Name, Num, tx } from "./fmt";
import "./lobby.css";

const VARIANTS = [Variant.TRIX, Variant.TRIX_PARTNERSHIP, Variant.COMPLEX, Variant.COMPLEX_PARTNERSHIP];

/** A seat's name (or "Seat n" when none is known), isolated, a bot marked as one. */
function SeatLabel({ t, s }: { t: T; s: SeatName }) {
  return (
    <span class="seat-name">
      <Name>{s.name ?? t("seat", { n: s.seat + 1 })}</Name>
      {s.bot && <span class="tag">{t("bot")}</span>}
    </span>
  );
}

function SeatList({ t, seats }: { t: T; seats: SeatName[] }) {
  return (
    <span class="seat-list">
      {seats.map((s, i) => (
        <span key={s.seat}>
          {i > 0 && (t.lang === "ar" ? "، " : ", ")}
          <SeatLabel t={t} s={s} />
        </span>
      ))}
    </span>
  );
}

const plainNames = (t: T, seats: SeatName[]) => seats.map((s) => s.name ?? t("seat", { n: s.seat + 1 })).join(", ");

type Open = { watch: (tableId: string) => void; resume: (tableId: string, seat: number) => void };

export function LobbyBoard({ t, gw, me, names, watch, resume }: { t: T; gw: Gateway; me: string; names: Record<string, string> } & Open) {
  return (
    <div class="lobby-board">
      <LiveTables t={t} gw={gw} me={me} watch={watch} resume={resume} />
      <section class="card-box recent" aria-labelledby="recent-h">
        <h2 id="recent-h">{t("lobbyRecentGames")}</h2>
        <GameLines t={t} gw={gw} pageSize={RECENT_SHOWN} />
        <a href="#/history">{t("lobbyAllGames")}</a>
      </section>
      <Leaderboard t={t} gw={gw} me={me} names={names} />
    </div>
  );
}

function LiveTables({ t, gw, me, watch, resume }: { t: T; gw: Gateway; me: string } & Open) {
  const [rows, setRows] = useState<LiveRow[] | null>(null);
  const [error, setError] = useState("");
  const load = () =>
    gw
      .query({ query: { case: "liveTables", value: { pageSize: LIVE_SHOWN } } })
      .then((r) => {
        setError("");
        setRows(liveRows(r.result.case === "liveTables" ? r.result.value.tables : [], me));
      })
      .catch((e: unknown) => setError(ConnectError.from(e).rawMessage));
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), LIVE_REFRESH_MS);
    return () => clearInterval(timer);
  }, []);
  return (
    <section class="card-box live" aria-labelledby="live-h" aria-busy={rows === null}>
      <div class="row">
        <h2 id="live-h">{t("lobbyLiveTables")}</h2>
        <button type="button" class="small" data-action="refresh-live" onClick={() => void load()}>
          {t("lobbyRefresh")}
        </button>
      </div>
      {error && <p role="alert">{t("error", { message: error })}</p>}
      {rows && !rows.length && <p class="note">{t("lobbyNoLiveTables")}</p>}
      <ul class="live-tables">
        {(rows ?? []).map((r) => (
          <li key={r.tableId} data-live-table={r.tableId}>
            <span class="what">
              <strong>{t(VARIANT_KEYS[r.variant] as Key)}</strong> · {r.deals ? tx(t, "deal", { n: r.deal, total: r.deals }) : null}
            </span>
            <SeatList t={t} seats={r.seats} />
            {r.mySeat >= 0 ? (
              <button type="button" class="primary" data-resume={r.tableId} onClick={() => resume(r.tableId, r.mySeat)}>
                {t("lobbyBackToTable")}
              </button>
            ) : (
              <button type="button" data-watch={r.tableId} aria-label={t("lobbyWatchTableOf", { names: plainNames(t, r.seats) })} onClick={() => watch(r.tableId)}>
                {t("watchGo")}
              </button>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The player's finished games, newest first: date, variant, partner, opponents, place and
 * points, with links to the replay and to Verify. */
export function GameLines({ t, gw, pageSize }: { t: T; gw: Gateway; pageSize: number }) {
  const [games, setGames] = useState<GameSummary[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    gw.query({ query: { case: "history", value: { pageSize } } })
      .then((r) => setGames(r.result.case === "history" ? r.result.value.games : []))
      .catch((e: unknown) => setError(ConnectError.from(e).rawMessage));
  }, []);
  return (
    <>
      {error && <p role="alert">{t("error", { message: error })}</p>}
      {games && !games.length && <p>{t("noGames")}</p>}
      <ul class="games">
        {(games ?? []).map((summary) => {
          const g = gameLine(summary, isPartnership(summary.variant));
          const id = encodeURIComponent(g.tableId);
          return (
            <li key={g.tableId} data-table={g.tableId}>
              {g.endedMs > 0 && (
                <time dateTime={new Date(g.endedMs).toISOString()} data-ended="1">
                  <bdi>{formatDate(t.lang, g.endedMs)}</bdi>
                </time>
              )}{" "}
              · {t(VARIANT_KEYS[g.variant] as Key)}
              {g.partner && <> · {tx(t, "lobbyWithPartner", { name: <SeatLabel t={t} s={g.partner} /> })}</>}
              {g.opponents.length > 0 && (
                <span data-opponents="1">
                  {" "}
                  · {tx(t, "lobbyAgainst", { names: <SeatList t={t} seats={g.opponents} /> })}
                </span>
              )}{" "}
              · {tx(t, "place", { n: g.place })} · <Num lang={t.lang} n={g.points} />{" "}
              <a class="button" href={`#/replay/${id}`}>
                {t("replay")}
              </a>{" "}
              <a class="button" href={`#/verify/${id}`} data-verify={g.tableId}>
                {t("verifyNav")}
              </a>
            </li>
          );
        })}
      </ul>
    </>
  );
}

/** The four variants as a select's options, by name. */
export function VariantOptions({ t }: { t: T }) {
  return (
    <>
      {VARIANTS.map((v) => (
        <option key={v} value={String(v)}>
          {t(VARIANT_KEYS[v] as Key)}
        </option>
      ))}
    </>
  );
}

/** A variant's leaderboard: names (never ids), and why games with computer players are not on it. */
export function Leaderboard({ t, gw, me, names }: { t: T; gw: Gateway; me: string; names: Record<string, string> }) {
  const [variant, setVariant] = useState<Variant>(Variant.TRIX);
  const [board, setBoard] = useState<LeaderboardEntry[] | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    gw.query({ query: { case: "leaderboard", value: { variant, pageSize: 10 } } })
      .then((r) => setBoard(r.result.case === "leaderboard" ? r.result.value.entries : []))
      .catch((e: unknown) => setError(ConnectError.from(e).rawMessage));
  }, [variant]);
  return (
    <section class="card-box board-box" aria-labelledby="board-h">
      <h2 id="board-h">{t("leaderboard")}</h2>
      <p class="note" data-leaderboard-note="1">
        {t("leaderboardNote")}
      </p>
      {error && <p role="alert">{t("error", { message: error })}</p>}
      <label>
        {t("variant")}{" "}
        <select value={String(variant)} onChange={(e) => setVariant(Number(e.currentTarget.value) as Variant)}>
          <VariantOptions t={t} />
        </select>
      </label>
      <table class="scores board">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">{t("player")}</th>
            <th scope="col">{t("rating")}</th>
            <th scope="col">{t("games")}</th>
          </tr>
        </thead>
        <tbody>
          {(board ?? []).map((e) => (
            <tr key={e.playerId} class={e.playerId === me ? "me" : undefined}>
              <td>
                <Num lang={t.lang} n={e.rank} />
              </td>
              <td>
                <Name>{e.displayName || names[e.playerId] || (e.playerId === me ? t("you") : t("player"))}</Name>
              </td>
              <td>
                <Num lang={t.lang} n={Math.round(e.rating)} />
              </td>
              <td>
                <Num lang={t.lang} n={e.games} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
