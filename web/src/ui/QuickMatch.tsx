// The wait for a table (issue 39): instead of one line for ~20 s, the players found so far
// and a countdown to when bots take the empty seats, with Cancel. The players' line is a
// polite live region (a screen reader hears each new player); the countdown is a timer,
// which is not read out every second.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { secondsLeft } from "../client/queue";
import type { QueueView } from "../client/queue";
import type { T } from "./App";
import { tx } from "./fmt";
import "./QuickMatch.css";

type Props = { t: T; queue: QueueView | null; cancel: () => void; children?: ComponentChildren };

export function QuickMatch({ t, queue, cancel, children }: Props) {
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => {
    if (!queue || queue.botsAtMs === null) return;
    const timer = setInterval(() => setNow(performance.now()), 250);
    return () => clearInterval(timer);
  }, [queue]);
  const left = queue ? secondsLeft(queue, now) : null;
  return (
    <section class="card-box waiting" aria-labelledby="waiting-title">
      <p id="waiting-title" class="waiting-title">
        {t("searching")}
      </p>
      {queue && (
        <div class="queue" data-queue="1">
          <p aria-live="polite" data-players={queue.players}>
            {tx(t, "queueFound", { n: queue.players })}
          </p>
          <div class="queue-seats" aria-hidden="true">
            {[0, 1, 2, 3].map((i) => (
              <span key={i} class={i < queue.players ? "found" : ""} />
            ))}
          </div>
          {left === null ? (
            <p>{t("queueNoBots")}</p>
          ) : (
            <p role="timer" data-bots-in={left}>
              {left > 0 ? tx(t, "queueBotsIn", { s: left }) : t("queueBotsNow")}
            </p>
          )}
        </div>
      )}
      {children}
      <button type="button" data-action="cancel" onClick={cancel}>
        {t("cancel")}
      </button>
    </section>
  );
}
