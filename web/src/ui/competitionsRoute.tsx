// The competitions in the app shell (issue 43), the part on the first load: the route to the
// Competitions tab and a competition's page (their code and strings fetched when first opened),
// and the follower of the player's competition that opens his next table by itself: on a
// `seated` notice of the gateway's WatchCompetitions stream (open while he follows one, resumed
// after every break), and, while he plays no table, from ViewCompetition every few seconds (the
// notices are best effort: one sent while the stream was down is not sent again). A `changed`
// notice makes the competition's page read it again. Nothing here runs on a move.
import { useEffect, useRef, useState } from "preact/hooks";
import type { CompetitionNotice } from "../gen/trix/v1/competitions_pb";
import { CompetitionState } from "../gen/trix/v1/competitions_pb";
import type { Gateway } from "../client/api";
import { myLatestTable } from "../client/competitions";
import type { T } from "./App";

type Module = typeof import("./Competitions");

/** How often a player between tables asks whether a round has seated him. */
export const SEAT_POLL_MS = 2000;
/** The notices' stream is opened again this long after it ended (an edge ends a quiet stream). */
const WATCH_RETRY_MS = 250;
const STORE_KEY = "trix.competition";

const stored = (): string => {
  try {
    return localStorage.getItem(STORE_KEY) ?? "";
  } catch {
    return "";
  }
};
const store = (id: string) => {
  try {
    if (id) localStorage.setItem(STORE_KEY, id);
    else localStorage.removeItem(STORE_KEY);
  } catch {
    /* private mode: followed while the page is open */
  }
};

/** The competition the player follows (the one he entered or opened last), and its changes. */
export function useCompetitionFollow(gw: Gateway, signedIn: boolean, idle: boolean, open: (tableId: string, seat: number) => void) {
  const [id, setId] = useState(stored);
  const [changed, setChanged] = useState(0);
  const opened = useRef(new Set<string>());
  /** The latest round drawn when following began: a table of a later round is shown even if it
   * ended before it could be opened. */
  const baseline = useRef<number | null>(null);
  useEffect(() => {
    baseline.current = null;
  }, [id]);
  const openOnce = (tableId: string, seat: number) => {
    if (!tableId || seat < 0 || opened.current.has(tableId)) return;
    opened.current.add(tableId);
    open(tableId, seat);
  };
  useEffect(() => {
    if (!signedIn || !idle || !id) return;
    let stopped = false;
    const poll = async () => {
      try {
        const r = await gw.viewCompetition({ competitionId: id });
        if (stopped) return;
        const state = r.competition?.state ?? CompetitionState.UNSPECIFIED;
        if (!r.me || state === CompetitionState.FINISHED || state === CompetitionState.CANCELLED) return; // nothing more to open
        const tables = r.bracket?.tables ?? r.standings?.tables ?? [];
        if (baseline.current === null) baseline.current = Math.max(0, ...tables.map((t) => t.round));
        if (r.seat) {
          // The bracket names a round's table as soon as it is drawn, a moment before the table
          // exists: opened once it answers (opened too early, its NOT_FOUND would drop it for good
          // and the game would be played without him).
          const { tableId, seat } = r.seat;
          if (opened.current.has(tableId) || !(await gw.getView({ tableId }).then(() => true, () => false)) || stopped) return;
          openOnce(tableId, seat);
        } else {
          // A round played while nothing was open here (tables of bots end in a moment, and a
          // notice may come while the stream is being opened again): its result is shown.
          const latest = myLatestTable(tables, r.me.playerId);
          if (latest && latest.round > baseline.current) openOnce(latest.tableId, latest.seat);
        }
      } catch {
        /* the next poll tries again */
      }
    };
    void poll();
    const timer = setInterval(() => void poll(), SEAT_POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [signedIn, idle, id]);
  const notice = (n: CompetitionNotice) => {
    if (n.kind.case === "seated") {
      if (n.kind.value.competitionId !== id) {
        store(n.kind.value.competitionId);
        setId(n.kind.value.competitionId);
      }
      openOnce(n.kind.value.tableId, n.kind.value.seat);
    } else if (n.kind.case === "changed") setChanged((x) => x + 1);
  };
  const noticeRef = useRef(notice);
  noticeRef.current = notice;
  useEffect(() => {
    if (!signedIn || !id) return;
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        try {
          for await (const r of gw.watchCompetitions({}, { signal: stop.signal })) if (r.notice) noticeRef.current(r.notice);
        } catch {
          /* ended or refused: opened again below; ViewCompetition covers what was missed */
        }
        if (!stop.signal.aborted) {
          setChanged((x) => x + 1);
          await new Promise((r) => setTimeout(r, WATCH_RETRY_MS));
        }
      }
    })();
    return () => stop.abort();
  }, [signedIn, id]);
  return {
    id,
    changed,
    follow: (competitionId: string) => {
      store(competitionId);
      setId(competitionId);
    },
    notice,
  };
}

type RouteProps = { t: T; gw: Gateway; me: string; hash: string; changed: number; follow: (id: string) => void; play: (tableId: string, seat: number) => void; watch: (tableId: string) => void };

/** #/competitions (the tab) and #/competitions/<id> (one competition), loaded when first shown. */
export function CompetitionsRoute({ t, gw, me, hash, changed, follow, play, watch }: RouteProps) {
  const [mod, setMod] = useState<Module | null>(null);
  useEffect(() => {
    void import("./Competitions").then((m) => setMod(m));
  }, []);
  const id = decodeURIComponent(hash.slice("#/competitions/".length));
  useEffect(() => {
    if (id) follow(id);
  }, [id]);
  if (!mod) return <p aria-busy="true">{t("loading")}</p>;
  return id ? (
    <mod.CompetitionPage t={t} gw={gw} me={me} id={id} changed={changed} play={play} watch={watch} />
  ) : (
    <mod.CompetitionsTab t={t} gw={gw} me={me} opened={(cid) => (location.hash = `#/competitions/${encodeURIComponent(cid)}`)} />
  );
}
