// A waiting quick-match player's queue (issue 39): the gateway's QueueStatus made into what
// the page shows. The countdown runs on the page's clock from the moment the status came
// (`bots_fill_at - server_time` then), whatever the device's clock says.
import type { QueueStatus } from "../gen/trix/v1/matchmaking_pb";

export type QueueView = {
  /** Players searching in the queue, the player included (at least 1). */
  players: number;
  /** When bots fill in, on the page's clock (ms, as `now()`); null: a paid table, no bots. */
  botsAtMs: number | null;
};

const ms = (t: { seconds: bigint; nanos: number } | undefined): number => (t ? Number(t.seconds) * 1000 + t.nanos / 1e6 : 0);

/** The status as received at `receivedAtMs` (the page's clock). */
export function queueView(status: QueueStatus, receivedAtMs: number): QueueView {
  const players = Math.max(1, status.playersWaiting);
  if (!status.botsFillAt) return { players, botsAtMs: null };
  return { players, botsAtMs: receivedAtMs + Math.max(0, ms(status.botsFillAt) - ms(status.serverTime)) };
}

/** Whole seconds left before bots fill in (0 once due), null without bots. */
export function secondsLeft(view: QueueView, nowMs: number): number | null {
  if (view.botsAtMs === null) return null;
  return Math.max(0, Math.ceil((view.botsAtMs - nowMs) / 1000));
}
