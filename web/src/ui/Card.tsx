// Card faces and backs as inline SVG (issue 39): drawn here, not 52 image files, so the first
// load stays small. A large rank and suit in the top corner (the part an overlapped hand
// shows), red hearts and diamonds, black clubs and spades, J/Q/K on a framed panel with their
// letter and suit, the ace's one large pip. Each face is an image named by its card in the
// page's language (`cardName`): the hand's buttons and the trick read out as cards.
import type { T } from "./App";
import type { Key } from "./i18n";
import { cardText, rankOf, suitOf } from "../client/cards";
import "./table.css";

const SUIT_KEY: Key[] = ["suitC", "suitD", "suitH", "suitS"];

/** The suits as paths in a 2×2 box around (0, 0), clubs, diamonds, hearts, spades (§1 order):
 * the same on every device, where a font's ♥ may come out as a coloured emoji. */
export const SUIT_PATH = [
  "M0,-0.95a0.4,0.4 0 1,1 0,0.01zM-0.5,-0.05a0.4,0.4 0 1,1 0,0.01zM0.5,-0.05a0.4,0.4 0 1,1 0,0.01zM-0.1,0L-0.32,0.95L0.32,0.95L0.1,0Z",
  "M0,-1L0.72,0L0,1L-0.72,0Z",
  "M0,-0.45C-0.25,-1.05 -1.05,-0.85 -0.95,-0.2C-0.88,0.3 -0.3,0.6 0,1C0.3,0.6 0.88,0.3 0.95,-0.2C1.05,-0.85 0.25,-1.05 0,-0.45Z",
  "M0,-1C-0.35,-0.5 -1,-0.2 -0.92,0.3C-0.85,0.72 -0.3,0.72 -0.1,0.42L-0.3,0.98L0.3,0.98L0.1,0.42C0.3,0.72 0.85,0.72 0.92,0.3C1,-0.2 0.35,-0.5 0,-1Z",
];

const RED = "#c81e1e";
const BLACK = "#151515";

export function cardName(t: T, id: number): string {
  if (!Number.isInteger(id) || id < 0 || id > 51) return "?"; // never a card id: no crash for it
  const r = rankOf(id);
  const rank = r > 10 ? t(`rank${r}` as Key) : String(r);
  return t("cardOf", { rank, suit: t(SUIT_KEY[suitOf(id)] as Key) });
}

/** What a card's corner reads: 2-10, J, Q, K, A. */
export function rankLabel(id: number): string {
  const r = rankOf(id);
  return r <= 10 ? String(r) : (["J", "Q", "K", "A"][r - 11] ?? "?");
}

function Pip({ suit, x, y, size, fill }: { suit: number; x: number; y: number; size: number; fill: string }) {
  return <path d={SUIT_PATH[suit] ?? ""} fill={fill} transform={`translate(${x} ${y}) scale(${size})`} />;
}

/** One corner: the rank over the suit, at the card's top left (the other corner turned). */
function Corner({ id, fill, turned }: { id: number; fill: string; turned?: boolean }) {
  const label = rankLabel(id);
  return (
    <g transform={turned ? "rotate(180 25 35)" : undefined}>
      <text x="8.5" y="16" text-anchor="middle" font-size={label.length > 1 ? 13 : 15} font-weight="700" letter-spacing={label.length > 1 ? -1.2 : 0} fill={fill}>
        {label}
      </text>
      <Pip suit={suitOf(id)} x={8.5} y={24} size={5} fill={fill} />
    </g>
  );
}

/** A card's face: `small` on the layout, the last trick and doubled-card tags. */
export function CardFace({ t, id, small }: { t: T; id: number; small?: boolean }) {
  if (!Number.isInteger(id) || id < 0 || id > 51) return <span class="face unknown">?</span>;
  const suit = suitOf(id);
  const r = rankOf(id);
  const red = suit === 1 || suit === 2;
  const fill = red ? RED : BLACK;
  return (
    <svg
      class={`face${red ? " red" : ""}${small ? " small" : ""}`}
      viewBox="0 0 50 70"
      role="img"
      aria-label={cardName(t, id)}
      data-card={cardText(id)}
      font-family="system-ui, 'Segoe UI', Arial, sans-serif"
    >
      <rect x="0.75" y="0.75" width="48.5" height="68.5" rx="4.5" fill="#fff" stroke="#8a8378" stroke-width="1.2" />
      <Corner id={id} fill={fill} />
      <Corner id={id} fill={fill} turned />
      {r > 10 && r < 14 ? (
        <g>
          <rect x="16" y="13" width="26" height="44" rx="3" fill={red ? "#fde8e8" : "#e5e9f5"} stroke={fill} stroke-width="1" />
          <text x="29" y="39" text-anchor="middle" font-size="22" font-weight="800" fill={fill}>
            {rankLabel(id)}
          </text>
          <Pip suit={suit} x={29} y={48} size={5} fill={fill} />
        </g>
      ) : (
        <Pip suit={suit} x={29} y={36} size={r === 14 ? 13 : 10} fill={fill} />
      )}
    </svg>
  );
}

/** A card's back: a hidden hand's cards at the other seats (decoration, never read out). */
export function CardBack() {
  return (
    <svg class="back" viewBox="0 0 50 70" aria-hidden="true">
      <rect x="0.75" y="0.75" width="48.5" height="68.5" rx="4.5" fill="#7f1d1d" stroke="#f5e6c8" stroke-width="1.2" />
      <rect x="5" y="5" width="40" height="60" rx="2.5" fill="none" stroke="#e7c77d" stroke-width="1" />
      <path d="M5,5L45,65M45,5L5,65M25,5L5,35L25,65L45,35Z" stroke="#e7c77d" stroke-width="0.8" fill="none" opacity="0.7" />
      <circle cx="25" cy="35" r="6" fill="#e7c77d" />
    </svg>
  );
}
