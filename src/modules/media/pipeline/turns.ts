/**
 * Turn detection: when the caller is talking and when their turn is over. Speech started or words
 * heard mean the caller is talking (a confirmed start, or words, interrupt an agent speaking; an
 * unconfirmed start does not, so a cough or the line's hiss stops nothing). At each pause the
 * recogniser reports (`utterance_end`), the agent's end-of-turn detector (turn-detection/) says
 * how much longer the caller must stay silent: none, and their words since the last turn are the
 * turn at once; some, and the turn ends when that silence has passed, unless the caller speaks
 * again first and the turn goes on. That silence is the caller's audio as the recogniser heard it
 * when it reports it (`silence`: the voice-activity detector, which may run behind the line), else
 * the wall clock. A recogniser that detects turns itself (Deepgram Flux) says so with
 * `end_of_turn`, which ends the turn at once (an eager one: a reply may be prepared).
 */
import type { TurnDetector } from '../turn-detection/types.ts';
import type { Stage, StageLink } from './pipeline.ts';

/** How a held turn is timed: real timers on a call; tests may step them. */
export interface HoldTimer {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}
const realTimer: HoldTimer = { set: (run, ms) => setTimeout(run, ms), clear: (handle) => clearTimeout(handle as NodeJS.Timeout) };

/**
 * A sound the recogniser has not confirmed as speech (Deepgram's SpeechStarted, the detector's
 * first window of voice) holds a pending turn at most this long: words or a confirmed start follow
 * within it when the caller really went on; a cough or a click must not hold the turn forever.
 */
export const UNCONFIRMED_HOLD_MS = 1_000;

export function turnsStage(detector: TurnDetector, link: StageLink, timer: HoldTimer = realTimer): Stage {
  /** The final words of the turn so far, one entry per recognised stretch. */
  let words: string[] = [];
  let hold: unknown;
  /** The recogniser reports the caller's silence (`silence`): a held turn ends once it reaches `holdUntilMs`. */
  let reportsSilence = false;
  let silenceMs = 0;
  let holdUntilMs: number | undefined;
  /** Anything the caller does after a question to the detector makes its answer stale. */
  let asked = 0;
  let closed = false;

  const release = () => {
    if (hold !== undefined) timer.clear(hold);
    hold = undefined;
    holdUntilMs = undefined;
  };
  const holdFor = (ms: number) => {
    release();
    hold = timer.set(endTurn, ms);
  };
  function endTurn(): void {
    release();
    if (closed || !words.length) return;
    const text = words.join(' ');
    words = [];
    link.down({ type: 'caller_turn', text });
  }
  /** The caller is speaking again: the turn goes on. */
  function resumed(): void {
    asked++;
    release();
    silenceMs = 0;
  }
  function ask(afterSilenceMs: number): void {
    const question = ++asked;
    const silentFor = Math.max(afterSilenceMs, reportsSilence ? silenceMs : 0);
    const decided = (holdMs: number) => {
      if (question !== asked || closed) return;
      if (holdMs <= 0) return endTurn();
      if (!reportsSilence) return holdFor(holdMs);
      release();
      holdUntilMs = silentFor + holdMs;
      if (silenceMs >= holdUntilMs) endTurn();
    };
    let decision;
    try {
      decision = detector.decide({ text: words.join(' '), silenceMs: silentFor });
    } catch {
      // A detector that fails cannot keep the caller waiting: the pause ends the turn.
      return decided(0);
    }
    if (!(decision instanceof Promise)) return decided(decision.holdMs);
    decision.then(
      (made) => decided(made.holdMs),
      () => decided(0),
    );
  }

  return {
    name: 'turn detection',
    down: {
      caller_audio(frame) {
        detector.hear?.(frame.audio);
        // A stage below may hear the caller too (a speech-to-speech model whose turns ours detects).
        link.down(frame);
      },
      speech_started({ confirmed }) {
        if (confirmed === true) resumed();
        // Timed by the recogniser's silence, the held turn waits as long as the sound lasts: its silence reports stop meanwhile.
        else if (words.length && hold !== undefined && !reportsSilence) {
          // Maybe the caller going on: held until words come (or the sound is dropped and the pause asked about again).
          asked++;
          holdFor(UNCONFIRMED_HOLD_MS);
        }
        // The detector's own first window of voice is not news to the conversation: its confirmation follows.
        if (confirmed !== false) link.down({ type: 'caller_speaking', interrupts: confirmed === true });
      },
      transcript({ text, final }) {
        if (!text.trim()) return;
        // Words hold the turn (a live recogniser's come while the caller speaks); the silence so far stands, as an
        // utterance recogniser's words come after their utterance, while its silence is already reported.
        asked++;
        release();
        link.down({ type: 'caller_speaking', interrupts: true });
        if (final) words.push(text.trim());
      },
      utterance_end({ afterSilenceMs }) {
        if (words.length) ask(afterSilenceMs ?? 0);
      },
      silence({ ms }) {
        reportsSilence = true;
        silenceMs = ms;
        if (holdUntilMs !== undefined && ms >= holdUntilMs) endTurn();
      },
      turn_resumed() {
        link.down({ type: 'caller_turn_resumed' });
      },
      end_of_turn({ text, eager }) {
        // An eager end may yet be resumed: a reply is prepared, and the turn ends at the recogniser's final word on it.
        if (eager) return void (text.trim() && link.down({ type: 'caller_turn_likely', text: text.trim() }));
        asked++;
        release();
        if (text.trim()) words = [text.trim()];
        endTurn();
      },
    },
    close() {
      closed = true;
      release();
      detector.close?.();
    },
  };
}
