/**
 * End of turn: when the caller has finished speaking and the agent should answer. The recogniser
 * reports each short pause (`utterance_end`, a few hundred milliseconds of silence); the turn
 * detection stage (pipeline/turns.ts) then asks the agent's detector how much longer the caller
 * must stay silent before their turn is over: nothing more for a finished question, longer for an
 * unfinished phrase. A caller who speaks again meanwhile goes on with the same turn. Each detector
 * is one folder here and one line in registry.ts.
 */
import type { AudioFormat } from '../../../platform/audio.ts';

/** What a detector is asked at a pause. */
export interface TurnSoFar {
  /** The caller's words of this turn so far (every utterance since the last turn ended). */
  text: string;
  /** How long the caller has been silent when asked (the recogniser's pause). */
  silenceMs: number;
}

export interface TurnDecision {
  /** How much longer the caller must stay silent before their turn is over; 0: it is over now. */
  holdMs: number;
  /** Why, in a few words (the latency meter and debug logs show it). */
  reason: string;
}

export interface TurnDetector {
  /** The caller's audio, in the line's format, as it arrives (a detector of the voice itself keeps what it needs). */
  hear?(audio: Buffer): void;
  decide(turn: TurnSoFar): TurnDecision | Promise<TurnDecision>;
  /** The call is over. */
  close?(): void;
}

/** What the service's settings give every detector of a call. */
export interface TurnDetectorSettings {
  /** The line's audio format (what `hear` is given). */
  format: AudioFormat;
  /** The agent's language (BCP-47), which the caller speaks. */
  language: string;
  /** The silence that ends a turn when nothing better is known (VOICE_END_OF_SPEECH_MS). */
  endOfSpeechMs: number;
  /** The longest silence an unfinished phrase is waited for (VOICE_UNFINISHED_MS). */
  unfinishedMs: number;
  /** Smart Turn v3's ONNX file (SMART_TURN_MODEL_PATH), when the operator installed it. */
  smartTurnModel?: string;
}

/** Silence still to wait for, so that the caller will have been silent `totalMs` in all. */
export const holdUntil = (totalMs: number, turn: TurnSoFar): number => Math.max(0, totalMs - turn.silenceMs);
