// The gateway through the edge, as a browser can reach it: gRPC-Web on the page's own
// origin (no CORS), the unary calls beside the server-streaming Events and Spectate (a
// browser cannot open the bidi Session). The bearer token rides on every call.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
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

/** How soon a refresh that failed for a reason other than a refusal is tried again. */
const RETRY_MS = 1000;

/**
 * Keeps the token fresh (ADR 0018: tokens live minutes): RefreshToken once four fifths of its
 * lifetime have passed, again for each new token; `renew` gets each one. On a refusal
 * (UNAUTHENTICATED: expired, or its key retired) `lost` is called: sign in again. A failure
 * of the network (offline, the edge unreachable) is retried every few seconds while the token
 * is still valid, then `lost`. Returns a stop function.
 */
export function keepFresh(
  gw: Gateway,
  expiresAtSeconds: bigint,
  renew: (token: string) => void,
  lost: () => void,
): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const schedule = (expires: bigint) => {
    const ms = Math.max(1000, (Number(expires) * 1000 - Date.now()) * 0.8);
    timer = setTimeout(() => void refresh(), ms);
  };
  let current = expiresAtSeconds;
  const refresh = async () => {
    try {
      const r = await gw.refreshToken({});
      if (stopped) return;
      renew(r.token);
      current = r.expiresAt?.seconds ?? 0n;
      schedule(current);
    } catch (err) {
      if (stopped) return;
      const retryAt = Date.now() + RETRY_MS;
      if (ConnectError.from(err).code !== Code.Unauthenticated && retryAt < Number(current) * 1000) {
        timer = setTimeout(() => void refresh(), RETRY_MS);
      } else lost();
    }
  };
  schedule(expiresAtSeconds);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** The gateway as the follower's source; `invitation`: a spectator's, for a private table. */
export function eventSource(gw: Gateway, invitation = ""): EventSource {
  return {
    async *events(tableId, afterSequence, signal, autoPlay = false) {
      for await (const r of gw.events({ tableId, afterSequence, autoPlay }, { signal })) if (r.message) yield r.message;
    },
    async *spectate(tableId, afterSequence, signal) {
      for await (const r of gw.spectate({ tableId, afterSequence, invitation }, { signal })) if (r.event) yield r.event;
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

