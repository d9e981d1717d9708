/**
 * A voicemail's beep in the caller's audio: a steady tone. Each 20 ms frame's spectrum is scanned
 * between 400 and 2,000 Hz (Goertzel's algorithm at every 20 Hz, on a Hann-windowed frame); a frame
 * is tonal when one narrow peak holds most of its energy, loud enough not to be the line's hiss. A
 * run of tonal frames at the same frequency held at least 150 ms is a beep, reported once it ends
 * (the first frame without it): that is when a voicemail starts recording.
 *
 * Speech is not steady: its pitch and formants move within 150 ms and its energy spreads over
 * several harmonics, so it makes no such run; a hum held as still as a tone would.
 */

/** The lowest and highest beep looked for, and the scan's step (Hz). */
const LOWEST_HZ = 400;
const HIGHEST_HZ = 2000;
const STEP_HZ = 20;
/** One frame: 20 ms. */
const FRAME_MS = 20;
/** Held this long, a tone is a beep. */
export const MIN_BEEP_MS = 150;
/** The peak's share of the frame's energy (its main lobe, ±1 step) for the frame to be tonal. */
const TONAL_SHARE = 0.5;
/** Quieter frames (below -45 dBFS, RMS of 16-bit samples) are the line's hiss, not a tone. */
const MIN_RMS = 184;
/** A tone whose frequency moves more than this between frames is not steady. */
const DRIFT_HZ = 30;
/** A beep may drop out this long (a frame lost, a click) and go on. */
const GAP_FRAMES = 1;

export interface Beep {
  /** The tone's frequency (Hz), to the scan's step. */
  frequencyHz: number;
  /** Where it began and ended in the audio heard, in ms from its start. */
  startMs: number;
  endMs: number;
}

export interface BeepDetector {
  /** The caller's audio as 16-bit samples at the detector's rate; returns a beep that just ended. */
  push(samples: Int16Array): Beep | undefined;
}

/** The frequency of the frame's strongest narrow peak, if it holds most of the frame's energy. */
function tonalPeak(frame: Float64Array, window: Float64Array, rate: number): number | undefined {
  let energy = 0;
  for (let i = 0; i < frame.length; i++) energy += frame[i]! * frame[i]!;
  if (Math.sqrt(energy / frame.length) < MIN_RMS) return undefined;
  let windowed = 0;
  const samples = new Float64Array(frame.length);
  for (let i = 0; i < frame.length; i++) {
    samples[i] = frame[i]! * window[i]!;
    windowed += samples[i]! * samples[i]!;
  }
  // Goertzel's power at each frequency of the scan.
  const powers: number[] = [];
  for (let hz = LOWEST_HZ - STEP_HZ; hz <= HIGHEST_HZ + STEP_HZ; hz += STEP_HZ) {
    const coefficient = 2 * Math.cos((2 * Math.PI * hz) / rate);
    let previous = 0;
    let beforePrevious = 0;
    for (const sample of samples) {
      const current = sample + coefficient * previous - beforePrevious;
      beforePrevious = previous;
      previous = current;
    }
    powers.push(previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious);
  }
  let peak = 1;
  for (let i = 2; i < powers.length - 1; i++) if (powers[i]! > powers[peak]!) peak = i;
  // A sinusoid's power at its frequency, for a Hann-windowed frame: (N·A/4)²; its windowed energy: 3·N·A²/16.
  // So the share of a pure tone is 1 (its main lobe's), less for speech or noise.
  const share = powers[peak]! / ((windowed * frame.length) / 3);
  return share >= TONAL_SHARE ? LOWEST_HZ + (peak - 1) * STEP_HZ : undefined;
}

/** A beep detector over audio at `rate` (8,000 or 16,000 samples a second). */
export function beepDetector(rate: number): BeepDetector {
  const frameSamples = (rate * FRAME_MS) / 1000;
  const window = new Float64Array(frameSamples);
  for (let i = 0; i < frameSamples; i++) window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (frameSamples - 1));
  const frame = new Float64Array(frameSamples);
  let filled = 0;
  let frames = 0;
  /** The tone being followed: its frequency, first frame, tonal frames, frames since it was last heard. */
  let tone: { hz: number; first: number; tonal: number; missed: number } | undefined;

  function endTone(): Beep | undefined {
    const ended = tone;
    tone = undefined;
    if (!ended || ended.tonal * FRAME_MS < MIN_BEEP_MS) return undefined;
    const last = frames - 1 - ended.missed;
    return { frequencyHz: ended.hz, startMs: ended.first * FRAME_MS, endMs: (last + 1) * FRAME_MS };
  }

  function onFrame(): Beep | undefined {
    const hz = tonalPeak(frame, window, rate);
    frames += 1;
    if (hz !== undefined && tone && Math.abs(hz - tone.hz) <= DRIFT_HZ) {
      tone.tonal += 1;
      tone.missed = 0;
      return undefined;
    }
    if (tone && hz === undefined && tone.missed < GAP_FRAMES) {
      tone.missed += 1;
      return undefined;
    }
    const ended = endTone();
    if (hz !== undefined) tone = { hz, first: frames - 1, tonal: 1, missed: 0 };
    return ended;
  }

  return {
    push(samples) {
      let found: Beep | undefined;
      for (const sample of samples) {
        frame[filled++] = sample;
        if (filled < frameSamples) continue;
        filled = 0;
        found = onFrame() ?? found;
      }
      return found;
    },
  };
}
