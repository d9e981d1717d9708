import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphBuilder } from '../../../../platform/onnx-graph.ts';
import { pcm16ToMulaw } from '../../../../platform/audio.ts';
import { FRAMES, MEL_BANDS, SAMPLE_RATE, WINDOW_SAMPLES, melFilters, whisperFeatures } from './features.ts';
import { fakeSmartTurnModel } from './fake-model.ts';
import { smartTurnDetector, smartTurnModel } from './index.ts';

/** Whisper's log-mel by its definition, in plain loops: the reference the graph must match. */
function referenceFeatures(audio: Float32Array): Float32Array {
  const padded = new Float32Array(WINDOW_SAMPLES);
  padded.set(audio, WINDOW_SAMPLES - audio.length);
  const mean = padded.reduce((sum, x) => sum + x, 0) / padded.length;
  const std = Math.sqrt(padded.reduce((sum, x) => sum + (x - mean) ** 2, 0) / padded.length + 1e-7);
  const x = padded.map((sample) => (sample - mean) / std);
  const reflect = (i: number) => (i < 0 ? -i : i >= x.length ? 2 * (x.length - 1) - i : i);
  const filters = melFilters();
  const log = new Float32Array(MEL_BANDS * FRAMES);
  for (let frame = 0; frame < FRAMES; frame++) {
    const power = new Float64Array(201);
    for (let k = 0; k <= 200; k++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < 400; n++) {
        const v = x[reflect(frame * 160 + n - 200)]! * (0.5 - 0.5 * Math.cos((2 * Math.PI * n) / 400));
        re += v * Math.cos((2 * Math.PI * n * k) / 400);
        im -= v * Math.sin((2 * Math.PI * n * k) / 400);
      }
      power[k] = re * re + im * im;
    }
    for (let band = 0; band < MEL_BANDS; band++) {
      let mel = 0;
      for (let k = 0; k <= 200; k++) mel += power[k]! * filters[k * MEL_BANDS + band]!;
      log[band * FRAMES + frame] = Math.log10(Math.max(mel, 1e-10));
    }
  }
  const max = log.reduce((a, b) => Math.max(a, b), -Infinity);
  return log.map((value) => (Math.max(value, max - 8) + 4) / 4);
}

/** 16 kHz audio: `seconds` of a tone of `hz` (a voice's stand-in), then silence. */
const tone = (hz: number, seconds: number, silenceSeconds = 0) =>
  Float32Array.from({ length: (seconds + silenceSeconds) * SAMPLE_RATE }, (_, i) =>
    i < seconds * SAMPLE_RATE ? 0.3 * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE) : 0,
  );

describe("Smart Turn v3's input features", () => {
  it("are Whisper's log-mel spectrogram of the last 8 s: 80 bands × 800 frames, as the definition computes them", async () => {
    const audio = tone(440, 1.5, 0.5);
    const features = await whisperFeatures(audio);
    expect(features.dims).toEqual([1, MEL_BANDS, FRAMES]);
    const expected = referenceFeatures(audio);
    const got = features.data as Float32Array;
    let worst = 0;
    for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(got[i]! - expected[i]!));
    expect(worst).toBeLessThan(1e-3);
    // The tone is heard where it was (the last 2 s, padded with silence before), in the band of 440 Hz.
    const frameOf = (seconds: number) => Math.round((seconds * SAMPLE_RATE) / 160);
    const at = (band: number, frame: number) => got[band * FRAMES + frame]!;
    const loudest = Array.from({ length: MEL_BANDS }, (_, band) => at(band, frameOf(6.5))).indexOf(
      Math.max(...Array.from({ length: MEL_BANDS }, (_, band) => at(band, frameOf(6.5)))),
    );
    expect(at(loudest, frameOf(6.5))).toBeGreaterThan(at(loudest, frameOf(3)) + 1);
    expect(at(loudest, frameOf(6.5))).toBeGreaterThan(at(loudest, frameOf(7.8)) + 1);
  });
});

describe('the Smart Turn detector', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'smart-turn-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A model of Smart Turn v3's inputs and outputs (fake-model.ts), in a file as the operator's would be. */
  async function modelFile(name: string, threshold: number): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, fakeSmartTurnModel(threshold));
    return path;
  }

  /** The line's audio (8 kHz μ-law, 20 ms frames) of a tone, then silence. */
  const lineAudio = (seconds: number, silenceSeconds: number) => {
    const samples = Int16Array.from({ length: (seconds + silenceSeconds) * 8000 }, (_, i) =>
      i < seconds * 8000 ? Math.round(9000 * Math.sin((2 * Math.PI * 300 * i) / 8000)) : 0,
    );
    const mulaw = pcm16ToMulaw(Buffer.from(samples.buffer));
    return Array.from({ length: mulaw.length / 160 }, (_, i) => mulaw.subarray(i * 160, (i + 1) * 160));
  };
  const settings = (smartTurnModel: string) =>
    ({
      format: { encoding: 'mulaw', sampleRate: 8000 },
      language: 'en-US',
      endOfSpeechMs: 600,
      unfinishedMs: 1500,
      smartTurnModel,
    }) as const;

  it('loads the operator’s model file and ends the turn when it says complete, waits when it says not', async () => {
    // How loud the last half second of each line sounds, by the same features: the model's threshold between them.
    const [speaking, trailing] = await Promise.all([whisperFeatures(tone(300, 2, 0.1)), whisperFeatures(tone(300, 2, 1))]);
    const lastHalfSecond = (features: Awaited<ReturnType<typeof whisperFeatures>>) => {
      const data = features.data as Float32Array;
      let sum = 0;
      for (let band = 0; band < MEL_BANDS; band++)
        for (let frame = FRAMES - 50; frame < FRAMES; frame++) sum += data[band * FRAMES + frame]!;
      return sum / (MEL_BANDS * 50);
    };
    const path = await modelFile('smart-turn-v3-like.onnx', (lastHalfSecond(speaking) + lastHalfSecond(trailing)) / 2);

    const complete = smartTurnDetector(settings(path));
    for (const frame of lineAudio(2, 0.1)) complete.hear!(frame);
    const finished = await complete.decide({ text: 'anything', silenceMs: 96 });
    expect(finished.holdMs).toBe(0);
    expect(finished.reason).toMatch(/^Smart Turn: [01]\.\d\d complete$/);

    const incomplete = smartTurnDetector(settings(path));
    for (const frame of lineAudio(2, 1)) incomplete.hear!(frame);
    // Not complete: waits up to the unfinished wait, whatever the words.
    expect(await incomplete.decide({ text: 'When do you open?', silenceMs: 96 })).toMatchObject({ holdMs: 1500 - 96 });
  });

  it('refuses a file that is not a Smart Turn v3 model, and one that is not there', async () => {
    const g = graphBuilder();
    const output = g.op('Relu', ['audio']);
    const path = join(dir, 'other.onnx');
    await writeFile(
      path,
      g.model('other', [{ name: 'audio', type: 'float', dims: [1, 16000] }], [{ name: output, type: 'float', dims: [1, 16000] }]),
    );
    await expect(smartTurnModel(path)).rejects.toThrow(/is not a Smart Turn v3 model: its inputs are audio, not input_features/);
    await expect(smartTurnModel(join(dir, 'missing.onnx'))).rejects.toThrow();
  });
});
