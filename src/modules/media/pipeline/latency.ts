/**
 * The latency meter: an observer that times each of the agent's answers at the caller's ear, from
 * the caller's last sound to the first audio of the answer handed to the line, with the steps
 * between (the end of turn decided, the recogniser's last words, the reply's first words).
 *
 * Its clock is the line's, as the recording's is (recording.ts): the caller's audio so far, plus
 * the time since its last frame arrived. So the gap the recording shows between the caller's last
 * sound and the agent's first audio is the one measured here (within a frame), whatever the
 * recogniser says of its words' timing. The caller's last sound is the end of the last frame of
 * theirs louder than SOUND_PEAK: a phone line's hiss and comfort noise stay well below it.
 */
import { performance } from 'node:perf_hooks';
import { durationMs, hasSampleAbove, type AudioFormat } from '../../../platform/audio.ts';
import type { Reply } from './frames.ts';
import type { Observer } from './pipeline.ts';

/** One answer at the caller's ear: milliseconds after the caller's last sound, but `callerStoppedMs`. */
export interface VoiceLatency {
  /** When the caller's last sound before the answer ended, in milliseconds of the line from its start. */
  callerStoppedMs: number;
  /** Turn detection settled the caller's turn. */
  endOfTurnMs: number;
  /** The recogniser gave its last final words of the turn (null: none came after the caller's last sound). */
  sttFinalMs: number | null;
  /** The reply's first words reached the sentence stage (the model's first token, or a line spoken whole). */
  firstTokenMs: number;
  /** The answer's first audio was handed to the line: what the caller hears next, "caller stops → agent heard". */
  heardMs: number;
}

/** A frame's sample louder than this (16-bit, about −30 dBFS) is the caller's sound, not the line's noise. */
export const SOUND_PEAK = 1000;

export interface LatencyMeter {
  observe: Observer;
  /** The answer's latency once its first audio went to the line; undefined for a reply that answered no spoken turn. */
  of(reply: Reply): VoiceLatency | undefined;
}

export function latencyMeter(format: AudioFormat, now: () => number = () => performance.now()): LatencyMeter {
  /** Milliseconds of the caller's audio so far, and when its last frame arrived. */
  let lineMs = 0;
  let lastFrameAt: number | undefined;
  let callerStoppedMs: number | undefined;
  let sttFinalMs: number | undefined;
  /** The caller's turn settled, awaiting the reply that answers it. */
  let settled: { callerStoppedMs: number; endOfTurnMs: number; sttFinalMs: number | null } | undefined;
  /** The reply answering it, until its first audio goes out. */
  let answering: { reply: Reply; firstTokenMs: number } | undefined;
  /** Whose sentence is being synthesised: the audio that comes next is its. */
  let speaking: Reply | undefined;
  const measured = new WeakMap<Reply, VoiceLatency>();

  const lineNow = () => lineMs + (lastFrameAt === undefined ? 0 : now() - lastFrameAt);
  const since = (stoppedMs: number) => Math.max(0, Math.round(lineNow() - stoppedMs));

  return {
    observe(frame, stage) {
      if (frame.type === 'caller_audio' && stage === 'recognition') {
        lineMs += durationMs(frame.audio.length, format);
        lastFrameAt = now();
        if (hasSampleAbove(frame.audio, format, SOUND_PEAK)) {
          callerStoppedMs = lineMs;
          sttFinalMs = undefined;
        }
      } else if (frame.type === 'transcript' && frame.final && stage === 'turn detection') {
        if (callerStoppedMs !== undefined) sttFinalMs = since(callerStoppedMs);
      } else if (frame.type === 'caller_turn' && stage === 'conversation') {
        if (callerStoppedMs === undefined) return;
        settled = { callerStoppedMs, endOfTurnMs: since(callerStoppedMs), sttFinalMs: sttFinalMs ?? null };
        // The next turn is measured from a sound after this one.
        callerStoppedMs = undefined;
        sttFinalMs = undefined;
      } else if ((frame.type === 'agent_text' || frame.type === 'agent_line') && stage === 'sentences') {
        if (!settled || answering?.reply === frame.reply) return;
        answering = { reply: frame.reply, firstTokenMs: since(settled.callerStoppedMs) };
      } else if (frame.type === 'sentence' && stage === 'synthesis') {
        speaking = frame.reply;
      } else if (frame.type === 'agent_audio' && stage === 'playback') {
        if (!settled || !answering || speaking !== answering.reply) return;
        measured.set(answering.reply, { ...settled, firstTokenMs: answering.firstTokenMs, heardMs: since(settled.callerStoppedMs) });
        settled = undefined;
        answering = undefined;
      }
    },
    of: (reply) => measured.get(reply),
  };
}
