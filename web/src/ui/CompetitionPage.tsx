// One competition's page (issue 43): its facts, the player's status (and his table, which
// also opens by itself: ./competitionFollow), the live bracket (knockout) or standings (points)
// with every table to watch, the final ranking; in the review period the time left, the check
// of the competition file in the browser (./CompetitionCheck) and a complaint form; after it
// the payouts. Read from the gateway's ViewCompetition, again whenever the competition changes
// (a notice on the player's stream: `changed` prop) and every few seconds while shown.
import { useEffect, useState } from "preact/hooks";
import { ConnectError } from "@connectrpc/connect";
import type { ViewCompetitionResponse } from "../gen/trix/v1/gateway_pb";
import type { Gateway } from "../client/api";
import { bracketView, competitionRow, isPartnershipVariant, knockoutTables, myStatus, payoutsView, reviewLeftMs, standingsView } from "../client/competitions";
import type { BracketRound, MyStatus } from "../client/competitions";
import type { T } from "./App";
import { Name, Num } from "./fmt";
import { cStrings, Facts } from "./competitionText";
import type { C } from "./competitionText";
import type { CKey } from "./i18n_competitions";
import { CompetitionCheck } from "./CompetitionCheck";

/** How often the page reads the competition again while shown (a `changed` notice: at once). */
const VIEW_REFRESH_MS = 5000;

type Props = { t: T; gw: Gateway; me: string; id: string; changed: number; play: (tableId: string, seat: number) => void; watch: (tableId: string) => void };

export function CompetitionPage({ t, gw, me, id, changed, play, watch }: Props) {
  const c = cStrings(t);
  const [view, setView] = useState<ViewCompetitionResponse | null>(null);
  const [error, setError] = useState("");
  const [now, setNow] = useState(Date.now());
  const load = () =>
    gw
      .viewCompetition({ competitionId: id })
      .then((r) => {
        setError("");
        setView(r);
        setNow(Date.now());
      })
      .catch((e: unknown) => setError(t("error", { message: ConnectError.from(e).rawMessage })));
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), VIEW_REFRESH_MS);
    return () => clearInterval(timer);
  }, [id]);
  useEffect(() => {
    if (changed) void load();
  }, [changed]);
  const comp = view?.competition;
  if (!comp) {
    return (
      <section class="card-box competition" aria-busy={!error}>
        <a href="#/competitions">{c.s("back")}</a>
        {error && <p role="alert">{error}</p>}
      </section>
    );
  }
  const row = competitionRow(comp, me, now);
  const names = new Map(comp.entrants.map((e) => [e.playerId, e.displayName]));
  const tables = view.bracket?.tables ?? view.standings?.tables ?? [];
  const ranking = view.bracket?.ranking ?? [];
  const status = myStatus(comp, tables, ranking, me);
  const knockout = row.format === "knockout";
  const expected = knockout ? knockoutTables(row.capacity, row.rounds, isPartnershipVariant(row.variant)) : [];
  const rounds = bracketView(tables, me, expected);
  const reviewLeft = reviewLeftMs(comp, now);
  const who = (p: string) => <Player c={c} p={p} name={names.get(p)} me={me} />;
  return (
    <div class="competition" data-competition-page={comp.competitionId} data-stage={row.stage}>
      <section class="card-box">
        <a href="#/competitions">{c.s("back")}</a>
        <h1>
          {c.s("title")} · <span data-stage-tag={row.stage}>{c.s(`stage_${row.stage}` as CKey)}</span>
        </h1>
        {error && <p role="alert">{error}</p>}
        <Facts c={c} r={row} />
        {comp.code && <p dir="auto">{c("code", { code: <bdi dir="ltr">{comp.code}</bdi> })}</p>}
        <p class="status" role="status" data-status={status.kind}>
          <strong>{c.s("status")}:</strong> <StatusText c={c} s={status} />
        </p>
        {view.seat && view.seat.tableId && (
          <button type="button" class="primary" data-action="to-table" data-table={view.seat.tableId} onClick={() => play(view.seat?.tableId ?? "", view.seat?.seat ?? -1)}>
            {c.s("toTable")}
          </button>
        )}
        {row.stage === "review" && reviewLeft > 0 && (
          <p class="note" data-review-left={Math.ceil(reviewLeft / 1000)}>
            {c("review", { s: Math.ceil(reviewLeft / 1000) })}
          </p>
        )}
      </section>
      {knockout ? (
        <Bracket c={c} rounds={rounds} who={who} watch={watch} />
      ) : (
        <Standings c={c} view={view} me={me} who={who} rounds={rounds} watch={watch} />
      )}
      {ranking.length > 0 && (
        <section class="card-box" aria-labelledby="ranking-h">
          <h2 id="ranking-h">{c.s("ranking")}</h2>
          <ol class="ranking" data-ranking="1">
            {ranking.map((u, i) => (
              <li key={i} data-unit={u}>
                {u.split("+").map((p, j) => (
                  <span key={p}>
                    {j > 0 && " + "}
                    {who(p)}
                  </span>
                ))}
              </li>
            ))}
          </ol>
        </section>
      )}
      {(row.stage === "review" || row.stage === "finished") && <Payouts c={c} view={view} me={me} who={who} finished={row.stage === "finished"} />}
      {(row.stage === "review" || row.stage === "finished" || row.stage === "cancelled") && comp.digest && (
        <CompetitionCheck c={c} gw={gw} id={comp.competitionId} digest={comp.digest} commitment={comp.seatingCommitment} />
      )}
      {row.stage === "review" && reviewLeft > 0 && row.mine !== null && <Complaint c={c} gw={gw} id={comp.competitionId} tables={tables.map((x) => x.tableId)} />}
    </div>
  );
}

function Player({ c, p, name, me }: { c: C; p: string; name: string | undefined; me: string }) {
  const bot = p.startsWith("bot-");
  return (
    <span class={p === me ? "player me" : "player"} data-player={p}>
      {bot && !name ? <span class="tag">{c.s("bot")}</span> : <Name>{name || p}</Name>}
      {bot && name && <span class="tag">{c.s("bot")}</span>}
      {p === me && <span class="tag">{c.s("you")}</span>}
    </span>
  );
}

function StatusText({ c, s }: { c: C; s: MyStatus }) {
  switch (s.kind) {
    case "playing":
      return <>{c("st_playing", { round: s.round })}</>;
    case "through":
      return <>{c("st_through", { round: s.round })}</>;
    case "out":
      return <>{c("st_out", { round: s.round })}</>;
    case "placed":
      return <>{c("st_placed", { place: s.place })}</>;
    default:
      return <>{c.s(`st_${s.kind}` as CKey)}</>;
  }
}

type Who = (p: string) => preact.JSX.Element;

function TableCard({ c, tb, who, watch }: { c: C; tb: BracketRound["tables"][number]; who: Who; watch: (id: string) => void }) {
  return (
    <li class={tb.mine ? "comp-table mine" : "comp-table"} data-comp-table={tb.tableId} data-ended={tb.ended ? "1" : "0"}>
      <div class="row">
        <strong>{c("table", { n: tb.index + 1 })}</strong>
        <span class="tag">{tb.ended ? c.s("ended") : c.s("playing")}</span>
        <button type="button" class="small" data-watch={tb.tableId} aria-label={c.s("watchTable", { n: tb.index + 1, round: tb.round })} onClick={() => watch(tb.tableId)}>
          {c.s("watch")}
        </button>
        {tb.ended && (
          <a class="button small" href={`#/verify/${encodeURIComponent(tb.tableId)}`}>
            {c.s("verifyTable")}
          </a>
        )}
      </div>
      <ol class="seats">
        {tb.seats.map((s) => (
          <li key={s.player} data-seat-player={s.player} data-on={s.on ? "1" : "0"} class={s.on ? "on" : undefined}>
            {who(s.player)}
            {s.place !== null && (
              <>
                {" "}
                · <Num lang={c.t.lang} n={s.place} />
              </>
            )}
            {s.on && <span class="tag on">{c.s("wentOn")}</span>}
          </li>
        ))}
      </ol>
    </li>
  );
}

function Rounds({ c, rounds, who, watch }: { c: C; rounds: BracketRound[]; who: Who; watch: (id: string) => void }) {
  return (
    <div class="rounds">
      {rounds.map((r, i) => (
        <div class="round" key={r.round} data-round={r.round}>
          <h3>{i === rounds.length - 1 && r.expected === 1 ? c.s("final") : c.s("round", { n: r.round })}</h3>
          <ul>
            {r.tables.map((tb) => (
              <TableCard key={tb.tableId} c={c} tb={tb} who={who} watch={watch} />
            ))}
            {Array.from({ length: Math.max(0, r.expected - r.tables.length) }, (_, k) => (
              <li key={`empty-${k}`} class="comp-table empty" data-empty="1">
                {c.s("notDrawn")}
              </li>
            ))}
          </ul>
        </div>
      ))}
    </div>
  );
}

function Bracket({ c, rounds, who, watch }: { c: C; rounds: BracketRound[]; who: Who; watch: (id: string) => void }) {
  return (
    <section class="card-box bracket" aria-labelledby="bracket-h" data-bracket="1">
      <h2 id="bracket-h">{c.s("bracket")}</h2>
      <Rounds c={c} rounds={rounds} who={who} watch={watch} />
    </section>
  );
}

function Standings({ c, view, me, who, rounds, watch }: { c: C; view: ViewCompetitionResponse; me: string; who: Who; rounds: BracketRound[]; watch: (id: string) => void }) {
  const lines = standingsView(view.standings?.rows ?? [], me);
  const lang = c.t.lang;
  return (
    <section class="card-box standings" aria-labelledby="standings-h" data-standings="1">
      <h2 id="standings-h">{c.s("standings")}</h2>
      <table class="scores">
        <thead>
          <tr>
            <th scope="col">{c.s("rank")}</th>
            <th scope="col">{c.s("unit")}</th>
            <th scope="col">{c.s("pointsCol")}</th>
            <th scope="col">{c.s("winsCol")}</th>
            <th scope="col">{c.s("scoreCol")}</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((l) => (
            <tr key={l.players.join("+")} class={l.me ? "me" : undefined} data-standing={l.players.join("+")}>
              <td>
                <Num lang={lang} n={l.rank} />
              </td>
              <td>
                {l.players.map((p) => who(p))}
                {l.out && <span class="tag">{c.s("outTag")}</span>}
              </td>
              <td>
                <Num lang={lang} n={l.points} />
              </td>
              <td>
                <Num lang={lang} n={l.wins} />
              </td>
              <td>
                <Num lang={lang} n={l.score} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Rounds c={c} rounds={rounds} who={who} watch={watch} />
    </section>
  );
}

function Payouts({ c, view, me, who, finished }: { c: C; view: ViewCompetitionResponse; me: string; who: Who; finished: boolean }) {
  const lang = c.t.lang;
  // Settled after the review period; a free competition without a prize settles nothing.
  if (!view.payouts.length)
    return (
      <section class="card-box payouts" aria-labelledby="payouts-h" data-payouts={finished ? "none" : "later"}>
        <h2 id="payouts-h">{c.s("payouts")}</h2>
        <p class="note">{c.s(finished ? "payoutsNone" : "payoutsLater")}</p>
      </section>
    );
  const p = payoutsView(view.payouts, me);
  return (
    <section class="card-box payouts" aria-labelledby="payouts-h" data-payouts="paid">
      <h2 id="payouts-h">{c.s("payouts")}</h2>
      <table class="scores">
        <thead>
          <tr>
            <th scope="col">{c.s("unit")}</th>
            <th scope="col">{c.s("prizeCol")}</th>
            <th scope="col">{c.s("refundCol")}</th>
          </tr>
        </thead>
        <tbody>
          {p.lines.map((l) => (
            <tr key={l.player} class={l.me ? "me" : undefined} data-payout={l.player} data-prize={l.prize}>
              <td>{who(l.player)}</td>
              <td>
                <Num lang={lang} n={l.prize} />
              </td>
              <td>
                <Num lang={lang} n={l.refund} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class={p.conserved ? "note" : "verdict bad"} data-conserved={p.conserved ? "1" : "0"}>
        {p.conserved ? c("sums", { fees: p.fees, prizes: p.prizes, refunds: p.refunds, house: p.house }) : c.s("sumsBad")}
      </p>
    </section>
  );
}

function Complaint({ c, gw, id, tables }: { c: C; gw: Gateway; id: string; tables: string[] }) {
  const [table, setTable] = useState(tables[0] ?? "");
  const [text, setText] = useState("");
  const [done, setDone] = useState("");
  const send = async () => {
    setDone("");
    try {
      await gw.fileCompetitionComplaint({ competitionId: id, tableId: table, text: text.trim() });
      setText("");
      setDone(c.s("complaintSent"));
    } catch (e) {
      setDone(c.t("error", { message: ConnectError.from(e).rawMessage }));
    }
  };
  return (
    <section class="card-box complaint" aria-labelledby="complaint-h">
      <h2 id="complaint-h">{c.s("complaint")}</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (table && text.trim()) void send();
        }}
      >
        <label for="complaint-table">{c.s("complaintTable")}</label>
        <select id="complaint-table" dir="ltr" value={table} onChange={(e) => setTable(e.currentTarget.value)}>
          {tables.map((x) => (
            <option key={x} value={x}>
              {x}
            </option>
          ))}
        </select>
        <label for="complaint-text">{c.s("complaintText")}</label>
        <textarea id="complaint-text" rows={3} maxLength={1000} value={text} onInput={(e) => setText(e.currentTarget.value)} required />
        <button type="submit" data-action="complain">
          {c.s("complaintSend")}
        </button>
      </form>
      {done && <p role="status">{done}</p>}
    </section>
  );
}
