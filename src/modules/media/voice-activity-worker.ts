// Runs in a worker thread (see voice-activity.ts): Silero VAD on ONNX Runtime computes
// synchronously, a fraction of a millisecond per 32 ms window, which summed over every call would
// stall the event loop that carries their media.
import { readFile } from 'node:fs/promises';
import { parentPort } from 'node:worker_threads';
import { openSession, ort } from '../../platform/onnx-graph.ts';
import { SILERO_MODEL, type VadBatch, type VadRate, type VadResults } from './voice-activity.ts';

/** Samples per window, and of the previous window's end prepended to it (silero-vad's `OnnxWrapper`). */
const WINDOW: Record<VadRate, number> = { 8000: 256, 16000: 512 };
const CONTEXT: Record<VadRate, number> = { 8000: 32, 16000: 64 };
/** The model's recurrent state per stream: two layers of 128. */
const STATE = 128;

// One thread of computing: the worker is already off the event loop, and the machine's other
// cores serve the rest of the service.
const session = await openSession(await readFile(new URL(import.meta.resolve(SILERO_MODEL))));
const port = parentPort!;

interface StreamState {
  state: Float32Array;
  context: Float32Array;
}
const streams = new Map<number, StreamState>();

// A model that cannot run leaves the worker nothing to recover: the rejection ends it, and the
// main thread fails every stream with why.
port.on(
  'message',
  (batch: VadBatch) =>
    void detect(batch).then((probabilities) =>
      port.postMessage({ probabilities } satisfies VadResults, [probabilities.buffer as ArrayBuffer]),
    ),
);

/**
 * Every stream's windows, in order: step k runs the k-th window of every stream that has one, in
 * one batch per rate (the model's `sr` is one value per run). A batch costs far less per window
 * than one run per window: the runtime's overhead per run is most of a small model's cost.
 */
async function detect(batch: VadBatch): Promise<Float32Array> {
  // Where each stream's windows start, in samples and in the answer.
  let sample = 0;
  let answer = 0;
  const streamsOf = batch.streams.map(({ stream, rate, windows }) => {
    const placed = { stream, rate, windows, sample, answer };
    sample += windows * WINDOW[rate];
    answer += windows;
    return placed;
  });
  const probabilities = new Float32Array(answer);
  for (let step = 0; ; step++) {
    const due = streamsOf.filter(({ windows }) => step < windows);
    if (due.length === 0) break;
    for (const rate of [8000, 16000] as const) {
      const rows = due.filter((placed) => placed.rate === rate);
      if (rows.length === 0) continue;
      const values = await run(
        rate,
        rows.map(({ stream, sample }) => ({
          stream,
          samples: batch.samples.subarray(sample + step * WINDOW[rate], sample + (step + 1) * WINDOW[rate]),
        })),
      );
      rows.forEach((placed, row) => (probabilities[placed.answer + step] = values[row]!));
    }
  }
  for (const stream of batch.closed) streams.delete(stream);
  return probabilities;
}

/** One run of the model over one window of each row's stream; its recurrent state and context carried per stream. */
async function run(rate: VadRate, rows: { stream: number; samples: Int16Array }[]): Promise<Float32Array> {
  const window = WINDOW[rate];
  const width = CONTEXT[rate] + window;
  const count = rows.length;
  const input = new Float32Array(count * width);
  const state = new Float32Array(2 * count * STATE);
  const kept = rows.map(({ stream, samples }, row) => {
    let kept = streams.get(stream);
    if (!kept) streams.set(stream, (kept = { state: new Float32Array(2 * STATE), context: new Float32Array(CONTEXT[rate]) }));
    const start = row * width;
    input.set(kept.context, start);
    for (let i = 0; i < window; i++) input[start + CONTEXT[rate] + i] = samples[i]! / 32768;
    kept.context = input.slice(start + width - CONTEXT[rate], start + width);
    // State is [layer][row][unit].
    state.set(kept.state.subarray(0, STATE), row * STATE);
    state.set(kept.state.subarray(STATE), (count + row) * STATE);
    return kept;
  });
  const output = await session.run({
    input: new ort.Tensor('float32', input, [count, width]),
    state: new ort.Tensor('float32', state, [2, count, STATE]),
    sr: new ort.Tensor('int64', BigInt64Array.of(BigInt(rate)), []),
  });
  const next = output.stateN!.data as Float32Array;
  kept.forEach((stream, row) => {
    stream.state.set(next.subarray(row * STATE, (row + 1) * STATE), 0);
    stream.state.set(next.subarray((count + row) * STATE, (count + row + 1) * STATE), STATE);
  });
  return output.output!.data as Float32Array;
}
