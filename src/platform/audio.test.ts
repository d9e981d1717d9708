import { describe, expect, it } from 'vitest';
import {
  bytesFor,
  createAudioConverter,
  createResampler,
  durationMs,
  mulawToPcm16,
  PHONE_AUDIO,
  pcm16Samples,
  pcm16ToMulaw,
  resamplersOpen,
  wavFile,
  type AudioFormat,
} from './audio.ts';

const pcm = (sampleRate: number): AudioFormat => ({ encoding: 'pcm16', sampleRate });

/** One second of a sine wave as pcm16 bytes. */
function sine(frequency: number, sampleRate: number, amplitude = 12000, seconds = 1): Buffer {
  const samples = new Int16Array(Math.round(sampleRate * seconds));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / sampleRate));
  return Buffer.from(samples.buffer);
}

const rms = (samples: Int16Array) => Math.sqrt(samples.reduce((sum, sample) => sum + sample * sample, 0) / samples.length);

/** Frequency from the upward zero crossings over the samples' duration. */
function frequencyOf(samples: Int16Array, sampleRate: number): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) crossings++;
  return (crossings * sampleRate) / samples.length;
}

/** The middle of a signal, away from the resampler's start-up and the tail it holds back. */
const steady = (samples: Int16Array) => samples.subarray(Math.floor(samples.length * 0.1), Math.floor(samples.length * 0.9));

function chunksOf(audio: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < audio.length; offset += size) chunks.push(audio.subarray(offset, offset + size));
  return chunks;
}

describe('audio formats', () => {
  it('measures durations and sizes of phone audio and pcm16', () => {
    expect(durationMs(160, PHONE_AUDIO)).toBe(20);
    expect(bytesFor(20, PHONE_AUDIO)).toBe(160);
    expect(bytesFor(20, pcm(16000))).toBe(640);
    expect(durationMs(640, pcm(16000))).toBe(20);
  });

  it('round-trips pcm16 through μ-law within the codec’s step size', () => {
    const original = pcm16Samples(sine(440, 8000));
    const back = pcm16Samples(mulawToPcm16(pcm16ToMulaw(Buffer.from(original.buffer))));
    expect(back).toHaveLength(original.length);
    for (let i = 0; i < original.length; i++)
      expect(Math.abs(back[i]! - original[i]!)).toBeLessThanOrEqual(Math.abs(original[i]!) / 16 + 8);
  });

  it('converts μ-law to pcm16 and back at the same rate, byte for byte', async () => {
    const mulawAudio = pcm16ToMulaw(sine(300, 8000));
    const toPcm = await createAudioConverter(PHONE_AUDIO, pcm(8000));
    const toMulaw = await createAudioConverter(pcm(8000), PHONE_AUDIO);
    const decoded = toPcm.convert(mulawAudio);
    expect(decoded).toHaveLength(mulawAudio.length * 2);
    expect(toMulaw.convert(decoded).equals(mulawAudio)).toBe(true);
  });

  it.each([
    [24000, 8000, 440],
    [22050, 8000, 1000],
    [8000, 16000, 440],
    [16000, 8000, 3000],
  ])('resamples %i Hz to %i Hz keeping a %i Hz tone’s frequency and energy', async (fromRate, toRate, tone) => {
    const convert = await createAudioConverter(pcm(fromRate), pcm(toRate));
    const output = pcm16Samples(convert.convert(sine(tone, fromRate)));
    convert.close();
    expect(Math.abs(output.length - toRate)).toBeLessThan(toRate * 0.02);
    const middle = steady(output);
    expect(Math.abs(frequencyOf(middle, toRate) - tone)).toBeLessThan(tone * 0.01);
    expect(rms(middle)).toBeGreaterThan((12000 / Math.SQRT2) * 0.97);
    expect(rms(middle)).toBeLessThan((12000 / Math.SQRT2) * 1.03);
  });

  it('filters out what the lower rate cannot carry instead of folding it back (anti-aliasing)', async () => {
    // 5 kHz is above 8 kHz's Nyquist frequency: without a filter it would come back as a 3 kHz tone.
    const convert = await createAudioConverter(pcm(24000), pcm(8000));
    const output = steady(pcm16Samples(convert.convert(sine(5000, 24000))));
    expect(rms(output)).toBeLessThan((12000 / Math.SQRT2) * 0.01);
  });

  it('gives the same audio for a stream in odd-sized chunks as for the whole, with no click at the boundaries', async () => {
    const input = sine(440, 24000);
    const whole = pcm16Samples((await createAudioConverter(pcm(24000), PHONE_AUDIO)).convert(input));
    const streamed = await createAudioConverter(pcm(24000), PHONE_AUDIO);
    // 333 bytes: every other chunk ends in the middle of a sample.
    const chunked = pcm16Samples(mulawToPcm16(Buffer.concat(chunksOf(input, 333).map((chunk) => streamed.convert(chunk)))));
    const wholeDecoded = pcm16Samples(mulawToPcm16(Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength)));
    expect(Math.abs(chunked.length - wholeDecoded.length)).toBeLessThanOrEqual(2);
    const length = Math.min(chunked.length, wholeDecoded.length);
    let largestDifference = 0;
    for (let i = 0; i < length; i++) largestDifference = Math.max(largestDifference, Math.abs(chunked[i]! - wholeDecoded[i]!));
    // μ-law's step near the peak is 1024: one step of rounding, no more.
    expect(largestDifference).toBeLessThanOrEqual(1024);
  });

  it('carries an odd trailing byte of pcm16 over to the next chunk', async () => {
    const samples = Int16Array.from([1000, -2000, 3000, -4000]);
    const bytes = Buffer.from(samples.buffer);
    const convert = await createAudioConverter(pcm(8000), PHONE_AUDIO);
    const first = convert.convert(bytes.subarray(0, 3));
    const second = convert.convert(bytes.subarray(3));
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(3);
    expect(Buffer.concat([first, second]).equals(pcm16ToMulaw(bytes))).toBe(true);
  });

  it('wraps pcm16 in a WAV file with the rate in its header', () => {
    const audio = sine(440, 16000, 8000, 0.25);
    const wav = wavFile(audio, 16000);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('ascii', 8, 16)).toBe('WAVEfmt ');
    expect(wav.readUInt16LE(20)).toBe(1);
    expect(wav.readUInt16LE(22)).toBe(1);
    expect(wav.readUInt32LE(24)).toBe(16000);
    expect(wav.readUInt32LE(28)).toBe(32000);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.toString('ascii', 36, 40)).toBe('data');
    expect(wav.readUInt32LE(40)).toBe(audio.length);
    expect(wav.subarray(44).equals(audio)).toBe(true);
  });

  it('restarts a resampler as a new stream (the same input, the same output) and counts it open until closed', async () => {
    const before = resamplersOpen();
    const resampler = await createResampler(22050, 8000);
    expect(resamplersOpen()).toBe(before + 1);
    const input = pcm16Samples(sine(440, 22050));
    const first = resampler.run(input);
    const carried = resampler.run(input);
    resampler.restart();
    expect(resampler.run(input)).toEqual(first);
    // Without the restart, the second second continues the first: not the same samples.
    expect(carried).not.toEqual(first);
    resampler.close();
    resampler.close();
    expect(resamplersOpen()).toBe(before);
  });
});
