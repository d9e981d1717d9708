import type { EndReason } from '../calls/service.ts';

/**
 * The two clocks every live line keeps, whatever carries its speech: the silence watch (prompt the
 * caller once, then say goodbye) and the call's maximum duration.
 */
export interface LineTimers {
  /** Watches for silence again: `afterMs` (the agent's words still playing) plus the silence timeout. */
  armSilence(afterMs?: number): void;
  disarmSilence(): void;
  /** The caller said something: the next silence is prompted again before the call ends. */
  heard(): void;
  stop(): void;
}

export function lineTimers(
  options: { silenceTimeoutMs: number; maxDurationMs: number },
  on: {
    /** The first silence: ask whether the caller is still there, then `armSilence` again. */
    promptSilence(): void;
    end(goodbye: string, reason: EndReason): void;
  },
): LineTimers {
  let stopped = false;
  let prompted = false;
  let silenceTimer: ReturnType<typeof setTimeout> | undefined;
  const durationTimer = setTimeout(() => on.end(DURATION_GOODBYE, 'max_duration'), options.maxDurationMs);
  const disarmSilence = () => clearTimeout(silenceTimer);
  return {
    armSilence(afterMs = 0) {
      disarmSilence();
      if (stopped) return;
      silenceTimer = setTimeout(() => {
        if (prompted) return on.end(SILENCE_GOODBYE, 'silence');
        prompted = true;
        on.promptSilence();
      }, afterMs + options.silenceTimeoutMs);
    },
    disarmSilence,
    heard() {
      prompted = false;
      disarmSilence();
    },
    stop() {
      stopped = true;
      disarmSilence();
      clearTimeout(durationTimer);
    },
  };
}

export const SILENCE_PROMPT = 'Are you still there?';
export const SILENCE_GOODBYE = "I can't hear you, so I'll let you go. Goodbye.";
export const DURATION_GOODBYE = "I'm sorry, we have reached the time limit for this call. Thank you, goodbye.";
