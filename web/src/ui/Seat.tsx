// One seat around the felt (issue 39): an avatar (the name's initials on the name's colour, a
// robot badge on a bot), the name, what marks the seat (bot, left, the kingdom's owner ♛,
// partner), its hidden hand as backs with their count, passes and doubled cards; whose turn it
// is glows, with the countdown on the seat's avatar.
import { Decision } from "../gen/trix/v1/common_pb";
import { secondsLeft } from "../client/state";
import type { GameState } from "../client/state";
import type { T } from "./App";
import { CardBack, CardFace } from "./Card";
import { Name, tx } from "./fmt";
import { avatarColour, initials } from "./seats";
import type { Place } from "./seats";

/** The turn's full time (s) from the table's options (docs/rules.md §9), 0 when unknown. */
function turnSeconds(g: GameState): number {
  const o = g.options;
  const d = g.turn?.decision;
  if (!o || d === undefined) return 0;
  return (d === Decision.CARD ? o.cardTimeoutS : d === Decision.CONTRACT ? o.contractTimeoutS : d === Decision.DOUBLE ? o.doubleTimeoutS : 0) ?? 0;
}

function Robot() {
  return (
    <svg class="botmark" viewBox="0 0 16 16" aria-hidden="true">
      <circle cx="8" cy="8" r="8" fill="#fbbf24" />
      <rect x="3.5" y="5.5" width="9" height="7" rx="1.5" fill="#1f2937" />
      <circle cx="6.3" cy="9" r="1.1" fill="#fbbf24" />
      <circle cx="9.7" cy="9" r="1.1" fill="#fbbf24" />
      <path d="M8,5.5V3" stroke="#1f2937" stroke-width="1.2" />
      <circle cx="8" cy="2.8" r="0.9" fill="#1f2937" />
    </svg>
  );
}

type Props = { t: T; g: GameState; s: number; place: Place; name: string; partner: boolean; now: number };

export function Seat({ t, g, s, place, name, partner, now }: Props) {
  const info = g.seats[s];
  const turn = !!g.turn?.seats.includes(s);
  const out = g.out.find((o) => o.seat === s);
  const real = info?.name || name;
  const left = turn ? secondsLeft(g, now) : 0;
  const total = turnSeconds(g);
  const frac = total > 0 ? Math.min(1, left / total) : 1;
  const count = g.handSizes[s] ?? 0;
  const mine = s === g.seat;
  return (
    <div class={`seat ${place}${turn ? " turn" : ""}${partner ? " partner" : ""}${info?.left ? " gone" : ""}`} data-seat={s} data-place={place} data-partner={partner ? "1" : undefined} dir={t.lang === "ar" ? "rtl" : "ltr"}>
      <div class="avatar-box" aria-hidden="true">
        <span class="avatar" data-initials={initials(real)} style={{ background: avatarColour(real) }}>
          {initials(real)}
        </span>
        {info?.bot && <Robot />}
        {turn && (
          <span class={`seat-clock${left <= 5 ? " low" : ""}`} style={{ "--frac": String(frac) }}>
            {left}
          </span>
        )}
      </div>
      <div class="who">
        <span class="name">
          <Name>{name}</Name>
        </span>
        {info?.bot && <span class="tag">{t("bot")}</span>}
        {partner && <span class="tag partner-tag">{t("partner")}</span>}
        {info?.left && <span class="tag">{t("leftTable")}</span>}
        {s === g.owner && <span class="tag owner">♛</span>}
      </div>
      <div class="meta">
        {!mine && count > 0 && (
          <span class="backs" data-count={count}>
            <span class="fan" aria-hidden="true">
              {Array.from({ length: Math.min(count, 4) }, (_, i) => (
                <CardBack key={i} />
              ))}
            </span>
            {tx(t, "cardsLeft", { n: count })}
          </span>
        )}
        {g.passes.includes(s) && <span class="tag">{t("passed")}</span>}
        {out && <span class="tag">{tx(t, "out", { place: out.place })}</span>}
        {g.doubles
          .find((d) => d.seat === s)
          ?.cards.map((c) => (
            <span class="tag dbl" key={c}>
              ×2 <CardFace t={t} id={c} small />
            </span>
          ))}
      </div>
    </div>
  );
}
