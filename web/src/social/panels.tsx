// The chat panel at the table and the friends panel (issue 44), in Arabic (RTL) and English.
// Loaded only once a player has signed in (./lazy): the first page carries none of it. The
// chat panel sits in the table's flow below the hand, so on a phone it never covers the
// cards; it opens and closes with its unread badge. Renders only: ./store and the
// view-models decide.
import { useEffect, useState } from "preact/hooks";
import { InviteKind } from "../gen/trix/v1/social_pb";
import type { GameState } from "../client/state";
import type { Lang } from "../ui/i18n";
import { authorLabel, composer, lineText, MAX_TEXT, reads, visible } from "./chat";
import type { Line, Refusal, Room } from "./chat";
import { shownDirect } from "./direct";
import { presenceKey, sections } from "./friends";
import type { Entry } from "./friends";
import { PHRASES } from "./phrases";
import { socialStrings } from "./strings";
import type { SocialKey, ST } from "./strings";
import type { SocialStore } from "./store";
import "./social.css";

function useStore(store: SocialStore): number {
  const [version, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion((v) => v + 1)), [store]);
  return version;
}

const REFUSALS: Record<Refusal["kind"], SocialKey> = {
  partners: "chatRefusedPartners",
  spectator: "chatRefusedSpectator",
  tooFast: "chatRefusedTooFast",
  timedOut: "chatRefusedTimedOut",
  invalid: "chatRefusedInvalid",
  failed: "chatRefusedFailed",
};

export type ChatProps = { lang: Lang; store: SocialStore; game: GameState; spectator: boolean };

export function ChatPanel({ lang, store, game, spectator }: ChatProps) {
  useStore(store);
  const st = socialStrings(lang);
  useEffect(() => store.openTable(game.tableId, spectator), [game.tableId, spectator]);
  const c = store.chat;
  if (!c || c.tableId !== game.tableId) return null;
  const writes = composer(game, spectator);
  const rooms = (["players", "spectators"] as Room[]).filter((r) => reads(c, r));
  return (
    <section class="chat" aria-label={st("chat")} data-chat={c.open ? "open" : "closed"}>
      <button type="button" class="small chat-toggle" data-action="chat" aria-expanded={c.open} onClick={() => store.setOpen(!c.open)}>
        {st("chat")}
        {c.unread > 0 && (
          <span class="badge" data-unread={c.unread} aria-label={st("chatUnread", { n: c.unread })}>
            {c.unread}
          </span>
        )}
      </button>
      {c.open && (
        <div class="chat-body">
          {!spectator && (
            <label class="chat-setting">
              <input type="checkbox" data-setting="show-spectators" checked={c.showSpectators} onChange={(e) => store.showSpectators(e.currentTarget.checked)} /> {st("chatShowSpectators")}
            </label>
          )}
          {rooms.map((room) => (
            <Room key={room} st={st} lang={lang} store={store} room={room} lines={visible(c, room)} titled={rooms.length > 1} />
          ))}
          {c.refusal && (
            <p class="chat-refusal" role="alert" data-refusal={c.refusal.kind}>
              {st(REFUSALS[c.refusal.kind], { message: c.refusal.message })}
              {c.refusal.message && c.refusal.kind !== "invalid" && c.refusal.kind !== "failed" && <small> {st("chatServerSays", { message: c.refusal.message })}</small>}
            </p>
          )}
          <Composer st={st} lang={lang} store={store} room={writes.room} freeText={writes.freeText} />
        </div>
      )}
    </section>
  );
}

function Room({ st, lang, store, room, lines, titled }: { st: ST; lang: Lang; store: SocialStore; room: Room; lines: Line[]; titled: boolean }) {
  const title = st(room === "players" ? "chatPlayers" : "chatSpectators");
  return (
    <div class="chat-room" data-room={room}>
      {titled && <h3>{title}</h3>}
      <ol class="chat-lines" aria-live="polite" aria-label={title}>
        {lines.length === 0 && <li class="chat-empty">{st("chatEmpty")}</li>}
        {lines.map((l) => (
          <LineItem key={`${l.lineId}-${l.sentAtMs}`} st={st} lang={lang} store={store} room={room} line={l} />
        ))}
      </ol>
    </div>
  );
}

function LineItem({ st, lang, store, room, line }: { st: ST; lang: Lang; store: SocialStore; room: Room; line: Line }) {
  const [menu, setMenu] = useState(false);
  const [reason, setReason] = useState("");
  const [said, setSaid] = useState("");
  const mine = line.authorId === store.me;
  const name = authorLabel(line, store.me, st("chatYou"));
  const muted = store.chat?.muted.has(line.authorId) ?? false;
  return (
    <li data-line={String(line.lineId)} data-author={line.authorId} data-phrase={line.phraseId || undefined} class={mine ? "mine" : ""}>
      <b class="who">
        <bdi>{name}</bdi>
      </b>{" "}
      <span class="text" dir="auto">
        {lineText(line, lang)}
      </span>
      {line.undelivered && <em class="undelivered"> ({st("chatNotDelivered")})</em>}
      {line.reported && <em> ({st("chatReported")})</em>}
      {!mine && line.lineId > 0n && (
        <button type="button" class="small line-menu" data-action="line-menu" aria-expanded={menu} aria-label={st("chatActionsFor", { name })} onClick={() => setMenu(!menu)}>
          ⋯
        </button>
      )}
      {menu && (
        <div class="line-actions" role="group" aria-label={st("chatActionsFor", { name })}>
          <button type="button" class="small" data-action="mute" onClick={() => void store.mute(line.authorId, !muted)}>
            {st(muted ? "chatUnmute" : "chatMute", { name })}
          </button>
          <button
            type="button"
            class="small"
            data-action="add-friend"
            onClick={() => void store.requestFriend(line.authorId, line.authorName).then(() => setSaid(st("chatRequestSent", { name })))}
          >
            {st("chatAddFriend", { name })}
          </button>
          {!line.reported && (
            <form
              class="report"
              onSubmit={(e) => {
                e.preventDefault();
                void store.report(room, line.lineId, reason.trim()).then(() => setSaid(st("chatReported")), () => undefined);
              }}
            >
              <input aria-label={st("chatReport")} dir="auto" maxLength={MAX_TEXT} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
              <button type="submit" class="small" data-action="report">
                {st("chatReport")}
              </button>
            </form>
          )}
          {said && <span role="status">{said}</span>}
        </div>
      )}
    </li>
  );
}

type Send = (content: { text: string } | { phraseId: string }) => Promise<boolean>;

/** The quick phrases, and free text when `freeText`: a table's composer and a conversation's. */
function Say({ st, lang, send, freeText, direct }: { st: ST; lang: Lang; send: Send; freeText: boolean; direct: boolean }) {
  const [text, setText] = useState("");
  return (
    <>
      <div class="phrases" role="group" aria-label={st("chatPhrases")}>
        {PHRASES.map((p) => (
          <button type="button" class="small" key={p.id} data-phrase={p.id} onClick={() => void send({ phraseId: p.id })}>
            {p[lang]}
          </button>
        ))}
      </div>
      {freeText ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            const line = text.trim();
            if (line) void send({ text: line }).then((ok) => ok && setText(""));
          }}
        >
          <input
            aria-label={st("chatMessage")}
            data-chat-input={!direct || undefined}
            data-direct-input={direct || undefined}
            dir="auto"
            maxLength={MAX_TEXT}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
          <button type="submit" class="small" data-action={direct ? "send-direct" : "send"}>
            {st("chatSend")}
          </button>
        </form>
      ) : (
        <p class="hint" data-phrases-only>
          {st("chatPartnersHint")}
        </p>
      )}
    </>
  );
}

function Composer({ st, lang, store, room, freeText }: { st: ST; lang: Lang; store: SocialStore; room: Room; freeText: boolean }) {
  return (
    <div class="chat-compose" data-room={room}>
      <Say st={st} lang={lang} send={(content) => store.send(room, content)} freeText={freeText} direct={false} />
    </div>
  );
}

export type FriendsProps = {
  lang: Lang;
  store: SocialStore;
  /** What the friends may be invited to from here (a private table's code, a table to watch). */
  inviteTo?: { kind: InviteKind; target: string };
  /** Opens an invitation's link (its #/invite/... route). */
  open: (link: string) => void;
  /** Watches the table a friend plays at. */
  watch: (tableId: string) => void;
};

export function FriendsPanel({ lang, store, inviteTo, open, watch }: FriendsProps) {
  useStore(store);
  const st = socialStrings(lang);
  const [invited, setInvited] = useState<Record<string, string>>({});
  const v = sections(store.friends);
  const invites = store.friends.invites;
  const row = (e: Entry, actions: preact.ComponentChildren) => (
    <li key={e.playerId} data-friend={e.playerId} data-state={e.state}>
      <bdi class="name">{e.name}</bdi> {actions}
    </li>
  );
  const btn = (action: string, key: SocialKey, run: () => void) => (
    <button type="button" class="small" data-action={action} onClick={run}>
      {st(key)}
    </button>
  );
  const inviteKey: SocialKey = inviteTo?.kind === InviteKind.WATCH_TABLE ? "inviteToWatch" : "inviteToPlay";
  return (
    <section class="card-box friends" aria-label={st("friends")}>
      <h2>
        {st("friends")} <small data-online={v.online}>{st("friendsOnline", { n: v.online })}</small>
      </h2>
      {store.friendsError && (
        <p class="banner error" role="alert">
          {st("friendsFailed", { message: store.friendsError })}
        </p>
      )}
      {invites.length > 0 && (
        <div class="invitations">
          <h3>{st("invitations")}</h3>
          <ul>
            {invites.map((i) => (
              <li key={i.link} data-invitation-from={i.from}>
                {st(i.kind === InviteKind.WATCH_TABLE ? "invitationWatch" : i.kind === InviteKind.COMPETITION ? "invitationCompetition" : "invitationFrom", { name: i.name })}{" "}
                {btn("open-invitation", "openInvitation", () => {
                  store.dismissInvite(i.link);
                  open(i.link);
                })}
                {btn("dismiss-invitation", "dismiss", () => store.dismissInvite(i.link))}
              </li>
            ))}
          </ul>
        </div>
      )}
      {v.incoming.length > 0 && (
        <div class="requests">
          <h3>{st("requestsIn")}</h3>
          <ul>
            {v.incoming.map((e) =>
              row(e, [btn("accept", "accept", () => void store.answer(e.playerId, true)), btn("decline", "decline", () => void store.answer(e.playerId, false))]),
            )}
          </ul>
        </div>
      )}
      {v.friends.length === 0 ? (
        <p>{st("friendsNone")}</p>
      ) : (
        <ul class="friend-list">
          {v.friends.map((e) =>
            row(e, [
              <span class={`presence ${presenceKey(e.presence)}`} data-presence={presenceKey(e.presence)} key="p">
                {st(presenceKey(e.presence))}
              </span>,
              e.tableId && btn("watch-friend", "watchFriend", () => watch(e.tableId)),
              inviteTo &&
                (invited[e.playerId] ? (
                  <span key="i" role="status" data-invited={invited[e.playerId]}>
                    {st("invited")}{" "}
                    <input readOnly dir="ltr" aria-label={st("inviteLink")} value={new URL(invited[e.playerId] ?? "", location.origin).href} onFocus={(ev) => ev.currentTarget.select()} />
                  </span>
                ) : (
                  btn("invite-friend", inviteKey, () => void store.invite(e.playerId, inviteTo.kind, inviteTo.target).then((link) => link && setInvited({ ...invited, [e.playerId]: link })))
                )),
              <button type="button" class="small" key="m" data-action="message-friend" onClick={() => store.openDirect(e.playerId, e.name)}>
                {st("message")}
                {(store.directUnread[e.playerId] ?? 0) > 0 && (
                  <span class="badge" data-unread={store.directUnread[e.playerId]} aria-label={st("messageUnread", { n: store.directUnread[e.playerId] ?? 0 })}>
                    {store.directUnread[e.playerId]}
                  </span>
                )}
              </button>,
              btn("remove-friend", "removeFriend", () => void store.remove(e.playerId)),
              btn("block", "block", () => void store.block(e.playerId, true)),
            ]),
          )}
        </ul>
      )}
      {store.direct && <DirectPanel st={st} lang={lang} store={store} />}
      {v.requested.length > 0 && (
        <div class="requests-out">
          <h3>{st("requestsOut")}</h3>
          <ul>{v.requested.map((e) => row(e, btn("withdraw", "withdraw", () => void store.remove(e.playerId))))}</ul>
        </div>
      )}
      {v.blocked.length > 0 && (
        <div class="blocked">
          <h3>{st("blockedList")}</h3>
          <ul>{v.blocked.map((e) => row(e, btn("unblock", "unblock", () => void store.block(e.playerId, false))))}</ul>
        </div>
      )}
    </section>
  );
}

/** The open conversation with a friend: its lines (older pages on demand), quick phrases and
 * free text, in the reader's language. */
function DirectPanel({ st, lang, store }: { st: ST; lang: Lang; store: SocialStore }) {
  const c = store.direct;
  if (!c) return null;
  const lines = shownDirect(c, store.muted);
  return (
    <div class="direct" role="region" aria-label={st("directWith", { name: c.name })} data-direct={c.friendId}>
      <h3>
        <bdi>{st("directWith", { name: c.name })}</bdi>{" "}
        <button type="button" class="small" data-action="close-direct" onClick={() => store.closeDirect()}>
          {st("directClose")}
        </button>
      </h3>
      {c.older && (
        <button type="button" class="small" data-action="older-direct" onClick={() => void store.olderDirect()}>
          {st("directOlder")}
        </button>
      )}
      <ol class="chat-lines" aria-live="polite">
        {c.loaded && lines.length === 0 && <li class="chat-empty">{st("directEmpty")}</li>}
        {lines.map((l) => (
          <li key={`${l.lineId}-${l.sentAtMs}`} data-line={String(l.lineId)} data-author={l.authorId} data-phrase={l.phraseId || undefined} class={l.authorId === store.me ? "mine" : ""}>
            <b class="who">
              <bdi>{authorLabel(l, store.me, st("chatYou"))}</bdi>
            </b>{" "}
            <span class="text" dir="auto">
              {lineText(l, lang)}
            </span>
            {l.undelivered && <em class="undelivered"> ({st("chatNotDelivered")})</em>}
          </li>
        ))}
      </ol>
      {c.refusal && (
        <p class="chat-refusal" role="alert">
          {st("directRefused", { message: c.refusal })}
        </p>
      )}
      <Say st={st} lang={lang} send={(content) => store.sendDirect(content)} freeText direct />
    </div>
  );
}
