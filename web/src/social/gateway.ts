// The social calls through the gateway (issue 44): GatewayService.Social carries each of the
// social service's requests in one oneof, answered in the same case, and SocialEvents streams
// the player's social events (a browser cannot open the bidi Session).
import { Code, ConnectError } from "@connectrpc/connect";
import type { Gateway } from "../client/api";
import type { OpenInviteResponse, SocialRequest, SocialResponse } from "../gen/trix/v1/gateway_pb";
import type { SocialApi } from "./store";

type Result = SocialResponse["result"];
type Case = Exclude<Result["case"], undefined>;
type Answer = { [K in Case]: Extract<Result, { case: K }>["value"] };

/** One kind of Social request: its answer, or INTERNAL if the gateway answered another kind. */
function via<C extends Case>(gw: Gateway, which: C) {
  return async (value: unknown): Promise<Answer[C]> => {
    const r = await gw.social({ request: { case: which, value } as SocialRequest["request"] });
    const res: { case: string | undefined; value?: unknown } = r.result;
    if (res.case !== which) throw new ConnectError(`the gateway answered ${String(res.case)} to ${which}`, Code.Internal);
    return res.value as Answer[C];
  };
}

export type GatewaySocial = SocialApi & { openInvite: (code: string) => Promise<OpenInviteResponse> };

export function socialApi(gw: Gateway): GatewaySocial {
  const open = via(gw, "openInvite");
  const spectatorChat = via(gw, "setSpectatorChat");
  return {
    sendChat: via(gw, "sendChat"),
    listChatHistory: via(gw, "chatHistory"),
    requestFriend: via(gw, "requestFriend"),
    answerFriendRequest: via(gw, "answerFriend"),
    removeFriend: via(gw, "removeFriend"),
    setBlocked: via(gw, "setBlocked"),
    listFriends: via(gw, "listFriends"),
    sendInvite: via(gw, "sendInvite"),
    setMuted: via(gw, "setMuted"),
    reportLine: via(gw, "reportLine"),
    setSpectatorChat: (tableId, on) => spectatorChat({ tableId, on }),
    openInvite: (code) => open({ code }),
    async *events(signal) {
      for await (const r of gw.socialEvents({}, { signal })) if (r.event) yield r.event;
    },
  };
}
