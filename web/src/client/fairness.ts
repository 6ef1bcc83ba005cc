// The verifiable fair shuffle of docs/rules.md §11, recomputed in the browser (the Verify page,
// تحقق) exactly as services/trix/fairness.py does, with Web Crypto only: the server is
// never asked to check anything.
const NUM_CARDS = 52;
const CARDS_PER_HAND = 13;
const enc = new TextEncoder();

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error("Web Crypto (crypto.subtle) is not available: open the page on https or localhost");
  return s;
}

export function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  if (!/^([0-9a-f]{2})*$/.test(hex)) throw new Error("not lowercase hex");
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** §11 "commitment = SHA-256(server_seed) in lowercase hex", of the raw bytes. */
export async function commitment(serverSeed: Uint8Array<ArrayBuffer>): Promise<string> {
  return bytesToHex(new Uint8Array(await subtle().digest("SHA-256", serverSeed)));
}

/** §11 Shuffle: HMAC-SHA256(key=server_seed, msg=`${client_seed}:${n}:${k}`) for k = 0, 1, …
 * read as big-endian unsigned 32-bit words; Fisher-Yates from position 51 down to 1,
 * rejecting r >= 2**32 - (2**32 % (i + 1)). */
export async function shuffledDeck(serverSeed: Uint8Array<ArrayBuffer>, clientSeed: string, n: number): Promise<number[]> {
  const key = await subtle().importKey("raw", serverSeed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const words: number[] = [];
  let k = 0;
  let next = 0;
  const word = async (): Promise<number> => {
    if (next >= words.length) {
      const block = new DataView(await subtle().sign("HMAC", key, enc.encode(`${clientSeed}:${n}:${k}`)));
      k += 1;
      for (let o = 0; o < block.byteLength; o += 4) words.push(block.getUint32(o, false));
    }
    return words[next++] as number;
  };
  const deck = Array.from({ length: NUM_CARDS }, (_, i) => i); // "cards 0..51 in id order"
  for (let i = NUM_CARDS - 1; i > 0; i--) {
    const bound = i + 1;
    const limit = 2 ** 32 - (2 ** 32 % bound);
    let r = await word();
    while (r >= limit) r = await word();
    const j = r % bound;
    const t = deck[i] as number;
    deck[i] = deck[j] as number;
    deck[j] = t;
  }
  return deck;
}

/** The four hands of deal n (0 based over the whole game), each sorted by card id:
 * §11 "Seat s receives positions 13*s .. 13*s + 12". */
export async function dealFromSeeds(serverSeed: Uint8Array<ArrayBuffer>, clientSeed: string, n: number): Promise<number[][]> {
  const deck = await shuffledDeck(serverSeed, clientSeed, n);
  return [0, 1, 2, 3].map((s) => deck.slice(CARDS_PER_HAND * s, CARDS_PER_HAND * (s + 1)).sort((a, b) => a - b));
}
