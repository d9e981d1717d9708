/**
 * The latency meter: an observer that times each of the agent's turns from the moment the caller's
 * turn was settled (turn detection's word) to the model's first words and to the first audio sent
 * to the line, the delay the caller hears beyond their own pause.
 */
import { performance } from 'node:perf_hooks';
import type { Observer } from './pipeline.ts';

/** One answered turn, in milliseconds from the caller's turn being settled. */
export interface TurnLatency {
  /** The reply's first words reached the sentence stage (the model's first token, or a line spoken whole). */
  firstTextMs: number;
  /** Its first audio was handed to the line. */
  firstAudioMs: number;
}

export function latencyMeter(onTurn: (latency: TurnLatency) => void, now: () => number = () => performance.now()): Observer {
  let turnAt: number | undefined;
  let firstTextAt: number | undefined;
  return (frame, stage) => {
    if (frame.type === 'caller_turn' && stage === 'conversation') {
      turnAt = now();
      firstTextAt = undefined;
    } else if (turnAt !== undefined && (frame.type === 'agent_text' || frame.type === 'agent_line') && stage === 'sentences') {
      firstTextAt ??= now();
    } else if (turnAt !== undefined && frame.type === 'agent_audio' && stage === 'playback') {
      const at = now();
      onTurn({ firstTextMs: (firstTextAt ?? at) - turnAt, firstAudioMs: at - turnAt });
      turnAt = undefined;
    }
  };
}
