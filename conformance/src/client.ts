// The gateway API's conformance client (issue 40), written from proto/trix/v1/*.proto,
// README.md and docs/rules.md alone: native gRPC over HTTP/2 (@grpc/grpc-js, the protos
// loaded at run time by @grpc/proto-loader) through the edge, as a mobile app talks.
//
// For each variant it signs in, creates a private game and starts it with bots, plays every
// turn of its seat from what the API gives it (TurnStarted.legal_contracts / legal_cards: no
// rules code of its own), drops its Session stream mid-deal and resumes it with no gap,
// and checks the finished game's record (docs/rules.md §11-§12) against what it was shown.
// Between games it trips the rate limit on purpose, on a plain call and on the stream, and
// waits the delay it is given before sending again. The last line of its output is a JSON
// summary; the exit status is 0 when the run completed (the summary's numbers are the
// verdict, asserted by tests/conformance).
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { cardText, commitmentOf, dealHands } from "./fairness.js";
import { retryDelayMs } from "./wire.js";

// -- the messages this client reads (proto-loader: keepCase, enums as names, longs as strings)

interface Card {
  id: number;
  text: string;
}
interface Seat {
  index: number;
  player_id: string;
  bot: boolean;
  display_name: string;
  client_seed: string;
}
interface TurnStarted {
  seats: number[];
  decision: string;
  deal_index: number;
  client_seeds: boolean;
  legal_cards: Card[];
  legal_contracts: string[];
}
interface TableEvent {
  table_id: string;
  sequence: string;
  body?: string;
  table_created?: { variant: string; seats: Seat[]; commitment: string };
  deal_started?: { deal_index: number; hand: Card[] };
  contract_chosen?: { seat: number; automatic: boolean };
  double_answered?: { answer: { seat: number } | null; automatic: boolean };
  card_played?: { deal_index: number; seat: number; card: Card; automatic: boolean };
  game_ended?: { record_json: string; totals: { values: number[] } | null };
  turn_started?: TurnStarted;
}
interface ClientError {
  code: string;
  message: string;
  action_id: string;
  retry_delay?: { seconds: string; nanos: number } | null;
}
interface Ticket {
  ticket_id: string;
  state: string;
  table_id: string;
  seat: number;
}
interface SessionResponse {
  kind?: string;
  request_id: string;
  event?: TableEvent;
  event_batch?: { events: TableEvent[]; accepted: { action_id: string } | null };
  ticket?: Ticket;
  accepted?: { action_id: string; sequence: string };
  error?: ClientError;
  snapshot?: { sequence: string };
  pong?: boolean;
  query?: { game_record?: { record_json: string } };
  private_game?: { code: string; ticket: Ticket };
  private_started?: { table_id: string };
  resumed?: { table_id: string; seat: number; after_sequence: string };
}
interface RecordDeal {
  hands?: string[][];
  plays: { seat: number; card: string }[];
}
interface GameRecord {
  variant: string;
  fairness: { commitment: string; server_seed: string | null; client_seed: string };
  deals: RecordDeal[];
  totals: number[];
}

type Request = Record<string, unknown>;
type Stream = grpc.ClientDuplexStream<Request, SessionResponse>;
type Unary = (req: Request, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;
type Stub = grpc.Client & Record<string, any>;

const VARIANTS = ["VARIANT_TRIX", "VARIANT_TRIX_PARTNERSHIP", "VARIANT_COMPLEX", "VARIANT_COMPLEX_PARTNERSHIP"];
const AUTOMATIC_KINDS = ["contract_chosen", "double_answered", "card_played"] as const;

const FALLBACK_DELAY_MS = 100;

class Failure extends Error {}

/** A google.protobuf.Duration in milliseconds; null when absent. */
function delayMs(d: { seconds: string; nanos: number } | null | undefined): number | null {
  return d ? Number(d.seconds) * 1000 + d.nanos / 1e6 : null;
}

/** A deterministic choice among the legal moves the server gave (a fixed seed, no rules). */
class Chooser {
  constructor(private state: number) {}
  pick<T>(items: T[]): T {
    this.state = (Math.imul(this.state, 1103515245) + 12345) >>> 0;
    return items[this.state % items.length] as T;
  }
}

interface GameResult {
  variant: string;
  table_id: string;
  seat: number;
  deals: number;
  turns_played: number;
  illegal_actions: number;
  turns_lost_to_timer: number;
  actions_rate_limited: number;
  rate_limit_delays_missing: number;
  deal_index_mismatches: number;
  sequence_gaps: number;
  resume: { replayed_events: number; gaps: number; duplicates: number; acknowledged: boolean; first_sequence: string };
  record_verified: boolean;
  record_problems: string[];
}

class Player {
  readonly stub: Stub;
  token = "";
  playerId = "";

  constructor(
    readonly target: string,
    Service: grpc.ServiceClientConstructor,
    readonly name: string,
  ) {
    this.stub = new Service(target, grpc.credentials.createInsecure()) as Stub;
  }

  metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${this.token}`);
    return md;
  }

  unary<T>(method: string, req: Request, auth = true, deadlineMs = 20000): Promise<T> {
    const fn = (this.stub[method] as Unary).bind(this.stub);
    const md = auth ? this.metadata() : new grpc.Metadata();
    return new Promise((resolve, reject) => {
      const call = fn as unknown as (
        r: Request,
        m: grpc.Metadata,
        o: grpc.CallOptions,
        cb: (e: grpc.ServiceError | null, v: unknown) => void,
      ) => void;
      call(req, md, { deadline: Date.now() + deadlineMs }, (err, res) => (err ? reject(err) : resolve(res as T)));
    });
  }

  async signIn(): Promise<void> {
    const reply = await this.unary<{ player_id: string; token: string }>(
      "SignIn",
      { device_secret: `conformance-${this.name}-${process.pid}-${Date.now()}`, display_name: this.name },
      false,
    );
    this.token = reply.token;
    this.playerId = reply.player_id;
  }
}

/** One Session stream and the messages it has brought, awaited one by one. */
class Session {
  readonly call: Stream;
  private queue: SessionResponse[] = [];
  private waiters: ((m: SessionResponse | null) => void)[] = [];
  ended = false;
  endError = "";

  constructor(player: Player) {
    this.call = player.stub.Session(player.metadata()) as Stream;
    this.call.on("data", (m: SessionResponse) => this.put(m));
    this.call.on("error", (e: grpc.ServiceError) => {
      if (e.code !== grpc.status.CANCELLED) this.endError = `${grpc.status[e.code]}: ${e.details}`;
      this.finish();
    });
    this.call.on("end", () => this.finish());
  }

  private put(m: SessionResponse): void {
    const w = this.waiters.shift();
    if (w) w(m);
    else this.queue.push(m);
  }

  private finish(): void {
    this.ended = true;
    for (const w of this.waiters.splice(0)) w(null);
  }

  send(req: Request): Promise<void> {
    return new Promise((resolve) => this.call.write(req, () => resolve()));
  }

  /** The next message, or null when the stream ended or `timeoutMs` passed. */
  next(timeoutMs: number): Promise<SessionResponse | null> {
    const m = this.queue.shift();
    if (m) return Promise.resolve(m);
    if (this.ended) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(null);
      }, timeoutMs);
      const waiter = (v: SessionResponse | null): void => {
        clearTimeout(timer);
        resolve(v);
      };
      this.waiters.push(waiter);
    });
  }

  close(): void {
    this.call.cancel();
  }
}

function eventsOf(m: SessionResponse): TableEvent[] {
  if (m.kind === "event" && m.event) return [m.event];
  if (m.kind === "event_batch" && m.event_batch) return m.event_batch.events;
  return [];
}

/** One game of one variant at a private table, the client's seat against three bots. */
class Game {
  private session: Session;
  private tableId = "";
  private seat = -1;
  private lastSeq = 0n;
  private deal = -1;
  private readonly chooser: Chooser;
  private created: TableEvent["table_created"] | null = null;
  private readonly hands = new Map<number, string[]>();
  private readonly plays = new Map<number, { seat: number; card: string }[]>();
  private pending: { turn: TurnStarted; sequence: bigint } | null = null;
  private readonly sent = new Map<string, Request>();
  private ended: TableEvent["game_ended"] | null = null;
  private dropDone = false;
  private cardTurnsInDeal = new Map<number, number>();
  readonly result: GameResult;

  constructor(
    private readonly player: Player,
    private readonly variant: string,
    seed: number,
  ) {
    this.session = new Session(player);
    this.chooser = new Chooser(seed);
    this.result = {
      variant,
      table_id: "",
      seat: -1,
      deals: 0,
      turns_played: 0,
      illegal_actions: 0,
      turns_lost_to_timer: 0,
      actions_rate_limited: 0,
      rate_limit_delays_missing: 0,
      deal_index_mismatches: 0,
      sequence_gaps: 0,
      resume: { replayed_events: 0, gaps: 0, duplicates: 0, acknowledged: false, first_sequence: "" },
      record_verified: false,
      record_problems: [],
    };
  }

  private clientSeed(): string {
    return `conformance-${this.variant.toLowerCase()}`;
  }

  private createRequest(): Request {
    return {
      request_id: "create",
      batch_events: true,
      create_private: { wish: { variant: this.variant }, client_seed: this.clientSeed() },
    };
  }

  async play(deadlineMs: number): Promise<GameResult> {
    await this.session.send(this.createRequest());
    const deadline = Date.now() + deadlineMs;
    while (!this.ended) {
      const m = await this.session.next(Math.max(1, deadline - Date.now()));
      if (m === null) {
        if (Date.now() >= deadline) throw new Failure(`${this.variant}: the game did not end in time`);
        throw new Failure(`${this.variant}: the stream ended: ${this.session.endError || "no status"}`);
      }
      await this.onMessage(m);
    }
    this.session.close();
    await this.verifyRecord();
    return this.result;
  }

  private async onMessage(m: SessionResponse): Promise<void> {
    if (m.kind === "private_game" && m.private_game) {
      await this.session.send({ request_id: "start", start_private: { code: m.private_game.code } });
    } else if (m.kind === "ticket" && m.ticket && m.ticket.state === "TICKET_STATE_MATCHED") {
      this.tableId = m.ticket.table_id;
      this.seat = m.ticket.seat;
      this.result.table_id = this.tableId;
      this.result.seat = this.seat;
    } else if (m.kind === "error" && m.error?.code === "RESOURCE_EXHAUSTED" && this.sent.has(m.error.action_id)) {
      // Refused by the rate limit (bots answer at once, so the seat's turns can come faster
      // than the limit): it cost nothing; wait the delay given, then send it again.
      const delay = delayMs(m.error.retry_delay);
      this.result.actions_rate_limited += 1;
      if (delay === null) this.result.rate_limit_delays_missing += 1;
      await sleep(delay ?? FALLBACK_DELAY_MS);
      await this.session.send({ request_id: m.error.action_id, action: this.sent.get(m.error.action_id) });
    } else if (m.kind === "error" && m.error) {
      if (m.error.action_id) {
        this.result.illegal_actions += 1;
        this.result.record_problems.push(`action ${m.error.action_id} refused: ${m.error.code} ${m.error.message}`);
      } else throw new Failure(`${this.variant}: request ${m.request_id} refused: ${m.error.code} ${m.error.message}`);
    }
    const events = eventsOf(m);
    for (const e of events) this.onEvent(e, false);
    if (events.length) await this.act();
  }

  private onEvent(e: TableEvent, replay: boolean): void {
    if (!this.tableId) this.tableId = e.table_id;
    const seq = BigInt(e.sequence);
    if (seq <= this.lastSeq) {
      if (replay) this.result.resume.duplicates += 1;
      return;
    }
    if (seq !== this.lastSeq + 1n && this.lastSeq !== 0n) {
      if (replay) this.result.resume.gaps += 1;
      else this.result.sequence_gaps += 1;
    }
    this.lastSeq = seq;
    if (e.table_created) this.created = e.table_created;
    if (e.deal_started) {
      this.result.deals += 1;
      this.deal = e.deal_started.deal_index;
      this.hands.set(this.deal, e.deal_started.hand.map((c) => cardText(c.id)));
    }
    if (e.card_played) {
      // A card belongs to the deal last started; its own deal_index should say the same.
      if (e.card_played.deal_index !== this.deal) this.result.deal_index_mismatches += 1;
      const list = this.plays.get(this.deal) ?? [];
      list.push({ seat: e.card_played.seat, card: cardText(e.card_played.card.id) });
      this.plays.set(this.deal, list);
    }
    for (const kind of AUTOMATIC_KINDS) {
      const body = e[kind];
      if (!body) continue;
      const seat = kind === "double_answered" ? (e.double_answered?.answer?.seat ?? -1) : (body as { seat: number }).seat;
      if (seat === this.seat && body.automatic) this.result.turns_lost_to_timer += 1;
      if (seat === this.seat) this.pending = null; // the seat's turn is answered
    }
    if (e.turn_started && e.turn_started.seats.includes(this.seat)) {
      this.pending = { turn: e.turn_started, sequence: seq };
    } else if (e.turn_started) this.pending = null;
    if (e.game_ended) this.ended = e.game_ended;
  }

  /** Answer the seat's pending turn from the legal moves the server gave. */
  private async act(): Promise<void> {
    const p = this.pending;
    if (!p || this.ended) return;
    const t = p.turn;
    const actionId = `${this.tableId}-${p.sequence}`;
    if (this.sent.has(actionId)) return;
    const action: Request = { table_id: this.tableId, action_id: actionId, last_seen_sequence: this.lastSeq.toString() };
    if (t.client_seeds) action.client_seed = this.clientSeed();
    else if (t.decision === "DECISION_CONTRACT") action.choose_contract = this.chooser.pick(t.legal_contracts);
    else if (t.decision === "DECISION_DOUBLE") {
      // Any subset of the cards it may double is legal (gateway.proto Action.answer_double):
      // double them all on even deals, none on odd ones.
      action.answer_double = { cards: t.deal_index % 2 === 0 ? t.legal_cards.map((c) => ({ id: c.id })) : [] };
    } else if (t.decision === "DECISION_CARD") {
      if (t.legal_cards.length === 0) throw new Failure(`${this.variant}: a card turn with no legal card at ${p.sequence}`);
      action.play_card = { id: this.chooser.pick(t.legal_cards).id };
      const n = (this.cardTurnsInDeal.get(t.deal_index) ?? 0) + 1;
      this.cardTurnsInDeal.set(t.deal_index, n);
      if (!this.dropDone && t.deal_index >= 1 && n === 4) {
        this.dropDone = true;
        this.sent.set(actionId, action);
        this.result.turns_played += 1;
        await this.dropAndResume(action);
        return;
      }
    } else throw new Failure(`${this.variant}: unknown decision ${t.decision}`);
    this.sent.set(actionId, action);
    this.result.turns_played += 1;
    await this.session.send({ request_id: actionId, action });
  }

  /** Send the action and drop the stream at once, let the table move on, then resume on a
   * new stream from the last sequence seen: the events in between come in order, no gap. */
  private async dropAndResume(action: Request): Promise<void> {
    await this.session.send({ request_id: String(action.action_id), action });
    this.session.close();
    const from = this.lastSeq;
    // Wait (a plain call) until the table has moved past the last event seen; were the
    // action lost with the stream, send it again by its idempotency key.
    for (let i = 0; ; i++) {
      const view = await this.player.unary<{ view: { sequence: string } }>("GetView", { table_id: this.tableId });
      if (BigInt(view.view.sequence) > from) break;
      if (i === 20) {
        await this.player.unary("SubmitAction", { action });
      }
      if (i > 100) throw new Failure(`${this.variant}: the table did not move after the drop`);
      await sleep(50);
    }
    this.session = new Session(this.player);
    await this.session.send({
      request_id: "resume",
      batch_events: true,
      resume: { table_id: this.tableId, after_sequence: from.toString() },
    });
    let first = true;
    for (;;) {
      const m = await this.session.next(10000);
      if (m === null) throw new Failure(`${this.variant}: nothing after resume: ${this.session.endError}`);
      if (m.kind === "resumed" && m.request_id === "resume") {
        this.result.resume.acknowledged = true;
        continue;
      }
      if (m.kind === "snapshot") throw new Failure(`${this.variant}: a snapshot instead of the events after ${from}`);
      const events = eventsOf(m);
      if (!events.length) {
        await this.onMessage(m);
        continue;
      }
      if (first) this.result.resume.first_sequence = events[0]?.sequence ?? "";
      first = false;
      for (const e of events) {
        this.result.resume.replayed_events += 1;
        this.onEvent(e, true);
      }
      break;
    }
    await this.act();
  }

  private problem(text: string): void {
    this.result.record_problems.push(text);
  }

  /** docs/rules.md §11-§12: the record's commitment is the one shown at creation, the server
   * seed hashes to it, the client seed holds the seats' seeds, every deal's hands are the
   * shuffle's (the client's own hand as it was dealt), every play is one it saw. */
  private async verifyRecord(): Promise<void> {
    const ended = this.ended;
    if (!ended || !this.created) return this.problem("no GameEnded or TableCreated");
    const record = JSON.parse(ended.record_json) as GameRecord;
    // The scoring service stores the record from the table's events, a moment after
    // GameEnded reached the players: NOT_FOUND until then.
    let queried: { game_record?: { record_json: string } } = {};
    for (let i = 0; ; i++) {
      try {
        queried = await this.player.unary("Query", { game_record: { table_id: this.tableId } });
        break;
      } catch (err) {
        if ((err as grpc.ServiceError).code !== grpc.status.NOT_FOUND || i >= 100) throw err;
        await sleep(100);
      }
    }
    const stored = JSON.parse(queried.game_record?.record_json ?? "null") as GameRecord | null;
    if (!stored || JSON.stringify(stored.fairness) !== JSON.stringify(record.fairness)) {
      this.problem("the stored record's fairness differs from GameEnded's");
    }
    if (stored && stored.deals.length !== record.deals.length) this.problem("the stored record has other deals");
    const f = record.fairness;
    if (f.commitment !== this.created.commitment) this.problem("commitment differs from TableCreated's");
    if (!f.server_seed) return this.problem("no server seed in a finished game's record");
    if (commitmentOf(f.server_seed) !== f.commitment) this.problem("SHA-256(server_seed) is not the commitment");
    const seeds = f.client_seed.split("|");
    if (seeds.length !== 4 || seeds[this.seat] !== this.clientSeed()) this.problem("client_seed lacks our seed");
    if (record.deals.length !== this.result.deals) this.problem(`${record.deals.length} deals, ${this.result.deals} seen`);
    record.deals.forEach((deal, n) => {
      const derived = dealHands(f.server_seed as string, f.client_seed, n);
      if (deal.hands && JSON.stringify(deal.hands.map((h) => [...h].sort())) !== JSON.stringify(derived.map((h) => [...h].sort()))) {
        this.problem(`deal ${n}: hands are not the ones §11 derives`);
      }
      const mine = this.hands.get(n);
      if (!mine || JSON.stringify([...mine].sort()) !== JSON.stringify([...(derived[this.seat] ?? [])].sort())) {
        this.problem(`deal ${n}: the hand dealt to us is not the one §11 derives`);
      }
      if (JSON.stringify(deal.plays.map((p) => [p.seat, p.card])) !== JSON.stringify((this.plays.get(n) ?? []).map((p) => [p.seat, p.card]))) {
        this.problem(`deal ${n}: the record's plays are not the ones seen`);
      }
    });
    if (JSON.stringify(record.totals) !== JSON.stringify(ended.totals?.values ?? [])) this.problem("totals differ from GameEnded's");
    this.result.record_verified = this.result.record_problems.length === 0;
  }
}

interface RateLimitResult {
  met: boolean;
  retry_delay_ms: number | null;
  honoured: boolean;
  refused: number;
}

/** Plain calls as fast as possible until RESOURCE_EXHAUSTED; wait the RetryInfo delay they
 * carry (every refusal must carry one); the next call is served. */
async function tripPlainCalls(player: Player, tableId: string): Promise<RateLimitResult> {
  const calls = Array.from({ length: 120 }, () =>
    player.unary("GetView", { table_id: tableId }).then(
      () => null,
      (e: grpc.ServiceError) => e,
    ),
  );
  const errors = (await Promise.all(calls)).filter((e): e is grpc.ServiceError => e !== null);
  const refused = errors.filter((e) => e.code === grpc.status.RESOURCE_EXHAUSTED);
  const other = errors.find((e) => e.code !== grpc.status.RESOURCE_EXHAUSTED);
  if (other) throw new Failure(`GetView refused: ${grpc.status[other.code]} ${other.details}`);
  if (refused.length === 0) return { met: false, retry_delay_ms: null, honoured: false, refused: 0 };
  // Each refusal carries the wait for the bucket as it was then; calls of the burst served after
  // the first refusal (a token refilled meanwhile) emptied it again, so the client waits the
  // longest delay it was told, the bucket's state nearest its end.
  const delays = refused.map((e) => {
    const details = e.metadata.get("grpc-status-details-bin")[0];
    return details instanceof Buffer ? retryDelayMs(new Uint8Array(details)) : null;
  });
  const delay = delays.some((d) => d === null) ? null : Math.max(...(delays as number[]));
  let honoured = false;
  if (delay !== null) {
    await sleep(Math.ceil(delay));
    honoured = await player.unary("GetView", { table_id: tableId }).then(
      () => true,
      () => false,
    );
  }
  return { met: true, retry_delay_ms: delay, honoured, refused: refused.length };
}

/** Pings on the Session stream as fast as possible until a RESOURCE_EXHAUSTED ClientError;
 * wait its retry_delay; the next ping is answered. */
async function tripSession(player: Player): Promise<RateLimitResult> {
  const s = new Session(player);
  const n = 120;
  for (let i = 0; i < n; i++) s.call.write({ request_id: `ping-${i}`, ping: true });
  let refused = 0;
  let delay: number | null = null;
  for (let seen = 0; seen < n; seen++) {
    const m = await s.next(10000);
    if (m === null) break;
    if (m.kind === "error" && m.error?.code === "RESOURCE_EXHAUSTED") {
      refused += 1;
      delay ??= delayMs(m.error.retry_delay);
    }
  }
  let honoured = false;
  if (refused && delay !== null) {
    await sleep(Math.ceil(delay));
    await s.send({ request_id: "after-wait", ping: true });
    const m = await s.next(10000);
    honoured = m?.kind === "pong" && m.request_id === "after-wait";
  }
  s.close();
  return { met: refused > 0, retry_delay_ms: delay, honoured, refused };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string" },
      "proto-dir": { type: "string", default: "../proto" },
      variants: { type: "string", default: VARIANTS.join(",") },
      seed: { type: "string", default: "40" },
      "game-timeout-s": { type: "string", default: "120" },
    },
  });
  if (!values.target) throw new Failure("--target host:port of the edge is required");
  const definition = protoLoader.loadSync("trix/v1/gateway.proto", {
    includeDirs: [values["proto-dir"] as string],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    trix: { v1: { GatewayService: grpc.ServiceClientConstructor } };
  };
  const started = Date.now();
  const games: GameResult[] = [];
  const players: Player[] = [];
  let plain: RateLimitResult | null = null;
  let stream: RateLimitResult | null = null;
  const variants = (values.variants as string).split(",");
  for (const [i, variant] of variants.entries()) {
    // One player per game: each game's account, rate limits and records stay its own.
    const player = new Player(values.target, loaded.trix.v1.GatewayService, `Conformance ${i + 1}`);
    players.push(player);
    await player.signIn();
    const game = new Game(player, variant, Number(values.seed) + i);
    games.push(await game.play(Number(values["game-timeout-s"]) * 1000));
    if (i === 0) {
      plain = await tripPlainCalls(player, game.result.table_id);
      stream = await tripSession(player);
    }
  }
  const sum = (f: (g: GameResult) => number): number => games.reduce((a, g) => a + f(g), 0);
  const summary = {
    variants_played: games.map((g) => g.variant),
    turns_played: sum((g) => g.turns_played),
    illegal_actions_sent: sum((g) => g.illegal_actions),
    turns_lost_to_timer: sum((g) => g.turns_lost_to_timer),
    actions_rate_limited: sum((g) => g.actions_rate_limited),
    rate_limit_delays_missing: sum((g) => g.rate_limit_delays_missing),
    deal_index_mismatches: sum((g) => g.deal_index_mismatches),
    sequence_gaps: sum((g) => g.sequence_gaps),
    resumes: games.length,
    resume_gaps: sum((g) => g.resume.gaps + g.resume.duplicates),
    resume_replayed_events: sum((g) => g.resume.replayed_events),
    resume_acknowledged: games.every((g) => g.resume.acknowledged),
    rate_limit: {
      plain_call: plain,
      session_stream: stream,
      met_and_honoured: Boolean(plain?.met && plain.honoured && stream?.met && stream.honoured),
    },
    records_verified: games.filter((g) => g.record_verified).length,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    games,
  };
  for (const player of players) player.stub.close();
  console.log(JSON.stringify(summary));
}

main().catch((err: unknown) => {
  console.error(err instanceof Failure ? `conformance: ${err.message}` : err);
  process.exit(1);
});
