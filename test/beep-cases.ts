/**
 * Voicemail greetings as a phone line carries them (8 kHz μ-law): a spoken greeting (eSpeak NG),
 * a pause, the beep (a steady tone of some frequency, length and level, faded in and out), then
 * silence, all under the line's noise; and greetings without a beep. The beep detector is measured
 * on them (its unit test and `npm run bench:beeps`).
 */
import { mulawToPcm16, pcm16Samples, pcm16ToMulaw } from '../src/platform/audio.ts';
import { beepDetector } from '../src/modules/media/beep.ts';
import { callerSaying } from './caller-speech.ts';
import { seeded } from './seeded.ts';

export { seeded } from './seeded.ts';

const RATE = 8000;

export const GREETINGS = [
  'Hi, you have reached Sam. Please leave a message after the tone.',
  'The person you are calling is not available. At the tone, please record your message.',
  'Hello, this is the Garcia family. We cannot come to the phone right now.',
  'Please leave your name and number and I will call you back.',
];

export interface BeepCase {
  /** The line's audio. */
  audio: Buffer;
  /** The beep, when there is one: its frequency and where it ends (ms). */
  beep?: { frequencyHz: number; startMs: number; endMs: number };
  description: string;
}

export interface BeepOptions {
  frequencyHz: number;
  lengthMs: number;
  /** The beep's level, dBFS. */
  levelDb: number;
  /** The noise's level below the beep's, dB. */
  snrDb: number;
  /** Silence between the greeting and the beep, ms. */
  pauseMs: number;
}

const dbToAmplitude = (db: number) => 32767 * 10 ** (db / 20);

/** A greeting (line audio) followed by a beep (or none), under white noise, as μ-law. */
export function beepCase(greeting: Buffer, options: BeepOptions | undefined, random: () => number): BeepCase {
  const speech = pcm16Samples(mulawToPcm16(greeting));
  const pause = options?.pauseMs ?? 600;
  const beepSamples = options ? Math.round((options.lengthMs / 1000) * RATE) : 0;
  const total = speech.length + Math.round((pause / 1000) * RATE) + beepSamples + RATE;
  const samples = new Float64Array(total);
  samples.set(Float64Array.from(speech));
  const start = speech.length + Math.round((pause / 1000) * RATE);
  const amplitude = options ? dbToAmplitude(options.levelDb) : dbToAmplitude(-20);
  if (options) {
    const phase = random() * 2 * Math.PI;
    const fade = Math.round(0.005 * RATE);
    for (let i = 0; i < beepSamples; i++) {
      const envelope = Math.min(1, i / fade, (beepSamples - i) / fade);
      samples[start + i]! += amplitude * envelope * Math.sin(phase + (2 * Math.PI * options.frequencyHz * i) / RATE);
    }
  }
  // White noise at the SNR below the beep's RMS (a sinusoid's RMS is its amplitude over √2).
  const noiseRms = amplitude / Math.SQRT2 / 10 ** ((options?.snrDb ?? 25) / 20);
  for (let i = 0; i < total; i++) samples[i]! += noiseRms * Math.sqrt(3) * (2 * random() - 1);
  const pcm = Buffer.alloc(total * 2);
  for (let i = 0; i < total; i++) pcm.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i]!))), i * 2);
  return {
    audio: pcm16ToMulaw(pcm),
    ...(options
      ? { beep: { frequencyHz: options.frequencyHz, startMs: (start / RATE) * 1000, endMs: ((start + beepSamples) / RATE) * 1000 } }
      : {}),
    description: options
      ? `${options.frequencyHz} Hz, ${options.lengthMs} ms, ${options.levelDb} dBFS, SNR ${options.snrDb} dB`
      : 'no beep',
  };
}

/** `count` recorded-style cases with a beep (frequencies 400–2,000 Hz, 150–1,000 ms, -30 to -6 dBFS, SNR 10–35 dB) and `count / 4` without. */
export async function beepCases(count: number, seed = 40): Promise<BeepCase[]> {
  const random = seeded(seed);
  const greetings = await Promise.all(GREETINGS.map((text) => callerSaying(text)));
  const common = [440, 850, 950, 1000, 1004, 1400, 1800];
  const cases: BeepCase[] = [];
  for (let index = 0; index < count; index++) {
    const frequencyHz = index % 2 ? common[index % common.length]! : Math.round(400 + random() * 1600);
    cases.push(
      beepCase(
        greetings[index % greetings.length]!,
        {
          frequencyHz,
          lengthMs: Math.round(150 + random() * 850),
          levelDb: Math.round(-30 + random() * 24),
          snrDb: Math.round(10 + random() * 25),
          pauseMs: Math.round(100 + random() * 1400),
        },
        random,
      ),
    );
  }
  for (let index = 0; index < count / 4; index++) cases.push(beepCase(greetings[index % greetings.length]!, undefined, random));
  return cases;
}

export interface BeepFound {
  /** A beep was reported within 300 ms after the beep's end (and none before the beep). */
  inTime: boolean;
  /** From the beep's end to its report, ms (the audio's own time, in 20 ms frames as the line sends them). */
  latencyMs?: number;
  /** A beep was reported where there was none (in the greeting, or in a case without a beep). */
  falseAlarm: boolean;
}

/** Plays a case's audio to the detector in 20 ms frames, as a line sends it. */
export function detectIn(beepCase: BeepCase): BeepFound {
  const detector = beepDetector(RATE);
  const samples = pcm16Samples(mulawToPcm16(beepCase.audio));
  for (let at = 0; at < samples.length; at += 160) {
    const found = detector.push(samples.subarray(at, at + 160));
    if (!found) continue;
    const reportedMs = ((at + 160) / RATE) * 1000;
    if (!beepCase.beep || reportedMs < beepCase.beep.startMs) return { inTime: false, falseAlarm: true };
    const latencyMs = reportedMs - beepCase.beep.endMs;
    return { inTime: latencyMs >= 0 && latencyMs <= 300, latencyMs, falseAlarm: false };
  }
  return { inTime: false, falseAlarm: false };
}
