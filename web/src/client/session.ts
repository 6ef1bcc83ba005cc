// The protocol of one seat (or one spectator) with the gateway: follow the Events stream
// (or Spectate), resume it from the last applied sequence whenever it ends before the game
// does (the edge ends a silent stream after its stream_idle_timeout, a network drops, a
// phone sleeps), apply snapshots the gateway sends when the gap is too old, and never
// apply an event twice (the reducer drops sequences already applied). The transport is
// passed in: the app gives it the gRPC-Web client, the unit tests a scripted one.
import { Code, ConnectError } from "@connectrpc/connect";
import type { SessionResponse } from "../gen/trix/v1/gateway_pb";
import type { Event } from "../gen/trix/v1/events_pb";
import type { Ticket } from "../gen/trix/v1/matchmaking_pb";
import type { SeatView } from "../gen/trix/v1/table_pb";
import { applyEvent, applySnapshot, emptyState } from "./state";
import type { GameState } from "./state";

export interface EventSource {
  /** The seat's messages after `afterSequence` (table "" = the player's current table or ticket). */
  events(tableId: string, afterSequence: bigint, signal: AbortSignal): AsyncIterable<SessionResponse>;
  /** A spectator's public events after `afterSequence`. */
  spectate?(tableId: string, afterSequence: bigint, signal: AbortSignal): AsyncIterable<Event>;
  view(tableId: string): Promise<SeatView>;
}

export type FollowHooks = {
  state: (s: GameState) => void;
  ticket?: (t: Ticket) => void;
  error?: (code: string, message: string) => void;
  /** Called on each (re)connection attempt after the first: a "reconnecting" line. */
  reconnecting?: (attempt: number) => void;
  sleep?: (ms: number) => Promise<void>;
};

/** Errors a retry cannot mend: stop following and say so. */
const FINAL = new Set([Code.PermissionDenied, Code.NotFound, Code.Unauthenticated, Code.InvalidArgument]);

export class Follower {
  state: GameState;
  private stop = new AbortController();
  private readonly spectator: boolean;

  constructor(
    private readonly source: EventSource,
    private readonly hooks: FollowHooks,
    start: GameState = emptyState(),
    spectator = false,
  ) {
    this.state = start;
    this.spectator = spectator;
  }

  close(): void {
    this.stop.abort();
  }

  private asked = false;

  private set(s: GameState): void {
    this.state = s;
    this.hooks.state(s);
    if (!this.spectator && s.tableId && s.seat < 0 && !this.asked) {
      // Table events came before anything named this player's seat (no ticket message on
      // this stream): the seat's view says which seat it is.
      this.asked = true;
      void this.refresh().catch(() => {
        this.asked = false;
      });
    }
  }

  /** Apply one gateway message; true once the game has ended. */
  handle(m: SessionResponse): boolean {
    const k = m.kind;
    if (k.case === "event") this.set(applyEvent(this.state, k.value));
    else if (k.case === "eventBatch") {
      let s = this.state;
      for (const e of k.value.events) s = applyEvent(s, e);
      this.set(s);
    } else if (k.case === "snapshot") this.set(applySnapshot(this.state, k.value));
    else if (k.case === "ticket") {
      const t = k.value;
      if (t.tableId && !this.state.tableId) this.set({ ...this.state, tableId: t.tableId, seat: t.seat });
      this.hooks.ticket?.(t);
    } else if (k.case === "error") this.hooks.error?.(k.value.code, k.value.message);
    return this.state.finished;
  }

  /** A fresh view of the seat, replacing the state (a reload: nothing is kept in memory). */
  async refresh(): Promise<void> {
    if (!this.state.tableId) return;
    this.set(applySnapshot(this.state, await this.source.view(this.state.tableId)));
  }

  /** Follow until the game ends or close(); resumes after every break. */
  async run(): Promise<void> {
    const sleep = this.hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    let delay = 250;
    let attempt = 0;
    while (!this.stop.signal.aborted && !this.state.finished) {
      if (attempt > 0) this.hooks.reconnecting?.(attempt);
      attempt += 1;
      try {
        if (attempt > 1 && this.state.tableId && !this.spectator) {
          // Back after a break: the seat's view first. It says at once that we are connected
          // again (the events may stay quiet: the table could be waiting for us) and covers
          // whatever the stream missed; the events after it follow.
          await this.refresh().catch((err: unknown) => {
            if (FINAL.has(ConnectError.from(err).code)) throw err;
          });
        }
        const { tableId, sequence } = this.state;
        if (this.spectator && this.source.spectate) {
          for await (const e of this.source.spectate(tableId, sequence, this.stop.signal)) {
            this.set(applyEvent(this.state, e));
            delay = 250;
            if (this.state.finished) return;
          }
        } else {
          for await (const m of this.source.events(tableId, sequence, this.stop.signal)) {
            delay = 250;
            if (this.handle(m)) return;
          }
        }
      } catch (err) {
        if (this.stop.signal.aborted) return;
        const ce = ConnectError.from(err);
        if (FINAL.has(ce.code)) {
          this.hooks.error?.(Code[ce.code], ce.rawMessage);
          return;
        }
      }
      if (this.stop.signal.aborted) return;
      await sleep(delay);
      delay = Math.min(delay * 2, 4000);
    }
  }
}
