// The felt (issue 39): the four seats around it (this player at the bottom, the partner
// opposite), the current trick in front of the players who played it, a taken trick held in
// place then swept to its taker (./trick.ts), the last trick on demand (its button in the
// corner), the TRIX layout as four suit rows; the sounds of a card played and a trick taken
// (a doubled card among the taken: its own sound).
import { useEffect, useRef, useState } from "preact/hooks";
import { Contract } from "../gen/trix/v1/common_pb";
import { suitOf } from "../client/cards";
import { isPartnership } from "../client/state";
import type { GameState, Played } from "../client/state";
import type { T } from "./App";
import { CardFace, SUIT_PATH } from "./Card";
import { tx } from "./fmt";
import { Seat } from "./Seat";
import { arrange, partnerOf, placeOf } from "./seats";
import type { Place } from "./seats";
import { play } from "./sound";
import { holdFor, shown, tableOf, takenKey } from "./trick";
import type { Hold, Shown } from "./trick";

/** How long the last trick shows when asked for (ms), unless asked to hide sooner. */
export const LAST_SHOWN_MS = 4000;
const PLACES: Place[] = ["top", "left", "right", "bottom"];

/** The trick area's content now, and the sounds of the table's cards and tricks. */
function useTrickShow(g: GameState): Shown {
  const key = takenKey(g.tableId, g.lastTrick);
  const prevKey = useRef<string | null>(null);
  const hold = useRef<Hold | null>(null);
  const since = useRef(0);
  const [, redraw] = useState(0);
  const now = Date.now();
  if (prevKey.current !== key) {
    if (prevKey.current === null || tableOf(prevKey.current) !== tableOf(key)) since.current = now;
    hold.current = holdFor(prevKey.current, key, g.lastTrick, now, hold.current, since.current);
    prevKey.current = key;
  }
  const s = shown(g.trick, hold.current, now);
  useEffect(() => {
    if (!s.next) return;
    const id = setTimeout(() => redraw((n) => n + 1), Math.max(0, s.next - Date.now()) + 10);
    return () => clearTimeout(id);
  }, [s.next]);

  // Sounds: a card (a hand got smaller), a trick taken (the hold starting), doubled or not.
  const cardsOut = g.handSizes.reduce((a, b) => a + b, 0);
  const seen = useRef<{ table: string; cards: number; hold: Hold | null }>({ table: g.tableId, cards: cardsOut, hold: hold.current });
  useEffect(() => {
    const was = seen.current;
    seen.current = { table: g.tableId, cards: cardsOut, hold: hold.current };
    if (was.table !== g.tableId) return;
    if (hold.current && hold.current !== was.hold) {
      const doubled = new Set(g.doubles.flatMap((d) => d.cards));
      play(hold.current.cards.some((p) => doubled.has(p.card)) ? "doubled" : "trick");
    } else if (cardsOut < was.cards) play("card");
  }, [g.tableId, cardsOut, key]);
  return s;
}

function Pip({ suit }: { suit: number }) {
  return (
    <svg class="pip" viewBox="-1 -1 2 2" aria-hidden="true">
      <path d={SUIT_PATH[suit] ?? ""} fill={suit === 1 || suit === 2 ? "#fca5a5" : "#fff"} />
    </svg>
  );
}

function Layout({ t, cards }: { t: T; cards: number[] }) {
  return (
    <div class="layout" aria-label={t("layout")} role="group">
      {[0, 1, 2, 3].map((suit) => (
        <div class="row" key={suit} data-suit={suit}>
          <Pip suit={suit} />
          <span class="run">
            {cards
              .filter((c) => suitOf(c) === suit)
              .sort((a, b) => a - b)
              .map((c) => (
                <CardFace t={t} id={c} small key={c} />
              ))}
          </span>
        </div>
      ))}
    </div>
  );
}

function TrickCards({ t, cards, mySeat }: { t: T; cards: Played[]; mySeat: number }) {
  return (
    <>
      {cards.map((p) => (
        <div class={`tc p-${placeOf(mySeat, p.seat)}`} key={p.card} data-seat={p.seat}>
          <CardFace t={t} id={p.card} />
        </div>
      ))}
    </>
  );
}

type Props = { t: T; g: GameState; name: (s: number) => string; now: number };

export function Felt({ t, g, name, now }: Props) {
  const seats = arrange(g.seat);
  const partnership = isPartnership(g.variant);
  const show = useTrickShow(g);
  const [lastShown, setLastShown] = useState(false);
  const lastKey = takenKey(g.tableId, g.lastTrick);
  useEffect(() => setLastShown(false), [lastKey]);
  useEffect(() => {
    if (!lastShown) return;
    const id = setTimeout(() => setLastShown(false), LAST_SHOWN_MS);
    return () => clearTimeout(id);
  }, [lastShown]);
  const dir = t.lang === "ar" ? "rtl" : "ltr";
  const trix = g.contract === Contract.TRIX;
  const last = !trix ? g.lastTrick : null;
  const onDemand = lastShown && last && show.phase === "play";
  const to = show.phase === "play" ? "" : ` to-${placeOf(g.seat, show.taker)}`;
  return (
    <div class={`felt${trix ? " trix" : ""}`} dir="ltr">
      {PLACES.map((p) => {
        const s = seats[p];
        return <Seat key={s} t={t} g={g} s={s} place={p} name={name(s)} partner={partnership && g.seat >= 0 && s === partnerOf(g.seat)} now={now} />;
      })}
      <div class="center">
        {trix ? (
          <Layout t={t} cards={g.layout} />
        ) : onDemand ? (
          <div class="trick last-shown" data-phase="last" data-count={last.cards.length}>
            <TrickCards t={t} cards={last.cards} mySeat={g.seat} />
            <p class="trick-caption" dir={dir}>{tx(t, "lastTrick", { name: name(last.taker) })}</p>
          </div>
        ) : (
          <div class={`trick ${show.phase}${to}`} data-phase={show.phase} data-count={show.cards.length}>
            <TrickCards t={t} cards={show.cards} mySeat={g.seat} />
          </div>
        )}
      </div>
      {last && (
        <button type="button" class="last" data-action="last-trick" aria-pressed={!!onDemand} onClick={() => setLastShown(!onDemand)}>
          <small dir={dir}>{tx(t, "lastTrick", { name: name(last.taker) })}</small>
          <span class="mini" dir="ltr">
            {last.cards.map((p) => (
              <CardFace t={t} id={p.card} small key={p.card} />
            ))}
          </span>
        </button>
      )}
    </div>
  );
}
