// The rules engine in the browser (issue 39, docs/adr/0025-engine-webassembly.md): the C engine
// the server runs (engine/src), compiled to WebAssembly by `make web-wasm`. Fetched only when a
// record is checked, never on the first load. Every rule is the engine's: this file moves
// numbers in and out of its memory (engine/wasm/trix_wasm.c says what each export does).

type Exports = {
  memory: WebAssembly.Memory;
  _initialize(): void;
  tw_buffer(): number;
  tw_events(): number;
  tw_n_events(): number;
  tw_event_size(): number;
  tw_init(variant: number, doubling: number, reveal: number, selfTake: number, tiebreak: number, earlyEnd: number): number;
  tw_provide(): number;
  tw_apply(seat: number, action: number): number;
  tw_detail(): number;
  tw_leave(seat: number): number;
  tw_phase(): number;
  tw_deal_index(): number;
  tw_owner(): number;
  tw_total(seat: number): number;
  tw_rank(seat: number): number;
  tw_eligible_doubles(seat: number): number;
  tw_to_act(): number;
};

export const PHASE_DOUBLING = 1;
export const PHASE_PLAY = 2;
export const PHASE_GAME_OVER = 4;
export const EVENT_DEAL_SCORED = 8;
const EVENT_SIZE = 24; // trix_event: kind, seat, a, b, r[4] (bytes), v[4] (int32)

/** The engine's options, as engine/include/trix_engine.h numbers them. */
export type EngineOptions = { doubling: boolean; reveal: number; selfTake: number; tiebreak: number; earlyEnd: boolean };

/** A refusal: the engine's status (docs/engine-api.md IllegalReason numbers) and its detail
 * (the seat to act, the suit led or the card that cannot be doubled; -1 when none). */
export type Refusal = { code: number; detail: number };

let source: () => Promise<ArrayBuffer> = async () => {
  const url = new URL("../../build/trix_engine.wasm", import.meta.url);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`the rules engine did not load (${res.status})`);
  return res.arrayBuffer();
};
let compiled: Promise<WebAssembly.Module> | null = null;

/** Where the .wasm bytes come from (the tests read the file; the page fetches it). */
export function setEngineSource(load: () => Promise<ArrayBuffer>): void {
  source = load;
  compiled = null;
}

/** Whether the module has been asked for yet (the first load must not ask). */
export function engineRequested(): boolean {
  return compiled !== null;
}

async function instance(): Promise<Exports> {
  if (!compiled) {
    compiled = source().then((bytes) => WebAssembly.compile(bytes));
    compiled.catch(() => (compiled = null));
  }
  const inst = await WebAssembly.instantiate(await compiled, {});
  const x = inst.exports as unknown as Exports;
  x._initialize();
  if (x.tw_event_size() !== EVENT_SIZE) throw new Error("the rules engine is not the one this page knows");
  return x;
}

/** One game in its own instance of the engine. */
export class WasmGame {
  private constructor(private readonly x: Exports) {}

  /** A game awaiting deal 0 with these decks supplied (throws on a refused deck). */
  static async create(variant: number, o: EngineOptions, decks: number[][][]): Promise<WasmGame> {
    const x = await instance();
    const st = x.tw_init(variant, +o.doubling, o.reveal, o.selfTake, o.tiebreak, +o.earlyEnd);
    if (st !== 0) throw new Error(`the engine refused the options (${st})`);
    const g = new WasmGame(x);
    for (const hands of decks) {
      g.bytes(52).set(hands.flat());
      const s = x.tw_provide();
      if (s !== 0) throw new Error(`the engine refused the deal (${s})`);
    }
    return g;
  }

  private bytes(n: number): Uint8Array {
    return new Uint8Array(this.x.memory.buffer, this.x.tw_buffer(), n);
  }

  get phase(): number {
    return this.x.tw_phase();
  }
  get dealIndex(): number {
    return this.x.tw_deal_index();
  }
  get owner(): number | null {
    const o = this.x.tw_owner();
    return o < 0 ? null : o;
  }
  toAct(): number[] {
    return Array.from(this.bytes(this.x.tw_to_act()));
  }
  /** Mask (TRIX_DBL_* bits) of the cards the seat may double in this deal. */
  eligibleDoubles(seat: number): number {
    return this.x.tw_eligible_doubles(seat);
  }

  /** Apply an action: a refusal, or the deal's scores when this action ended the deal (else null). */
  apply(seat: number, action: number): { refusal: Refusal } | { scores: number[] | null } {
    const st = this.x.tw_apply(seat, action);
    if (st !== 0) return { refusal: { code: st, detail: this.x.tw_detail() } };
    const n = this.x.tw_n_events();
    const view = new DataView(this.x.memory.buffer, this.x.tw_events(), n * EVENT_SIZE);
    for (let i = 0; i < n; i++) {
      if (view.getUint8(i * EVENT_SIZE) === EVENT_DEAL_SCORED)
        return { scores: [0, 1, 2, 3].map((s) => view.getInt32(i * EVENT_SIZE + 8 + 4 * s, true)) };
    }
    return { scores: null };
  }

  leave(seat: number): number {
    return this.x.tw_leave(seat);
  }
  totals(): number[] {
    return [0, 1, 2, 3].map((s) => this.x.tw_total(s));
  }
  ranking(): number[] | null {
    return this.phase === PHASE_GAME_OVER ? [0, 1, 2, 3].map((s) => this.x.tw_rank(s)) : null;
  }
}
