// The protocol of one seat (or one spectator) with the gateway: follow the Events stream
// (or Spectate), resume it from the last applied sequence whenever it ends before the game
// does (the edge ends a silent stream after its stream_idle_timeout, a network drops, a
// phone sleeps), apply snapshots the gateway sends when the gap is too old, and never
// apply an event twice (the reducer drops sequences already applied). The transport is
// passed in: the app gives it the gRPC-Web client, the unit tests a scripted one.
import { Code, ConnectError } from "@connectrpc/connect";
import type { SessionResponse } from "../gen/trix/v1/gateway_pb";
import type { Event } from "../gen/trix/v1/events_pb";
import type { QueueStatus, Ticket } from "../gen/trix/v1/matchmaking_pb";
import type { CompetitionNotice } from "../gen/trix/v1/competitions_pb";
import type { SeatView } from "../gen/trix/v1/table_pb";
import { applyEvent, applySnapshot, emptyState, isGap } from "./state";
import type { GameState } from "./state";

export interface EventSource {
  /** The seat's messages after `afterSequence` (table "" = the player's current table or ticket);
   * `autoPlay`: follow the seat without taking it from auto-play (EventsRequest.auto_play). */
  events(tableId: string, afterSequence: bigint, signal: AbortSignal, autoPlay?: boolean): AsyncIterable<SessionResponse>;
  /** A spectator's public events after `afterSequence`. */
  spectate?(tableId: string, afterSequence: bigint, signal: AbortSignal): AsyncIterable<Event>;
  view(tableId: string): Promise<SeatView>;
}

export type FollowHooks = {
  state: (s: GameState) => void;
  ticket?: (t: Ticket) => void;
  /** While a quick-match ticket searches: its queue's status (players found, bots' time). */
  queue?: (q: QueueStatus) => void;
  error?: (code: string, message: string) => void;
  /** A competition the player entered: a round seated him, or it changed (issue 43). */
  competition?: (n: CompetitionNotice) => void;
  /** A refusal not believed yet (see REFUSALS_BELIEVED): the follower tries again. */
  refused?: (code: string, message: string, times: number) => void;
  /** Called on each (re)connection attempt after the first: a "reconnecting" line. */
  reconnecting?: (attempt: number) => void;
  sleep?: (ms: number) => Promise<void>;
};

/** Errors a retry cannot mend: stop following and say so. */
const FINAL = new Set([Code.PermissionDenied, Code.NotFound, Code.Unauthenticated, Code.InvalidArgument]);
/** A seat already followed is refused that many times in a row (NOT_FOUND, PERMISSION_DENIED)
 * before the follower believes it: a table whose shard is changing owner can answer
 * NOT_FOUND for a moment, and a game must not end in the browser for that. */
const REFUSALS_BELIEVED = 3;
/** The refusals a retry may mend once the table is known (see REFUSALS_BELIEVED). */
const TRANSIENT_WHEN_SEATED = new Set([Code.PermissionDenied, Code.NotFound]);

export class Follower {
  state: GameState;
  private stop = new AbortController();
  private readonly spectator: boolean;
  /** He let the bot play his seat ("let the bot play", docs/rules.md §10): a resume must not take
   * it back (opening a seat played by auto-play takes it, unless EventsRequest.auto_play). */
  autoPlay = false;

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

  /** Events skipped by the stream (a gap, see `isGap`): each one made the follower resync. */
  gaps = 0;
  private gapSeen = false;

  /** Apply events in order; at a gap, stop applying and flag it (`run` then resyncs). */
  private applyAll(events: Event[]): void {
    let s = this.state;
    for (const e of events) {
      if (isGap(s, e)) {
        this.gaps += 1;
        this.gapSeen = true;
        break;
      }
      s = applyEvent(s, e);
    }
    this.set(s);
  }

  /** Apply one gateway message; true once the game has ended. */
  handle(m: SessionResponse): boolean {
    const k = m.kind;
    if (k.case === "event") this.applyAll([k.value]);
    else if (k.case === "eventBatch") this.applyAll(k.value.events);
    else if (k.case === "snapshot") this.set(applySnapshot(this.state, k.value));
    else if (k.case === "ticket") {
      const t = k.value;
      if (t.tableId && !this.state.tableId) this.set({ ...this.state, tableId: t.tableId, seat: t.seat });
      this.hooks.ticket?.(t);
    } else if (k.case === "queue") this.hooks.queue?.(k.value);
    else if (k.case === "error") this.hooks.error?.(k.value.code, k.value.message);
    else if (k.case === "competition") this.hooks.competition?.(k.value);
    return this.state.finished;
  }

  /** A fresh view of the seat, replacing the state (a reload: nothing is kept in memory). */
  async refresh(): Promise<void> {
    if (!this.state.tableId) return;
    this.set(applySnapshot(this.state, await this.source.view(this.state.tableId)));
  }

  /** Follow until the game ends or close(); resumes after every break and every gap. */
  async run(): Promise<void> {
    const sleep = this.hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    let delay = 250;
    let attempt = 0;
    let refusals = 0;
    let gapsInARow = 0;
    while (!this.stop.signal.aborted && !this.state.finished) {
      if (attempt > 0 && !this.gapSeen) this.hooks.reconnecting?.(attempt);
      attempt += 1;
      // One stream at a time, ended early at a gap (its events after the gap are of no use).
      const stream = new AbortController();
      const onStop = () => stream.abort();
      this.stop.signal.addEventListener("abort", onStop);
      try {
        if ((attempt > 1 || this.gapSeen) && this.state.tableId && !this.spectator) {
          // Back after a break or a gap: the seat's view first. It says at once that we are
          // connected again (the events may stay quiet: the table could be waiting for us) and
          // covers whatever the stream missed; the events after it follow.
          await this.refresh().catch((err: unknown) => {
            if (FINAL.has(ConnectError.from(err).code)) throw err;
          });
        }
        this.gapSeen = false;
        const { tableId, sequence } = this.state;
        if (this.spectator && this.source.spectate) {
          for await (const e of this.source.spectate(tableId, sequence, stream.signal)) {
            this.applyAll([e]);
            if (this.state.finished) return;
            if (this.gapSeen) break;
            delay = 250; // the stream works: the next break starts the backoff afresh
            refusals = 0;
            gapsInARow = 0;
          }
        } else {
          for await (const m of this.source.events(tableId, sequence, stream.signal, this.autoPlay)) {
            if (this.handle(m)) return;
            if (this.gapSeen) break;
            delay = 250; // the stream works: the next break starts the backoff afresh
            refusals = 0;
            gapsInARow = 0;
          }
        }
      } catch (err) {
        if (this.stop.signal.aborted) return;
        const ce = ConnectError.from(err);
        if (FINAL.has(ce.code)) {
          // A table we were following refuses us: believed only when it says so again.
          const transient = TRANSIENT_WHEN_SEATED.has(ce.code) && this.state.sequence > 0n;
          refusals += 1;
          if (!transient || refusals >= REFUSALS_BELIEVED) {
            this.hooks.error?.(Code[ce.code], ce.rawMessage);
            return;
          }
          this.hooks.refused?.(Code[ce.code], ce.rawMessage, refusals);
        }
      } finally {
        this.stop.signal.removeEventListener("abort", onStop);
        stream.abort();
      }
      if (this.stop.signal.aborted) return;
      // A gap resyncs at once (nothing broke, an event is missing); the same gap again right
      // after the resync waits like a break, so a stream that keeps skipping is not hammered.
      if (this.gapSeen && gapsInARow++ === 0) continue;
      await sleep(delay);
      delay = Math.min(delay * 2, 4000);
    }
  }
}
