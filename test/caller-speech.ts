import { mulawToPcm16, pcm16Samples } from '../src/platform/audio.ts';
import { detectVoiceActivity } from '../src/modules/media/voice-activity.ts';
import { spokenOnLine } from '../src/modules/media/test-line.ts';

/**
 * What a caller says, as a phone line carries it (8 kHz μ-law): real speech from the offline eSpeak
 * NG voice, so a trained voice-activity detector has something to hear.
 */
export const callerSaying = (text: string): Promise<Buffer> => spokenOnLine(text, 'gmw/en-US', 'en-US');

/** μ-law silence (digital zero) of this many milliseconds of a phone line. */
export const lineSilence = (ms: number) => Buffer.alloc(ms * 8, 0xff);

/** Where the voice is in line audio: the first and last samples louder than -40 dBFS, in milliseconds. */
export function voicedSpan(audio: Buffer): { startMs: number; endMs: number } {
  const samples = pcm16Samples(mulawToPcm16(audio));
  const loud = (sample: number) => Math.abs(sample) > 328;
  const first = samples.findIndex(loud);
  const last = samples.findLastIndex(loud);
  return { startMs: first / 8, endMs: (last + 1) / 8 };
}

/** Resolves once the voice-activity detector's worker has started and answered a window. */
export function detectorStarted(): Promise<void> {
  return new Promise((resolve, reject) => {
    const detector = detectVoiceActivity(8000, {
      window() {
        detector.close();
        resolve();
      },
      failed: reject,
    });
    detector.push(new Int16Array(256));
  });
}
