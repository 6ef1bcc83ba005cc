// The app shell: language (Arabic RTL / English), guest sign-in kept across visits (the
// device secret in localStorage), the lobby, the table and the Verify page. Renders only:
// the protocol and the state live in ../client.
import { Component } from "preact";
import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { Code, ConnectError } from "@connectrpc/connect";
import { DoublingReveal, Variant } from "../gen/trix/v1/common_pb";
import type { Ticket } from "../gen/trix/v1/matchmaking_pb";
import { action, eventSource, gateway, keepFresh } from "../client/api";
import { Follower } from "../client/session";
import { emptyState, myTurn } from "../client/state";
import type { GameState } from "../client/state";
import { preferredLang, translate, VARIANT_KEYS } from "./i18n";
import type { Key, Lang } from "./i18n";
import { TableView } from "./Table";
import { VerifyPage } from "./Verify";
import { HistoryPage, ReplayPage } from "./History";
import { PrivateLobby } from "./PrivateLobby";
import { LobbyBoard } from "./Lobby";
import { play, setMuted as setSoundMuted } from "./sound";
import { QuickMatch } from "./QuickMatch";
import { queueView } from "../client/queue";
import type { QueueView } from "../client/queue";
import type { Action } from "../gen/trix/v1/gateway_pb";
import { useSocial } from "../social/glue";
import type { CompetitionNotice } from "../gen/trix/v1/competitions_pb";
import { CompetitionsRoute, useCompetitionFollow } from "./competitionsRoute";

/** The page's strings in its language (`lang`, for numbers: ./fmt). */
export type T = ((key: Key, vars?: Record<string, string | number>) => string) & { lang: Lang };

/** After a lost token: how often, and how many times, signing in again is tried. */
const SIGN_IN_RETRY_MS = 2000;
const SIGN_IN_RETRIES = 150;

const store = {
  get: (k: string): string | null => {
    try {
      return localStorage.getItem(`trix.${k}`);
    } catch {
      return null;
    }
  },
  set: (k: string, v: string | null): void => {
    try {
      if (v === null) localStorage.removeItem(`trix.${k}`);
      else localStorage.setItem(`trix.${k}`, v);
    } catch {
      /* private mode: nothing is kept */
    }
  },
};

/** How many players' names are kept for the replay (most recent first). */
const NAMES_KEPT = 200;

function knownNames(): Record<string, string> {
  try {
    return JSON.parse(store.get("names") ?? "{}") as Record<string, string>;
  } catch {
    return {};
  }
}

function rememberNames(pairs: [string, string][]): void {
  const older = knownNames();
  for (const [id] of pairs) delete older[id];
  store.set("names", JSON.stringify(Object.fromEntries([...pairs, ...Object.entries(older)].slice(0, NAMES_KEPT))));
}

function randomHex(bytes: number): string {
  const b = new Uint8Array(bytes);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

function deviceSecret(): string {
  let s = store.get("device");
  if (!s) {
    s = randomHex(24);
    store.set("device", s);
  }
  return s;
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

type Auth = { token: string; playerId: string; name: string };

export function App() {
  const [lang, setLang] = useState<Lang>(() => preferredLang(store.get("lang"), navigator.languages ?? [navigator.language]));
  const t: T = Object.assign((key: Key, vars?: Record<string, string | number>) => translate(lang, key, vars), { lang });
  const hash = useHash();
  const [auth, setAuth] = useState<Auth | null>(null);
  const authRef = useRef<Auth | null>(null);
  authRef.current = auth;
  const gw = useMemo(() => gateway(location.origin, () => authRef.current?.token ?? ""), []);
  const [name, setName] = useState(store.get("name") ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [game, setGame] = useState<GameState | null>(null);
  const [ticket, setTicket] = useState<Ticket | null>(null);
  const [queue, setQueue] = useState<QueueView | null>(null);
  const [reconnecting, setReconnecting] = useState(false);
  const [muted, setMuted] = useState(store.get("muted") === "1");
  const follower = useRef<Follower | null>(null);
  const stopRefresh = useRef<(() => void) | null>(null);

  // Before the first paint (a layout effect): the page's language picks its font (fonts.css),
  // and the English page must never fetch the Arabic one for the HTML's default lang="ar".
  useLayoutEffect(() => {
    document.documentElement.lang = lang;
    document.documentElement.dir = lang === "ar" ? "rtl" : "ltr";
    store.set("lang", lang);
  }, [lang]);

  const fail = (err: unknown) => {
    const ce = ConnectError.from(err);
    setError(t("error", { message: ce.rawMessage || Code[ce.code] }));
  };

  const [spectating, setSpectating] = useState(false);
  const competitionNotice = useRef<(n: CompetitionNotice) => void>(() => {});

  const follow = (start: GameState, refresh: boolean, spectator = false, invitation = "") => {
    setSpectating(spectator);
    follower.current?.close();
    const f = new Follower(
      eventSource(gw, invitation),
      {
        state: (s) => {
          setReconnecting(false);
          setGame(s);
          if (spectator) return;
          if (s.tableId && s.seat >= 0 && !s.finished) store.set("table", JSON.stringify({ tableId: s.tableId, seat: s.seat }));
          if (s.finished) store.set("table", null);
        },
        ticket: (tk) => setTicket(tk),
        queue: (q) => setQueue(queueView(q, performance.now())),
        error: (code, message) => {
          setError(t("error", { message: message || code }));
          if (code === "PermissionDenied" || code === "NotFound") {
            store.set("table", null);
            setGame(null);
          }
        },
        reconnecting: () => setReconnecting(true),
        competition: (n) => competitionNotice.current(n),
        // Diagnostics (the browser tests keep the console): a refusal the follower retries.
        refused: (code, message, times) => console.warn(`trix: the table refused the seat (${code}: ${message}), ${times} time(s); retrying`),
      },
      start,
      spectator,
    );
    follower.current = f;
    setGame(start);
    (async () => {
      if (refresh) await f.refresh();
      await f.run();
    })().catch((err: unknown) => {
      const ce = ConnectError.from(err);
      if (ce.code === Code.NotFound || ce.code === Code.PermissionDenied) {
        store.set("table", null);
        setGame(null);
      } else fail(err);
    });
  };

  const signIn = async (display: string): Promise<boolean> => {
    setBusy(true);
    setError("");
    try {
      const r = await gw.signIn({ deviceSecret: deviceSecret(), displayName: display });
      store.set("name", display);
      setAuth({ token: r.token, playerId: r.playerId, name: display });
      authRef.current = { token: r.token, playerId: r.playerId, name: display };
      stopRefresh.current?.();
      stopRefresh.current = keepFresh(
        gw,
        r.expiresAt?.seconds ?? 0n,
        (token) => {
          const renewed = { token, playerId: r.playerId, name: display };
          authRef.current = renewed;
          setAuth(renewed);
        },
        () => signInAgain(display),
      );
      const saved = store.get("table");
      if (saved) {
        const { tableId, seat } = JSON.parse(saved) as { tableId: string; seat: number };
        follow(emptyState(tableId, seat), true); // a reload: a fresh view, then the events after it
      }
      return true;
    } catch (err) {
      fail(err);
      return false;
    } finally {
      setBusy(false);
    }
  };

  /** The token was lost (refused, or expired while the network was down): sign in again with the
   * device secret, every few seconds until it works (the network may still be down); the saved
   * table is followed again once signed in. */
  const signInAgain = (display: string, attempt = 0) => {
    void signIn(display).then((ok) => {
      if (!ok && attempt < SIGN_IN_RETRIES) setTimeout(() => signInAgain(display, attempt + 1), SIGN_IN_RETRY_MS);
    });
  };

  useEffect(() => {
    const saved = store.get("name");
    if (saved) void signIn(saved);
    return () => {
      follower.current?.close();
      stopRefresh.current?.();
    };
  }, []);

  const [privateCode, setPrivateCode] = useState("");
  const wish = (variant: Variant, opts: Options) => ({
    variant,
    options: {
      doubling: opts.doubling,
      doublingReveal: opts.simultaneous ? DoublingReveal.SIMULTANEOUS : DoublingReveal.SEQUENTIAL,
      cardTimeoutS: opts.cardTimer,
      contractTimeoutS: opts.contractTimer,
      doubleTimeoutS: opts.doubleTimer,
    },
  });

  /** Queue (quick match), host a private game, or join one by code; then follow the ticket. */
  const enter = async (how: { quick: Variant } | { host: Variant } | { code: string }, opts: Options) => {
    setError("");
    setBusy(true);
    try {
      const clientSeed = randomHex(16);
      let tk: Ticket | undefined;
      if ("quick" in how) tk = (await gw.findMatch({ wish: wish(how.quick, opts), clientSeed })).ticket;
      else if ("host" in how) {
        const r = await gw.createPrivateGame({ wish: wish(how.host, opts), clientSeed });
        setPrivateCode(r.code);
        tk = r.ticket;
      } else tk = (await gw.joinPrivateGame({ code: how.code, clientSeed })).ticket;
      setTicket(tk ?? null);
      follow(emptyState(tk?.tableId ?? "", tk?.tableId ? (tk?.seat ?? -1) : -1), false);
    } catch (err) {
      fail(err);
    } finally {
      setBusy(false);
    }
  };

  const act = async (kind: Action["kind"]) => {
    const f = follower.current;
    if (!f) return;
    setError("");
    try {
      await gw.submitAction({ action: action(f.state.tableId, f.state.sequence, kind) });
      if (kind.case === "autoPlay") f.autoPlay = kind.value; // its resumes leave the seat to the bot
    } catch (err) {
      fail(err);
      void f.refresh().catch(() => {});
    }
  };

  const quickMatch = (variant: Variant, opts: Options) => enter({ quick: variant }, opts);

  const leaveLobby = () => {
    setSpectating(false);
    setPrivateCode("");
    follower.current?.close();
    follower.current = null;
    store.set("table", null);
    setGame(null);
    setTicket(null);
    setQueue(null);
    setError("");
  };

  // Your turn: the tab's title changes and (unless muted) a short tone plays (./sound).
  const mine = game ? myTurn(game) : false;
  setSoundMuted(muted);
  useEffect(() => {
    document.title = mine ? `● ${t("yourTurn")} · ${t("title")}` : `${t("title")} · Trix`;
    if (mine && !muted) play("turn");
  }, [mine, game?.turn?.turnSeq, lang]);

  // The seed turn before the first deal (docs/rules.md §11): the browser gives a random seed.
  useEffect(() => {
    if (game && mine && game.turn?.clientSeeds) void act({ case: "clientSeed", value: randomHex(16) });
  }, [mine, game?.turn?.turnSeq]);

  // A table's link (#/watch/<id>, the table screen's "copy link"): watch it once signed in,
  // unless a game of our own is on; the lobby is the screen "stop watching" returns to.
  useEffect(() => {
    if (!auth || !hash.startsWith("#/watch/")) return;
    const id = decodeURIComponent(hash.slice("#/watch/".length));
    location.hash = "#/";
    if (id && (!game || spectating || game.finished)) follow(emptyState(id, -1), false, true);
  }, [hash, auth?.playerId]);

  // The names of the seats of the games seen here, for the replay (records name players by id).
  useEffect(() => {
    if (game?.finished) rememberNames(game.seats.filter((x) => x.playerId && x.name && !x.bot).map((x) => [x.playerId, x.name]));
  }, [game?.finished, game?.tableId]);

  // Chat, friends and invitation links (issue 44, ../social): loaded once signed in.
  const social = useSocial(gw, auth?.playerId ?? "", lang, (code) => void enter({ code }, DEFAULT_OPTIONS), (id, inv = "") => follow(emptyState(id, -1), false, true, inv), fail);
  // A competition's next table opens by itself (./competitionsRoute) when no game of ours is on.
  const comps = useCompetitionFollow(gw, !!auth, !game || game.finished || spectating, (tableId, seat) => follow(emptyState(tableId, seat), true));
  competitionNotice.current = comps.notice;

  const verify = hash.startsWith("#/verify");
  const competitions = hash.startsWith("#/competitions");
  const replay = hash.startsWith("#/replay/") ? decodeURIComponent(hash.slice("#/replay/".length)) : "";
  const history = hash.startsWith("#/history") || !!replay;
  return (
    <div class="app">
      <header class="bar">
        <strong class="brand">{t("title")}</strong>
        <nav>
          <a href="#/" aria-current={verify || history || competitions ? undefined : "page"}>
            {t("playNav")}
          </a>
          <a href="#/competitions" aria-current={competitions ? "page" : undefined}>
            {t("competitionsNav")}
          </a>
          <a href="#/history" aria-current={history ? "page" : undefined}>
            {t("historyNav")}
          </a>
          <a href="#/verify" aria-current={verify ? "page" : undefined}>
            {t("verifyNav")}
          </a>
        </nav>
        {/* A toggle showing its state (pressed: the sound is on), remembered across visits. */}
        <button
          type="button"
          class="small sound"
          data-action="sound"
          aria-pressed={!muted}
          onClick={() => {
            store.set("muted", muted ? "0" : "1");
            setMuted(!muted);
          }}
        >
          {t("sound")}: {muted ? t("soundOff") : t("soundOn")}
        </button>
        <button type="button" class="small" lang={lang === "ar" ? "en" : "ar"} aria-label={t("langLabel")} onClick={() => setLang(lang === "ar" ? "en" : "ar")}>
          {t("lang")}
        </button>
      </header>
      {reconnecting && (
        <p class="banner" role="status">
          {t("reconnecting")}
        </p>
      )}
      {error && (
        <p class="banner error" role="alert">
          {error}
        </p>
      )}
      <main>
        <Boundary t={t} redraw={`${hash}|${game?.tableId ?? ""}|${String(game?.sequence ?? "")}|${lang}`}>
        {verify ? (
          <VerifyPage t={t} gw={auth ? gw : null} initial={game?.recordJson ?? ""} table={decodeURIComponent(hash.slice("#/verify/".length))} key={hash} />
        ) : auth && replay ? (
          <ReplayPage t={t} gw={gw} tableId={replay} key={replay} me={auth.playerId} names={knownNames()} />
        ) : auth && history ? (
          <HistoryPage t={t} gw={gw} me={auth.playerId} names={knownNames()} />
        ) : !auth ? (
          <form
            class="card-box signin"
            onSubmit={(e) => {
              e.preventDefault();
              if (name.trim()) void signIn(name.trim());
            }}
          >
            <label for="name">{t("namePrompt")}</label>
            <input id="name" name="name" value={name} maxLength={32} autoComplete="nickname" onInput={(e) => setName(e.currentTarget.value)} required />
            <button type="submit" disabled={busy}>
              {busy ? t("signingIn") : t("guest")}
            </button>
          </form>
        ) : game && (game.tableId || ticket) ? (
          game.tableId && game.sequence > 0n ? (
            <TableView
              t={t}
              lang={lang}
              game={game}
              me={auth.playerId}
              act={act}
              newGame={leaveLobby}
              playAgain={() => {
                const variant = game.variant;
                leaveLobby();
                void quickMatch(variant, DEFAULT_OPTIONS);
              }}
              spectator={spectating}
              invite={() => gw.inviteSpectator({ tableId: game.tableId }).then((r) => r.invitation)}
              social={social.atTable(game, spectating)} />
          ) : (
            <QuickMatch
              t={t}
              queue={privateCode ? null : queue}
              cancel={() => {
                if (ticket) void gw.cancelMatch({ ticketId: ticket.ticketId }).catch(() => {});
                leaveLobby();
              }}
            >
              {privateCode && (
                <p>
                  {t("shareCode", { code: "" })}
                  <strong dir="ltr" data-code={privateCode}>
                    {privateCode}
                  </strong>
                </p>
              )}
              {privateCode && <PrivateLobby t={t} gw={gw} code={privateCode} fail={fail} />}
              {privateCode && social.friends(privateCode)}
            </QuickMatch>
          )
        ) : competitions ? (
          <CompetitionsRoute
            t={t}
            gw={gw}
            me={auth.playerId}
            hash={hash}
            changed={comps.changed}
            follow={comps.follow}
            play={(id, seat) => follow(emptyState(id, seat), true)}
            watch={(id) => follow(emptyState(id, -1), false, true)}
          />
        ) : (
          <>
            <Lobby t={t} name={auth.name} busy={busy} start={quickMatch} host={(v, o) => void enter({ host: v }, o)} join={(code) => void enter({ code }, DEFAULT_OPTIONS)} watch={(id, invitation) => follow(emptyState(id, -1), false, true, invitation)} />
            <LobbyBoard t={t} gw={gw} me={auth.playerId} names={knownNames()} watch={(id) => follow(emptyState(id, -1), false, true)} resume={(id, seat) => follow(emptyState(id, seat), true)} />
            {social.friends()}
          </>
        )}
        </Boundary>
      </main>
    </div>
  );
}

/** A screen that throws while drawing does not take the app down with it (without a
 * boundary Preact leaves nothing on the page): the error goes to the console, a line says
 * so, and the next state (`redraw` changes: a move, another page) draws the screen again. */
class Boundary extends Component<{ t: T; redraw: string; children?: ComponentChildren }, { failedAt: string | null }> {
  override state = { failedAt: null as string | null };

  override componentDidCatch(err: unknown): void {
    console.error("trix: a screen failed to draw", err);
    this.setState({ failedAt: this.props.redraw });
  }

  render() {
    const { failedAt } = this.state;
    if (failedAt !== null && failedAt === this.props.redraw) {
      return (
        <p class="banner error" role="alert" data-render-failed="1">
          {this.props.t("renderFailed")}
        </p>
      );
    }
    return this.props.children;
  }
}

type Options = { doubling: boolean; simultaneous: boolean; cardTimer: number; contractTimer: number; doubleTimer: number };

/** docs/rules.md §7 and §9 defaults: doubling on, sequential answers, 12 / 15 / 8 s timers. */
const DEFAULT_OPTIONS: Options = { doubling: true, simultaneous: false, cardTimer: 12, contractTimer: 15, doubleTimer: 8 };

type LobbyProps = {
  t: T;
  name: string;
  busy: boolean;
  start: (v: Variant, o: Options) => void;
  host: (v: Variant, o: Options) => void;
  join: (code: string) => void;
  watch: (tableId: string, invitation: string) => void;
};

function Lobby({ t, name, busy, start, host, join, watch }: LobbyProps) {
  const [opts, setOpts] = useState<Options>(DEFAULT_OPTIONS);
  const [tableId, setTableId] = useState("");
  const [invitation, setInvitation] = useState("");
  const [code, setCode] = useState("");
  const [privateVariant, setPrivateVariant] = useState<Variant>(Variant.TRIX);
  const variants = [Variant.TRIX, Variant.TRIX_PARTNERSHIP, Variant.COMPLEX, Variant.COMPLEX_PARTNERSHIP];
  return (
    <section class="card-box lobby">
      <p>{t("signedInAs", { name })}</p>
      <h1>{t("quickMatch")}</h1>
      <div class="variants">
        {variants.map((v) => (
          <button type="button" key={v} data-variant={Variant[v]} disabled={busy} onClick={() => start(v, opts)}>
            {t(VARIANT_KEYS[v] as Key)}
          </button>
        ))}
      </div>
      <fieldset>
        <legend>{t("options")}</legend>
        <label>
          <input type="checkbox" checked={opts.doubling} onChange={(e) => setOpts({ ...opts, doubling: e.currentTarget.checked })} /> {t("doubling")}
        </label>
        <label>
          {t("doublingReveal")}{" "}
          <select id="reveal" value={opts.simultaneous ? "s" : "q"} onChange={(e) => setOpts({ ...opts, simultaneous: e.currentTarget.value === "s" })}>
            <option value="q">{t("sequential")}</option>
            <option value="s">{t("simultaneous")}</option>
          </select>
        </label>
        <Timer t={t} id="card-timer" label="cardTimer" value={opts.cardTimer} choices={[8, 12, 20, 30]} set={(v) => setOpts({ ...opts, cardTimer: v })} />
        <Timer t={t} id="contract-timer" label="contractTimer" value={opts.contractTimer} choices={[10, 15, 30]} set={(v) => setOpts({ ...opts, contractTimer: v })} />
        <Timer t={t} id="double-timer" label="doubleTimer" value={opts.doubleTimer} choices={[5, 8, 15, 30]} set={(v) => setOpts({ ...opts, doubleTimer: v })} />
      </fieldset>
      <fieldset class="private">
        <legend>{t("privateGame")}</legend>
        <div class="row">
          <label for="pv">{t("variant")}</label>
          <select id="pv" value={String(privateVariant)} onChange={(e) => setPrivateVariant(Number(e.currentTarget.value) as Variant)}>
            {variants.map((v) => (
              <option key={v} value={String(v)}>
                {t(VARIANT_KEYS[v] as Key)}
              </option>
            ))}
          </select>
          <button type="button" data-action="host" disabled={busy} onClick={() => host(privateVariant, opts)}>
            {t("create")}
          </button>
        </div>
        <form
          class="row join"
          onSubmit={(e) => {
            e.preventDefault();
            if (code.trim()) join(code.trim());
          }}
        >
          <label for="code">{t("code")}</label>
          <input id="code" dir="ltr" value={code} autoComplete="off" onInput={(e) => setCode(e.currentTarget.value)} />
          <button type="submit" disabled={busy}>
            {t("join")}
          </button>
        </form>
      </fieldset>
      <form
        class="row watch"
        onSubmit={(e) => {
          e.preventDefault();
          if (tableId.trim()) watch(tableId.trim(), invitation.trim());
        }}
      >
        <label for="watch">{t("watch")}</label>
        <input id="watch" dir="ltr" value={tableId} onInput={(e) => setTableId(e.currentTarget.value)} />
        <label for="invitation">{t("invitation")}</label>
        <input id="invitation" dir="ltr" value={invitation} autoComplete="off" onInput={(e) => setInvitation(e.currentTarget.value)} />
        <button type="submit">{t("watchGo")}</button>
      </form>
    </section>
  );
}

function Timer({ t, id, label, value, choices, set }: { t: T; id: string; label: Key; value: number; choices: number[]; set: (v: number) => void }) {
  return (
    <label>
      {t(label)}{" "}
      <select id={id} value={String(value)} onChange={(e) => set(Number(e.currentTarget.value))}>
        {choices.map((s) => (
          <option key={s} value={String(s)}>
            {s}
          </option>
        ))}
      </select>
    </label>
  );
}
