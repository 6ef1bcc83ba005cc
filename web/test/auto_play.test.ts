// "Let the bot play" at a competition's seat (docs/rules.md §10): the state knows the seat may be
// handed to the bot (`Seat.auto_play`) and whether the bot plays it now, and a follower whose
// player handed it over resumes without taking it back (EventsRequest.auto_play).
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Variant } from "../src/gen/trix/v1/common_pb";
import { EventSchema } from "../src/gen/trix/v1/events_pb";
import type { Event } from "../src/gen/trix/v1/events_pb";
import { SessionResponseSchema } from "../src/gen/trix/v1/gateway_pb";
import type { SessionResponse } from "../src/gen/trix/v1/gateway_pb";
import { Follower } from "../src/client/session";
import type { EventSource } from "../src/client/session";
import { applyEvent, emptyState } from "../src/client/state";

const T = "comp-r1-t0";
const created: Event = create(EventSchema, {
  tableId: T,
  sequence: 1n,
  body: {
    case: "tableCreated",
    value: { variant: Variant.COMPLEX, seats: [0, 1, 2, 3].map((i) => ({ index: i, playerId: i === 1 ? "bot-1" : `p${i}`, bot: true, autoPlay: i !== 1 })) },
  },
});
const control = (sequence: number, bot: boolean): Event =>
  create(EventSchema, { tableId: T, sequence: BigInt(sequence), body: { case: "seatControlChanged", value: { seat: 0, bot, playerId: "p0" } } });
const msg = (event: Event): SessionResponse => create(SessionResponseSchema, { kind: { case: "event", value: event } });

describe("a competition's seat and the bot", () => {
  it("is one its player may hand to the bot (not a bot's own), and shows who plays it now", () => {
    let s = applyEvent(emptyState(T, 0), created, 0);
    expect(s.seats.map((x) => x.autoPlay)).toEqual([true, false, true, true]);
    expect(s.seats[0]?.bot).toBe(true); // not taken yet
    s = applyEvent(s, control(2, false), 0);
    expect(s.seats[0]?.bot).toBe(false); // his: he plays it
    s = applyEvent(s, control(3, true), 0);
    expect([s.seats[0]?.bot, s.seats[0]?.autoPlay]).toEqual([true, true]); // handed to the bot
  });

  it("is followed without taking it back once handed over, with taking it on every resume before", async () => {
    const asked: boolean[] = [];
    let handOver = () => {};
    const handedOver = new Promise<void>((r) => (handOver = r));
    const source: EventSource = {
      async *events(_table, _after, signal, autoPlay = false) {
        asked.push(autoPlay);
        if (asked.length === 1) {
          yield msg(created);
          await handedOver; // the stream ends (the edge's idle timeout) after he let the bot play
          throw new ConnectError("idle", Code.Unavailable);
        }
        await new Promise<void>((r) => signal.addEventListener("abort", () => r()));
      },
      async view() {
        throw new Error("no view");
      },
    };
    const f = new Follower(source, { state: () => {}, sleep: async () => {} }, emptyState(T, 0));
    const done = f.run();
    await new Promise((r) => setTimeout(r, 10));
    f.autoPlay = true; // "let the bot play": the next resumes leave the seat to the bot
    handOver();
    await new Promise((r) => setTimeout(r, 20));
    f.close();
    await done;
    expect(asked).toEqual([false, true]);
  });
});
