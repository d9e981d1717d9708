/**
 * A call recorded as its line carried it: the caller on the left channel, the agent on the right,
 * on one timeline, in the line's own format.
 *
 * The line's clock is the caller's audio: a transport delivers it without pause (Twilio sends a
 * 20 ms frame whether anyone speaks or not), so the caller's samples so far are the time on the
 * line. The agent's audio plays from the moment it is sent, or right after what the line still has
 * queued; a clear (barge-in) drops what was queued beyond that moment, as the line does, so the
 * agent's channel holds what the caller could hear, as far as we can know it: the line's own delay
 * (tens of milliseconds) is not seen. The recording ends where the caller's audio ends: what the
 * agent had queued after that was never played.
 *
 * Audio is handed on in chunks of `chunkSeconds` of line time as soon as the line has passed them,
 * so a call holds at most one chunk of both channels, plus the agent's audio queued ahead of the
 * line.
 */
import type { AudioFormat } from '../../platform/audio.ts';
import type { RecordingChunk } from '../calls/service.ts';

/** What the pipeline tells a recording (voice-call.ts). */
export interface LineRecording {
  /** The caller's audio, as it arrives. */
  callerAudio(frame: Buffer): void;
  /** The agent's audio, as it is sent to the line. */
  agentAudio(audio: Buffer): void;
  /** The line dropped the audio it had queued. */
  cleared(): void;
}

export interface CallRecording extends LineRecording {
  /** Hands on what is left up to the line's end; settles once every chunk was written (or the writes failed). */
  finish(): Promise<void>;
}

export interface RecordingOptions {
  format: AudioFormat;
  chunkSeconds: number;
  /** Stores a chunk; chunks come one at a time, in order. */
  write(chunk: RecordingChunk): Promise<void>;
  /** A write failed: nothing after it is written, so the recording stops there rather than skip a stretch. */
  onError(error: unknown): void;
}

const bytesPerSample = (format: AudioFormat) => (format.encoding === 'mulaw' ? 1 : 2);
/** The byte of silence: μ-law 0xFF is zero, as is pcm16 0. */
const silenceByte = (format: AudioFormat) => (format.encoding === 'mulaw' ? 0xff : 0);

/**
 * One channel's audio not yet handed on, from the first sample after the last chunk, copied into a
 * buffer of its own: a frame off the wire is a small slice of Node's shared pool, and holding
 * thousands of them for a chunk's time would hold the pool's slabs too.
 */
function pendingChannel(sampleBytes: number, silence: number) {
  let buffer = Buffer.alloc(0);
  let bytes = 0;
  const reserve = (needed: number) => {
    if (needed <= buffer.length) return;
    const grown = Buffer.alloc(Math.max(needed, buffer.length * 2, 8192), silence);
    buffer.copy(grown, 0, 0, bytes);
    buffer = grown;
  };
  return {
    get samples() {
      return Math.floor(bytes / sampleBytes);
    },
    append(audio: Buffer) {
      reserve(bytes + audio.length);
      audio.copy(buffer, bytes);
      bytes += audio.length;
    },
    /** Silence up to `samples`, when shorter. */
    padTo(samples: number) {
      const end = samples * sampleBytes;
      if (end <= bytes) return;
      reserve(end);
      buffer.fill(silence, bytes, end);
      bytes = end;
    },
    /** Drops what lies beyond `samples`. */
    truncate(samples: number) {
      bytes = Math.min(bytes, samples * sampleBytes);
    },
    /** The first `samples` samples (silence where the channel is shorter), removed from the channel. */
    take(samples: number): Buffer {
      this.padTo(samples);
      const end = samples * sampleBytes;
      const taken = Buffer.from(buffer.subarray(0, end));
      buffer.copy(buffer, 0, end, bytes);
      bytes -= end;
      return taken;
    },
  };
}

/** Two channels' samples as interleaved frames, left first. */
function interleave(left: Buffer, right: Buffer, sampleBytes: number): Buffer {
  const frames = Buffer.alloc(left.length * 2);
  for (let offset = 0; offset < left.length; offset += sampleBytes) {
    left.copy(frames, offset * 2, offset, offset + sampleBytes);
    right.copy(frames, offset * 2 + sampleBytes, offset, offset + sampleBytes);
  }
  return frames;
}

export function startCallRecording(options: RecordingOptions): CallRecording {
  const sampleBytes = bytesPerSample(options.format);
  const silence = silenceByte(options.format);
  const chunkSamples = Math.round(options.chunkSeconds * options.format.sampleRate);
  const caller = pendingChannel(sampleBytes, silence);
  const agent = pendingChannel(sampleBytes, silence);
  let seq = 0;
  let failed = false;
  let finished = false;
  let writing: Promise<void> = Promise.resolve();

  function handOn(samples: number): void {
    const chunk: RecordingChunk = {
      seq: seq++,
      audio: interleave(caller.take(samples), agent.take(samples), sampleBytes),
      frames: samples,
    };
    writing = writing.then(async () => {
      if (failed) return;
      await options.write(chunk).catch((error: unknown) => {
        failed = true;
        options.onError(error);
      });
    });
  }

  return {
    callerAudio(frame) {
      if (finished) return;
      caller.append(frame);
      while (caller.samples >= chunkSamples) handOn(chunkSamples);
    },
    agentAudio(audio) {
      if (finished) return;
      // Nothing queued on the line: it plays from now.
      agent.padTo(caller.samples);
      agent.append(audio);
    },
    cleared() {
      agent.truncate(caller.samples);
    },
    async finish() {
      if (!finished && caller.samples > 0) handOn(caller.samples);
      finished = true;
      await writing;
    },
  };
}
