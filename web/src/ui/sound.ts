// The table's sounds (issue 39), made with WebAudio at play time: no audio file in the first
// load. A card played (a short tap), a trick taken (a soft sweep), your turn (two rising
// tones), a doubled card taken (a low three-note fall). One mute for all, the header's toggle
// (App keeps it across visits and tells this module).

export type Sound = "card" | "trick" | "turn" | "doubled";

/** Each sound as notes: start (s after now), frequency (Hz), length (s), wave, peak gain. */
type Note = [number, number, number, OscillatorType, number];
export const SOUNDS: Record<Sound, Note[]> = {
  card: [[0, 520, 0.05, "triangle", 0.06]],
  trick: [
    [0, 330, 0.09, "sine", 0.05],
    [0.07, 440, 0.12, "sine", 0.05],
  ],
  turn: [
    [0, 660, 0.1, "sine", 0.06],
    [0.12, 880, 0.14, "sine", 0.06],
  ],
  doubled: [
    [0, 392, 0.14, "square", 0.035],
    [0.15, 311, 0.14, "square", 0.035],
    [0.3, 196, 0.3, "square", 0.035],
  ],
};

let muted = false;
let audio: AudioContext | null = null;

export function setMuted(m: boolean): void {
  muted = m;
}

export function play(kind: Sound): void {
  if (muted || typeof AudioContext === "undefined") return;
  try {
    audio ??= new AudioContext();
    const ctx = audio;
    if (ctx.state === "suspended") void ctx.resume().catch(() => {});
    const t0 = ctx.currentTime + 0.01;
    for (const [at, freq, len, wave, peak] of SOUNDS[kind]) {
      const o = ctx.createOscillator();
      const g = ctx.createGain();
      o.type = wave;
      o.frequency.value = freq;
      // A quick attack and an exponential release: no click at either end.
      g.gain.setValueAtTime(0.0001, t0 + at);
      g.gain.exponentialRampToValueAtTime(peak, t0 + at + 0.01);
      g.gain.exponentialRampToValueAtTime(0.0001, t0 + at + len);
      o.connect(g).connect(ctx.destination);
      o.start(t0 + at);
      o.stop(t0 + at + len + 0.02);
    }
  } catch {
    /* no audio here: the table still shows everything */
  }
}
