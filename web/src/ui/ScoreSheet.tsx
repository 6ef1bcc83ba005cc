// The score sheet as players keep it on paper (issue 39): a grid whose columns are the seats
// (partners side by side under their team in partnership), one group of rows per kingdom (its
// owner, ♛), one row per deal (its contract and the cards doubled in it, each seat's points), a
// running total after each finished kingdom, the grand total and the teams' totals. During the
// game it is a panel that opens and closes (the choice remembered); at the end it is the final
// sheet under the ranking and "play again". The model is ../client/sheet.ts; numbers and names
// are isolated (./fmt) so -75 reads -75 on the Arabic page.
import { useState } from "preact/hooks";
import { Contract } from "../gen/trix/v1/common_pb";
import { cardText, suitOf } from "../client/cards";
import { buildSheet, standings } from "../client/sheet";
import type { Sheet, SheetDeal, SheetKingdom } from "../client/sheet";
import type { GameState } from "../client/state";
import type { T } from "./App";
import { Name, Num, tx } from "./fmt";
import "./scoresheet.css";

type Names = {
  t: T;
  /** A seat's name as the table shows it ("You" for this player's own seat). */
  name: (s: number) => string;
  contractName: (c: Contract) => string;
  /** A card's spoken name, for the screen reader ("K of hearts"). */
  cardName: (id: number) => string;
};

const SUIT_SYMBOL = ["♣", "♦", "♥", "♠"];
const OPEN_KEY = "trix.sheet";

function remembered(): boolean {
  try {
    return localStorage.getItem(OPEN_KEY) !== "closed";
  } catch {
    return true;
  }
}

function remember(open: boolean): void {
  try {
    localStorage.setItem(OPEN_KEY, open ? "open" : "closed");
  } catch {
    /* private mode: the panel opens again next time */
  }
}

/** A doubled card on the sheet, "×2 K♥" and who doubled it (docs/rules.md §7). */
function DoubledMark({ t, name, cardName, seat, card }: Names & { seat: number; card: number }) {
  const red = suitOf(card) === 1 || suitOf(card) === 2;
  return (
    <span class="dbl" data-doubled={cardText(card)} data-by={seat}>
      <span class="sr-only">{tx(t, "doubledBy", { card: cardName(card), name: <Name key="n">{name(seat)}</Name> })}</span>
      <span aria-hidden="true">
        <bdi dir="ltr">×2</bdi>{" "}
        <bdi dir="ltr" class={red ? "red" : undefined}>
          {cardText(card)[0]}
          {SUIT_SYMBOL[suitOf(card)]}
        </bdi>{" "}
        <Name>{name(seat)}</Name>
      </span>
    </span>
  );
}

function DealLine({ p, sheet, d }: { p: Names; sheet: Sheet; d: SheetDeal }) {
  return (
    <tr data-deal={d.dealIndex} data-contract={Contract[d.contract]}>
      <th scope="row">
        <span class="contract">{p.contractName(d.contract)}</span>
        {d.doubles.flatMap((a) => a.cards.map((c) => <DoubledMark key={`${a.seat}-${c}`} {...p} seat={a.seat} card={c} />))}
      </th>
      {sheet.columns.map((s) => (
        <td key={s} data-points={s}>
          <Num lang={p.t.lang} n={d.points[s] ?? 0} />
        </td>
      ))}
    </tr>
  );
}

function KingdomGroup({ p, sheet, k, current }: { p: Names; sheet: Sheet; k: SheetKingdom; current: boolean }) {
  const { t, name } = p;
  const cols = sheet.columns.length + 1;
  return (
    <tbody data-kingdom={k.kingdom} data-owner={k.owner} class={current ? "current" : undefined}>
      <tr class="kingdom-head">
        <th scope="rowgroup" colSpan={cols}>
          <span aria-hidden="true">♛ </span>
          {tx(t, "sheetKingdom", { n: k.kingdom + 1, name: <Name key="n">{name(k.owner)}</Name> })}
        </th>
      </tr>
      {k.deals.map((d) => (
        <DealLine key={d.dealIndex} p={p} sheet={sheet} d={d} />
      ))}
      {k.complete && (
        <tr class="running" data-running={k.kingdom}>
          <th scope="row">{tx(t, "afterKingdom", { n: k.kingdom + 1 })}</th>
          {sheet.columns.map((s) => (
            <td key={s}>
              <Num lang={t.lang} n={k.running[s] ?? 0} />
            </td>
          ))}
        </tr>
      )}
      {k.complete && sheet.partnership && (
        <tr class="running team" data-team-running={k.kingdom}>
          <th scope="row">{t("teamsCol")}</th>
          {k.teamRunning.map((n, i) => (
            <td key={i} colSpan={2}>
              <Num lang={t.lang} n={n} />
            </td>
          ))}
        </tr>
      )}
    </tbody>
  );
}

/** The sheet's grid, in its own horizontally scrolling box (a phone keeps the page's width). */
export function SheetTable({ t, g, name, contractName, cardName }: Names & { g: GameState }) {
  const sheet = buildSheet(g);
  const p: Names = { t, name, contractName, cardName };
  const lastKingdom = sheet.kingdoms[sheet.kingdoms.length - 1]?.kingdom;
  return (
    <div class="sheet-scroll" role="region" aria-label={t("scores")} tabIndex={0}>
      <table class={`scores sheet${sheet.partnership ? " partnership" : ""}`} data-partnership={sheet.partnership ? "1" : "0"}>
        <caption>{t("scores")}</caption>
        <thead>
          {sheet.partnership && (
            <tr class="teams">
              <td />
              {sheet.teams.map((team, i) => (
                <th scope="colgroup" colSpan={2} key={i} data-team={i}>
                  {tx(t, "team", { a: <Name key="a">{name(team[0] ?? 0)}</Name>, b: <Name key="b">{name(team[1] ?? 0)}</Name> })}
                </th>
              ))}
            </tr>
          )}
          <tr>
            <th scope="col">{t("contract")}</th>
            {sheet.columns.map((s) => (
              <th scope="col" key={s} data-col={s} class={s === g.seat ? "me" : undefined}>
                <Name>{name(s)}</Name>
              </th>
            ))}
          </tr>
        </thead>
        {sheet.kingdoms.map((k) => (
          <KingdomGroup key={k.kingdom} p={p} sheet={sheet} k={k} current={!g.finished && k.kingdom === lastKingdom} />
        ))}
        <tfoot>
          <tr class="grand">
            <th scope="row">{t("total")}</th>
            {sheet.columns.map((s) => (
              <td key={s} data-total={s}>
                <Num lang={t.lang} n={sheet.totals[s] ?? 0} />
              </td>
            ))}
          </tr>
          {sheet.partnership && (
            <tr class="grand team">
              <th scope="row">{t("teamsCol")}</th>
              {sheet.teamTotals.map((n, i) => (
                <td key={i} colSpan={2} data-team-total={i}>
                  <Num lang={t.lang} n={n} />
                </td>
              ))}
            </tr>
          )}
        </tfoot>
      </table>
    </div>
  );
}

/** The sheet during the game: a panel the player opens and closes (open unless he closed it). */
export function ScoreSheet(props: Names & { g: GameState }) {
  const [open, setOpen] = useState(remembered);
  return (
    <details class="sheet-panel" open={open}>
      <summary
        data-action="sheet"
        onClick={(e) => {
          // Opened and closed here, the choice stored at once (a reload right after keeps it).
          e.preventDefault();
          setOpen(!open);
          remember(!open);
        }}
      >
        {props.t("sheet")}
      </summary>
      <SheetTable {...props} />
    </details>
  );
}

type OverProps = Names & {
  g: GameState;
  newGame: () => void;
  playAgain?: (() => void) | undefined;
};

/** The end of the game: the ranking (places as docs/rules.md §8 gives them: ties share a place,
 * teams in partnership), "play again", the record's links, and the final sheet. */
export function GameOver(props: OverProps) {
  const { t, g, name, newGame, playAgain } = props;
  const lines = standings(g);
  const mine = lines.find((l) => l.seats.includes(g.seat));
  // Games with a bot seat are unrated (services/trix/scoring): the page says so.
  const withBots = g.seats.some((s) => s?.bot);
  return (
    <section class="card-box gameover" data-finished="1">
      <h1>{t("gameOver")}</h1>
      {mine && (
        <p class="result" data-result={mine.place === 1 ? "won" : "lost"}>
          {mine.place === 1 ? t("youWon") : tx(t, "yourPlace", { n: mine.place })}
        </p>
      )}
      <table class="standings">
        <caption>{t("rankingCap")}</caption>
        <thead>
          <tr>
            <th scope="col">{t("placeCol")}</th>
            <th scope="col">{t("player")}</th>
            <th scope="col">{t("points")}</th>
          </tr>
        </thead>
        <tbody class="ranking">
          {lines.map((l) => (
            <tr
              key={l.seats.join("-")}
              data-seat={l.seats.length === 1 ? l.seats[0] : undefined}
              data-team={l.seats.length > 1 ? (l.seats[0] ?? 0) % 2 : undefined}
              data-place={l.place}
              class={l.seats.includes(g.seat) ? "me" : undefined}
            >
              <td class={`place p${l.place}`}>
                <Num lang={t.lang} n={l.place} />
              </td>
              <th scope="row">
                {l.seats.map((s, i) => (
                  <span key={s}>
                    {i > 0 && " + "}
                    <Name>{name(s)}</Name>
                    {g.seats[s]?.bot && <span class="tag">{t("bot")}</span>}
                  </span>
                ))}
              </th>
              <td>
                <Num lang={t.lang} n={l.points} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {withBots && (
        <p class="note" data-unrated="1">
          {t("unratedBots")}
        </p>
      )}
      <div class="gameover-actions">
        {playAgain && (
          <button type="button" class="primary" data-action="play-again" onClick={playAgain}>
            {t("playAgain")}
          </button>
        )}
        {g.recordJson && (
          <a class="button" href="#/verify">
            {t("verifyThis")}
          </a>
        )}
        {g.recordJson && (
          <a class="button" href={`#/replay/${encodeURIComponent(g.tableId)}`}>
            {t("replay")}
          </a>
        )}
        <button type="button" onClick={newGame}>
          {t("newGame")}
        </button>
      </div>
      <h2>{t("finalSheet")}</h2>
      <SheetTable {...props} />
    </section>
  );
}
