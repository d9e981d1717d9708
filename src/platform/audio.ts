/**
 * Audio as the media pipeline moves it: mono frames in the formats phone lines, browsers and speech
 * providers use. G.711 μ-law comes from `alawmulaw`; pcm16 is 16-bit signed little-endian.
 */
import { mulaw } from 'alawmulaw';
import type { AudioFormat } from '../providers/types.ts';

export type { AudioFormat };

/** What a phone line carries (Twilio Media Streams, Telnyx). */
export const PHONE_AUDIO: AudioFormat = { encoding: 'mulaw', sampleRate: 8000 };

const bytesPerSample = (format: AudioFormat) => (format.encoding === 'mulaw' ? 1 : 2);

/** Milliseconds of audio in `bytes` bytes of `format`. */
export const durationMs = (bytes: number, format: AudioFormat) => (bytes / bytesPerSample(format) / format.sampleRate) * 1000;

/** Bytes of `format` that hold `ms` milliseconds. */
export const bytesFor = (ms: number, format: AudioFormat) => Math.round((ms / 1000) * format.sampleRate) * bytesPerSample(format);

export function mulawToPcm16(audio: Uint8Array): Buffer {
  const samples = mulaw.decode(audio);
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

export function pcm16ToMulaw(audio: Buffer): Buffer {
  // A copy when the buffer is not aligned for 16-bit reads (a slice of a larger one may not be).
  const aligned = audio.byteOffset % 2 === 0 ? audio : Buffer.from(audio);
  const samples = new Int16Array(aligned.buffer, aligned.byteOffset, Math.floor(aligned.byteLength / 2));
  return Buffer.from(mulaw.encode(samples));
}

const sameFormat = (a: AudioFormat, b: AudioFormat) => a.encoding === b.encoding && a.sampleRate === b.sampleRate;

/**
 * A converter from one format to another for a stream of chunks (stateful, so a chunk boundary
 * never clicks once resampling is involved). Same rate only for now: encoding changes.
 */
export function createAudioConverter(from: AudioFormat, to: AudioFormat): (chunk: Buffer) => Buffer {
  if (sameFormat(from, to)) return (chunk) => chunk;
  if (from.sampleRate !== to.sampleRate) throw new Error(`Resampling ${from.sampleRate} Hz to ${to.sampleRate} Hz is not supported yet.`);
  return from.encoding === 'mulaw' ? (chunk) => mulawToPcm16(chunk) : (chunk) => pcm16ToMulaw(chunk);
}
