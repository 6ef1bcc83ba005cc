// The fair shuffle exactly as docs/rules.md §11 writes it, so the client checks a finished
// game's record against the commitment it was shown at the start: no other rules code.
import { createHash, createHmac } from "node:crypto";

const SUITS = "CDHS";
const RANKS = "23456789TJQKA";

/** A card's text from its id (common.proto Card.id = suit_index * 13 + (rank - 2)). */
export function cardText(id: number): string {
  return `${RANKS[id % 13]}${SUITS[Math.floor(id / 13)]}`;
}

/** SHA-256 of the server seed's raw bytes, lower-case hex: the table's commitment. */
export function commitmentOf(serverSeedHex: string): string {
  return createHash("sha256").update(Buffer.from(serverSeedHex, "hex")).digest("hex");
}

/** The four hands (card texts, seat order) of deal `n`, by §11. */
export function dealHands(serverSeedHex: string, clientSeed: string, n: number): string[][] {
  const key = Buffer.from(serverSeedHex, "hex");
  let block = 0;
  let bytes = Buffer.alloc(0);
  let at = 0;
  const next = (): number => {
    if (at + 4 > bytes.length) {
      bytes = createHmac("sha256", key).update(`${clientSeed}:${n}:${block++}`, "utf8").digest();
      at = 0;
    }
    const r = bytes.readUInt32BE(at);
    at += 4;
    return r;
  };
  const cards = Array.from({ length: 52 }, (_, i) => i);
  for (let i = 51; i >= 1; i--) {
    const bound = 2 ** 32 - (2 ** 32 % (i + 1));
    let r = next();
    while (r >= bound) r = next();
    const j = r % (i + 1);
    [cards[i], cards[j]] = [cards[j] as number, cards[i] as number];
  }
  return [0, 1, 2, 3].map((s) => cards.slice(13 * s, 13 * s + 13).map(cardText));
}
