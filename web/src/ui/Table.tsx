// The table: seats around (me at the bottom, play moving to the right, docs/rules.md §1), the
// hand with the legal cards marked, the contract choice, doubling, the trick or the TRIX
// layout rows, the last trick, passes, scores (team totals in partnership), whose turn
// with a live countdown on the server's clock, notices, leaving, the final ranking.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { create } from "@bufbuild/protobuf";
import { CardSchema, Contract, Decision, Variant } from "../gen/trix/v1/common_pb";
import { CardListSchema } from "../gen/trix/v1/gateway_pb";
import type { Action } from "../gen/trix/v1/gateway_pb";
import { doublable, myTurn, secondsLeft } from "../client/state";
import type { GameState } from "../client/state";
import type { T } from "./App";
import { CONTRACT_KEYS } from "./i18n";
import type { Key, Lang } from "./i18n";
import { Name, Num, tx } from "./fmt";
import { CardFace, cardName } from "./Card";
import { Felt } from "./Felt";
import { GameOver, ScoreSheet } from "./ScoreSheet";

// The card faces live in ./Card (SVG, issue 39); History and the score sheet import them here too.
export { CardFace, cardName } from "./Card";

function useNow(active: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    const id = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(id);
  }, [active]);
  return now;
}

type Props = {
  t: T;
  lang: Lang;
  game: GameState;
  me: string;
  act: (k: Action["kind"]) => Promise<void>;
  newGame: () => void;
  /** The same variant again, from the game-over screen (players only). */
  playAgain?: () => void;
  spectator?: boolean;
  /** A spectator invitation to this table (a private table is watched by its players or with one, ADR 0018). */
  invite?: () => Promise<string>;
  /** The chat and the friends to invite (../social): in the flow below the hand, never over it. */
  social?: ComponentChildren;
};

/** The link that opens this table to watch it (the app's #/watch/<id> route). */
export function watchLink(tableId: string): string {
  return `${location.origin}${location.pathname}#/watch/${encodeURIComponent(tableId)}`;
}

/** The table's id behind a "copy link" control: the id itself never heads the screen. */
function CopyLink({ t, tableId }: { t: T; tableId: string }) {
  const [state, setState] = useState<"" | "copied" | "shown">("");
  const link = watchLink(tableId);
  return (
    <span class="copy-link">
      <button
        type="button"
        class="small"
        data-table={tableId}
        data-action="copy-link"
        onClick={() => {
          const done = () => setState("copied");
          navigator.clipboard?.writeText(link).then(done, () => setState("shown")) ?? setState("shown");
        }}
      >
        {state === "copied" ? t("linkCopied") : t("copyLink")}
      </button>
      {state === "shown" && <input readOnly dir="ltr" aria-label={t("copyLink")} value={link} onFocus={(e) => e.currentTarget.select()} />}
    </span>
  );
}

/** "Let the bot play" at a competition's seat (docs/rules.md §10): on, the bot plays his seat
 * (Action.auto_play true); off again, he takes it back. Its state is the table's (the seat's
 * `bot`), shown by the switch and a line beside it. */
function AutoPlaySwitch({ t, g, act }: { t: T; g: GameState; act: Props["act"] }) {
  const mine = g.seats[g.seat];
  if (!mine?.autoPlay || mine.left) return null;
  const on = mine.bot;
  return (
    <div class="auto-play" data-auto-play={on ? "on" : "off"}>
      <button type="button" role="switch" aria-checked={on} data-action="auto-play" onClick={() => void act({ case: "autoPlay", value: !on })}>
        <span class="switch" aria-hidden="true" />
        {t("letBotPlay")}
      </button>
      {on && <span class="hint">{t("botPlaysForYou")}</span>}
    </div>
  );
}

export function TableView({ t, game: g, act, newGame, playAgain, spectator = false, invite, social }: Props) {
  const now = useNow(!!g.turn);
  const [marked, setMarked] = useState<number[]>([]);
  const [confirmLeave, setConfirmLeave] = useState(false);
  const [invitation, setInvitation] = useState("");
  const mine = myTurn(g);
  const name = (s: number) => (s === g.seat ? t("you") : g.seats[s]?.name || t("seat", { n: s + 1 }));
  const contractName = (c: Contract) => (c ? t(CONTRACT_KEYS[c] as Key) : t("none"));
  const decision = g.turn?.decision ?? Decision.UNSPECIFIED;
  const legal = new Set(mine && decision === Decision.CARD ? (g.turn?.legalCards ?? []) : []);
  // docs/rules.md §2: 20 deals in TRIX and TRIX_PARTNERSHIP, 8 in the COMPLEX variants.
  const totalDeals = g.variant === Variant.TRIX || g.variant === Variant.TRIX_PARTNERSHIP ? 20 : 8;
  useEffect(() => setMarked([]), [g.turn?.turnSeq]);

  if (g.finished)
    return <GameOver t={t} g={g} name={name} contractName={contractName} cardName={(c) => cardName(t, c)} newGame={newGame} playAgain={spectator ? undefined : playAgain} />;

  const left = secondsLeft(g, now);
  const myNotices = g.notices.filter((n) => n.seat === g.seat || n.kind === "left");

  return (
    <section class="table" aria-label={t("title")} data-seq={String(g.sequence)}>
      <div class="status" role="status" aria-live="polite">
        {spectator && <span>{t("watching")}</span>}
        <CopyLink t={t} tableId={g.tableId} />
        <span>{tx(t, "deal", { n: g.dealIndex + 1, total: totalDeals })}</span>
        {g.owner >= 0 && <span data-kingdom={g.owner}>{g.owner === g.seat ? t("kingdomYours") : tx(t, "kingdom", { name: name(g.owner) })}</span>}
        <span>
          {t("contract")}: <b data-contract={Contract[g.contract]}>{contractName(g.contract)}</b>
        </span>
        {g.turn && (
          <span class={mine ? "mine" : ""} data-turn={mine ? "me" : "other"}>
            {mine ? t("yourTurn") : tx(t, "turnOf", { name: name(g.turn.seats[0] ?? 0) })} · <span class="countdown">{tx(t, "secondsLeft", { s: left })}</span>
          </span>
        )}
      </div>
      {myNotices.map((n, i) => (
        <p class="notice" role="status" key={i}>
          {n.kind === "auto-card" && n.card !== undefined
            ? t("autoCard", { card: cardName(t, n.card) })
            : n.kind === "auto-contract"
              ? t("autoContract", { contract: contractName(n.contract ?? Contract.UNSPECIFIED) })
              : n.kind === "auto-double"
                ? t("autoDouble")
                : tx(t, "seatLeftNotice", { name: name(n.seat) })}
        </p>
      ))}
      <Felt t={t} g={g} name={name} now={now} />

      {mine && decision === Decision.CONTRACT && (
        <div class="prompt" role="group" aria-label={t("chooseContract")}>
          <p>{t("chooseContract")}</p>
          {(g.turn?.legalContracts ?? []).map((c) => (
            <button type="button" key={c} data-contract={Contract[c]} onClick={() => void act({ case: "chooseContract", value: c })}>
              {contractName(c)}
            </button>
          ))}
        </div>
      )}
      {mine && decision === Decision.DOUBLE && (
        <div class="prompt" role="group" aria-label={t("doubleQuestion")}>
          <p>{t("doubleQuestion")}</p>
          {doublable(g).map((c) => (
            <button
              type="button"
              key={c}
              class="cardbtn"
              aria-pressed={marked.includes(c)}
              onClick={() => setMarked(marked.includes(c) ? marked.filter((x) => x !== c) : [...marked, c])}
            >
              <CardFace t={t} id={c} />
            </button>
          ))}
          <button
            type="button"
            data-action="double"
            disabled={!marked.length}
            onClick={() => void act({ case: "answerDouble", value: create(CardListSchema, { cards: marked.map((id) => ({ id })) }) })}
          >
            {t("doubleThese")}
          </button>
          <button type="button" data-action="no-double" onClick={() => void act({ case: "answerDouble", value: create(CardListSchema, { cards: [] }) })}>
            {t("noDouble")}
          </button>
        </div>
      )}
      {mine && decision === Decision.CARD && <p class="hint">{t("playCard")}</p>}
      <div class={`hand${mine ? " mine" : ""}`} dir="ltr" role="group" aria-label={t("hand")} style={{ "--n": String(g.hand.length) }}>
        {g.hand.map((c) => (
          <button
            type="button"
            key={c}
            class={`cardbtn${legal.has(c) ? " legal" : ""}`}
            disabled={!legal.has(c)}
            data-legal={legal.has(c) ? "1" : "0"}
            onClick={() => void act({ case: "playCard", value: create(CardSchema, { id: c }) })}
          >
            <CardFace t={t} id={c} />
          </button>
        ))}
      </div>

      {social}

      <ScoreSheet t={t} g={g} name={name} contractName={contractName} cardName={(c) => cardName(t, c)} />

      {!spectator && invite && !g.finished && (
        <div class="invite">
          {!invitation ? (
            <button type="button" class="small" data-action="invite" onClick={() => void invite().then(setInvitation, () => {})}>
              {t("invite")}
            </button>
          ) : (
            <label>
              {t("inviteShare")} <input readOnly dir="ltr" data-invitation={invitation} value={invitation} onFocus={(e) => e.currentTarget.select()} />
            </label>
          )}
        </div>
      )}

      {spectator && (
        <div class="leave">
          <button type="button" class="small" data-action="stop-watching" onClick={newGame}>
            {t("stopWatching")}
          </button>
        </div>
      )}
      {!spectator && <AutoPlaySwitch t={t} g={g} act={act} />}
      {!spectator && <div class="leave">
        {!confirmLeave ? (
          <button type="button" class="small" onClick={() => setConfirmLeave(true)}>
            {t("leave")}
          </button>
        ) : (
          <div role="alertdialog" aria-label={t("leave")}>
            <p>{g.stake > 0 ? t("leavePaid") : g.leaveEndsGame ? t("leaveCompetition") : t("leaveFree")}</p>
            <button type="button" onClick={() => void act({ case: "leave", value: true }).then(newGame)}>
              {t("confirm")}
            </button>
            <button type="button" onClick={() => setConfirmLeave(false)}>
              {t("stay")}
            </button>
          </div>
        )}
      </div>}
    </section>
  );
}
