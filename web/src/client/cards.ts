// Cards as docs/rules.md §1 numbers them: id = suit_index * 13 + (rank - 2), suits C, D, H, S.
export const RANKS = "23456789TJQKA";
export const SUITS = "CDHS";

export function cardText(id: number): string {
  return `${RANKS[id % 13]}${SUITS[Math.floor(id / 13)]}`;
}

/** The id of a card written as in §1 (`TD`, never `10D`); null when it is not one. */
export function cardId(text: string): number | null {
  if (text.length !== 2) return null;
  const rank = RANKS.indexOf(text.charAt(0));
  const suit = SUITS.indexOf(text.charAt(1));
  return rank < 0 || suit < 0 ? null : suit * 13 + rank;
}

export function suitOf(id: number): number {
  return Math.floor(id / 13);
}

export function rankOf(id: number): number {
  return (id % 13) + 2;
}
