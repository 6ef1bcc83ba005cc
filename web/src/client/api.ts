// The gateway through the edge, as a browser can reach it: gRPC-Web on the page's own
// origin (no CORS), the unary calls beside the server-streaming Events and Spectate (a
// browser cannot open the bidi Session). The bearer token rides on every call.
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import type { Client, Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { ActionSchema, GatewayService } from "../gen/trix/v1/gateway_pb";
import type { Action } from "../gen/trix/v1/gateway_pb";
import type { EventSource } from "./session";

export type Gateway = Client<typeof GatewayService>;

export function gateway(baseUrl: string, token: () => string): Gateway {
  const auth: Interceptor = (next) => (req) => {
    const t = token();
    if (t) req.header.set("authorization", `Bearer ${t}`);
    return next(req);
  };
  return createClient(GatewayService, createGrpcWebTransport({ baseUrl, interceptors: [auth] }));
}

export function eventSource(gw: Gateway): EventSource {
  return {
    async *events(tableId, afterSequence, signal) {
      for await (const r of gw.events({ tableId, afterSequence }, { signal })) if (r.message) yield r.message;
    },
    async *spectate(tableId, afterSequence, signal) {
      for await (const r of gw.spectate({ tableId, afterSequence }, { signal })) if (r.event) yield r.event;
    },
    async view(tableId) {
      const r = await gw.getView({ tableId });
      if (!r.view) throw new Error("no view");
      return r.view;
    },
  };
}

/** A random idempotency key for an action (the gateway accepts 1-64 of A-Z a-z 0-9 _ . : -). */
export function actionId(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export function action(tableId: string, lastSeen: bigint, kind: Action["kind"]): Action {
  return create(ActionSchema, { tableId, actionId: actionId(), lastSeenSequence: lastSeen, kind });
}

