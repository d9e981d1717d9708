/**
 * Smart Turn v3 (pipecat-ai/smart-turn, BSD-2-Clause): a small model (Whisper Tiny's encoder and
 * a classifier, about 8 MB quantised) that hears from the caller's voice, not their words, whether
 * they finished: intonation, pace, a trailing "um". The operator downloads its ONNX file and points
 * SMART_TURN_MODEL_PATH at it; callforge runs it in process on ONNX Runtime, one session per
 * process, when a pause asks. Its input is `input_features` (float32, 1 × 80 × 800: features.ts),
 * its first output the probability the turn is complete. Over one half, the turn ends at the pause;
 * under it, it waits up to VOICE_UNFINISHED_MS of silence, as Pipecat's analyser does.
 */
import { mulawToPcm16, pcm16Samples } from '../../../../platform/audio.ts';
import { ort } from '../../../../platform/onnx-graph.ts';
import { holdUntil, type TurnDetector, type TurnDetectorSettings } from '../types.ts';
import { SAMPLE_RATE, WINDOW_SAMPLES, whisperFeatures } from './features.ts';

/** Over this probability the turn is complete (the model card's threshold). */
const COMPLETE = 0.5;
const INPUT = 'input_features';

const sessions = new Map<string, Promise<ort.InferenceSession>>();

/** The model at `path`, opened once per process; refused when it does not take Smart Turn v3's input. */
export function smartTurnModel(path: string): Promise<ort.InferenceSession> {
  let session = sessions.get(path);
  if (!session) {
    session = ort.InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1 }).then((opened) => {
      if (!opened.inputNames.includes(INPUT))
        throw new Error(`${path} is not a Smart Turn v3 model: its inputs are ${opened.inputNames.join(', ')}, not ${INPUT}.`);
      return opened;
    });
    // A file that failed to open is tried again by the next call (the operator may fix it meanwhile).
    session.catch(() => sessions.delete(path));
    sessions.set(path, session);
  }
  return session;
}

/** The probability that the turn in `audio` (16 kHz, [-1, 1]) is complete. */
export async function completeProbability(model: ort.InferenceSession, audio: Float32Array): Promise<number> {
  const features = await whisperFeatures(audio);
  const result = await model.run({ [INPUT]: features });
  const [probability] = result[model.outputNames[0]!]!.data as Float32Array;
  return probability!;
}

/**
 * The line's last 8 s of audio at 16 kHz. A phone line's 8 kHz is doubled by linear
 * interpolation: the line carries nothing above 4 kHz for a finer resampler to keep.
 */
function lineHistory(format: TurnDetectorSettings['format']) {
  const lineRate = format.sampleRate;
  /** A ring of the last 8 s: `next` is where the next sample goes. */
  const ring = new Int16Array((WINDOW_SAMPLES * lineRate) / SAMPLE_RATE);
  let next = 0;
  let filled = 0;
  return {
    hear(audio: Buffer) {
      const samples = pcm16Samples(format.encoding === 'mulaw' ? mulawToPcm16(audio) : audio);
      for (const sample of samples.subarray(Math.max(0, samples.length - ring.length))) {
        ring[next] = sample;
        next = (next + 1) % ring.length;
      }
      filled = Math.min(ring.length, filled + samples.length);
    },
    at16k(): Float32Array {
      const sample = (index: number) => ring[(next - filled + index + ring.length) % ring.length]! / 32768;
      const ratio = SAMPLE_RATE / lineRate;
      const out = new Float32Array(Math.floor(filled * ratio));
      for (let index = 0; index < out.length; index++) {
        const position = index / ratio;
        const before = Math.floor(position);
        const share = position - before;
        out[index] = sample(before) * (1 - share) + sample(Math.min(filled - 1, before + 1)) * share;
      }
      return out;
    },
  };
}

export function smartTurnDetector(settings: TurnDetectorSettings & { smartTurnModel: string }): TurnDetector {
  const history = lineHistory(settings.format);
  const model = smartTurnModel(settings.smartTurnModel);
  return {
    hear: history.hear,
    async decide(turn) {
      const probability = await completeProbability(await model, history.at16k());
      const reason = `Smart Turn: ${probability.toFixed(2)} complete`;
      return { holdMs: probability > COMPLETE ? 0 : holdUntil(settings.unfinishedMs, turn), reason };
    },
  };
}
