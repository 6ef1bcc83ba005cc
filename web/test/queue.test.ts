// The wait for a quick match (issue 39): the gateway's queue status reaches the page through
// the follower, and the countdown to the bots runs on the page's clock from when it came.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { SessionResponseSchema } from "../src/gen/trix/v1/gateway_pb";
import { QueueStatusSchema } from "../src/gen/trix/v1/matchmaking_pb";
import type { QueueStatus } from "../src/gen/trix/v1/matchmaking_pb";
import { queueView, secondsLeft } from "../src/client/queue";
import { Follower } from "../src/client/session";
import type { EventSource } from "../src/client/session";
import { emptyState } from "../src/client/state";

const status = (players: number, botsInMs: number | null, serverMs = 1_700_000_000_000) =>
  create(QueueStatusSchema, {
    ticketId: "00t",
    playersWaiting: players,
    serverTime: timestampFromMs(serverMs),
    botsFillAt: botsInMs === null ? undefined : timestampFromMs(serverMs + botsInMs),
  });

describe("the wait for a quick match", () => {
  it("counts down to the bots from when the status came, whatever the device's clock says", () => {
    // The server's clock is years away from the page's: only the difference counts.
    const view = queueView(status(2, 17_500), 5_000);
    expect(view).toEqual({ players: 2, botsAtMs: 22_500 });
    expect(secondsLeft(view, 5_000)).toBe(18);
    expect(secondsLeft(view, 21_600)).toBe(1);
    expect(secondsLeft(view, 22_500)).toBe(0);
    expect(secondsLeft(view, 90_000)).toBe(0);
  });

  it("names no bot time for a paid table and counts the player himself at least", () => {
    const view = queueView(status(0, null), 0);
    expect(view).toEqual({ players: 1, botsAtMs: null });
    expect(secondsLeft(view, 10)).toBeNull();
  });

  it("hands each queue status of the session to the page", async () => {
    const got: QueueStatus[] = [];
    const msgs = [status(1, 19_000), status(3, 12_000)].map((q) => create(SessionResponseSchema, { kind: { case: "queue", value: q } }));
    const source: EventSource = {
      async *events(_table, _after, signal) {
        yield* msgs;
        await new Promise((r) => signal.addEventListener("abort", r)); // a quiet stream until closed
      },
      view: () => Promise.reject(new Error("no table yet")),
    };
    const f = new Follower(source, { state: () => {}, queue: (q) => got.push(q) }, emptyState());
    const done = f.run();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(got.map((q) => q.playersWaiting)).toEqual([1, 3]);
  });
});
