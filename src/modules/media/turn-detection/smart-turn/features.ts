/**
 * Smart Turn v3's input: Whisper's log-mel spectrogram of the last 8 s of 16 kHz audio (80 mel
 * bands × 800 frames of 10 ms), as Hugging Face's WhisperFeatureExtractor computes it with
 * `chunk_length=8` and `do_normalize=True`: the waveform scaled to zero mean and unit variance; a
 * 400-sample Hann window (periodic) every 160 samples, centred (reflect-padded 200 samples each
 * side), the last frame dropped; the power spectrum through 80 Slaney-scale, Slaney-normalised mel
 * filters from 0 to 8 kHz; log10 (floored at 1e-10), clamped to 8 below its maximum, then
 * (x + 4) / 4. The arithmetic (the windowed DFT as two matrix products, the mel filters, the logs)
 * is an ONNX graph written here and run on ONNX Runtime's native kernels, off the event loop; only
 * the framing is JavaScript.
 */
import { graphBuilder, openSession, ort } from '../../../../platform/onnx-graph.ts';

export const SAMPLE_RATE = 16_000;
export const WINDOW_SAMPLES = 8 * SAMPLE_RATE;
const N_FFT = 400;
const HOP = 160;
const BINS = N_FFT / 2 + 1;
export const MEL_BANDS = 80;
export const FRAMES = WINDOW_SAMPLES / HOP;

/** Slaney's mel scale (librosa's and Whisper's): linear below 1 kHz, logarithmic above. */
const hzToMel = (hz: number) => (hz < 1000 ? (3 * hz) / 200 : 15 + Math.log(hz / 1000) / (Math.log(6.4) / 27));
const melToHz = (mel: number) => (mel < 15 ? (200 * mel) / 3 : 1000 * Math.exp((mel - 15) * (Math.log(6.4) / 27)));

/** The mel filters as a [201 bins × 80 bands] matrix: triangles between mel-spaced corners, each scaled to unit area (Slaney). */
export function melFilters(): Float32Array {
  const corners = Array.from({ length: MEL_BANDS + 2 }, (_, i) => melToHz((hzToMel(SAMPLE_RATE / 2) * i) / (MEL_BANDS + 1)));
  const filters = new Float32Array(BINS * MEL_BANDS);
  for (let bin = 0; bin < BINS; bin++) {
    const hz = (bin * SAMPLE_RATE) / N_FFT;
    for (let band = 0; band < MEL_BANDS; band++) {
      const [low, centre, high] = [corners[band]!, corners[band + 1]!, corners[band + 2]!];
      const weight = Math.max(0, Math.min((hz - low) / (centre - low), (high - hz) / (high - centre)));
      filters[bin * MEL_BANDS + band] = weight * (2 / (high - low));
    }
  }
  return filters;
}

/** The periodic Hann window folded into the DFT: [400 samples × 201 bins], cosines and sines. */
function windowedDft(): { cos: Float32Array; sin: Float32Array } {
  const cos = new Float32Array(N_FFT * BINS);
  const sin = new Float32Array(N_FFT * BINS);
  for (let n = 0; n < N_FFT; n++) {
    const window = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / N_FFT);
    for (let k = 0; k < BINS; k++) {
      const angle = (2 * Math.PI * n * k) / N_FFT;
      cos[n * BINS + k] = window * Math.cos(angle);
      sin[n * BINS + k] = window * Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** frames [800 × 400] → input_features [1 × 80 × 800]. */
function logMelModel(): Uint8Array {
  const g = graphBuilder();
  const { cos, sin } = windowedDft();
  const real = g.op('MatMul', ['frames', g.tensor([N_FFT, BINS], cos)]);
  const imaginary = g.op('MatMul', ['frames', g.tensor([N_FFT, BINS], sin)]);
  const power = g.op('Add', [g.op('Mul', [real, real]), g.op('Mul', [imaginary, imaginary])]);
  const mel = g.op('MatMul', [power, g.tensor([BINS, MEL_BANDS], melFilters())]);
  const log10 = g.op('Mul', [g.op('Log', [g.op('Max', [mel, g.scalar(1e-10)])]), g.scalar(1 / Math.LN10)]);
  const floor = g.op('Sub', [g.op('ReduceMax', [log10], { keepdims: 0 }), g.scalar(8)]);
  const scaled = g.op('Div', [g.op('Add', [g.op('Max', [log10, floor]), g.scalar(4)]), g.scalar(4)]);
  const features = g.op('Unsqueeze', [g.op('Transpose', [scaled], { perm: [1, 0] }), g.ints(0)]);
  return g.model(
    'whisper-log-mel',
    [{ name: 'frames', type: 'float', dims: [FRAMES, N_FFT] }],
    [{ name: features, type: 'float', dims: [1, MEL_BANDS, FRAMES] }],
  );
}

let session: Promise<ort.InferenceSession> | undefined;

/**
 * The log-mel features of `audio` (16 kHz samples in [-1, 1], at most 8 s: the last 8 s are kept;
 * shorter audio is padded with silence before it, as Smart Turn is trained).
 */
export async function whisperFeatures(audio: Float32Array): Promise<ort.Tensor> {
  const padded = new Float32Array(WINDOW_SAMPLES);
  const kept = audio.subarray(Math.max(0, audio.length - WINDOW_SAMPLES));
  padded.set(kept, WINDOW_SAMPLES - kept.length);
  // Zero mean and unit variance over the whole window (do_normalize).
  let mean = 0;
  for (const sample of padded) mean += sample;
  mean /= padded.length;
  let variance = 0;
  for (const sample of padded) variance += (sample - mean) ** 2;
  const scale = 1 / Math.sqrt(variance / padded.length + 1e-7);
  // Centred frames: the window reflected 200 samples at each end.
  const at = (index: number) => {
    const reflected = index < 0 ? -index : index >= WINDOW_SAMPLES ? 2 * (WINDOW_SAMPLES - 1) - index : index;
    return (padded[reflected]! - mean) * scale;
  };
  const frames = new Float32Array(FRAMES * N_FFT);
  for (let frame = 0; frame < FRAMES; frame++) for (let n = 0; n < N_FFT; n++) frames[frame * N_FFT + n] = at(frame * HOP + n - N_FFT / 2);
  session ??= openSession(logMelModel());
  const made = await session;
  const result = await made.run({ frames: new ort.Tensor('float32', frames, [FRAMES, N_FFT]) });
  return result[made.outputNames[0]!]!;
}
