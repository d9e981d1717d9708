import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { startTypeScriptWorker } from '../../platform/worker.ts';
import { ProviderError } from '../errors.ts';
import type { Embedder } from '../types.ts';

/**
 * Texts per message for documents: a few chunks per model call keep every worker busy with little
 * messaging, and small enough a call that the last worker to finish does not leave the others idle
 * for long. (Measured in bench/knowledge.ts: bigger model batches were no faster per text.)
 */
const DOCUMENT_BATCH = 8;
/** Queries waiting together go to the model as one call, up to this many. */
const QUERY_BATCH = 16;

export interface EmbedRequest {
  id: number;
  texts: string[];
}
export type EmbedReply = { id: number; vectors: Float32Array[] } | { id: number; error: string };

/**
 * The offline default: Universal Sentence Encoder lite, whose weights ship inside the npm
 * package, run on ONNX Runtime (sentence-encoder-model.ts) in worker threads of this process (the
 * service's event loop only passes texts and vectors). Documents are embedded by a pool of one worker per
 * core but one, a few chunks per call; queries have a worker of their own, so a question asked during a
 * call never waits behind a source being indexed, and queries asked at the same moment share one
 * model call. Workers start, and load the model, on first use.
 */
export function localSentenceEncoder(options: { documentWorkers?: number } = {}): Embedder {
  // One core is left to the API: with a worker on every core, requests answered while a source was
  // indexed waited up to 164–283 ms at p99 on 2 cores, against 22–27 ms (docs/knowledge-performance.md).
  const documents = lane(options.documentWorkers ?? Math.max(1, availableParallelism() - 1), DOCUMENT_BATCH);
  const queries = lane(1, QUERY_BATCH);
  return {
    model: 'use-lite-512',
    dimensions: 512,
    async embed(texts, use = 'documents') {
      if (use === 'query') return queries.embed(texts);
      const batches: Promise<Float32Array[]>[] = [];
      for (let i = 0; i < texts.length; i += DOCUMENT_BATCH) batches.push(documents.embed(texts.slice(i, i + DOCUMENT_BATCH)));
      return (await Promise.all(batches)).flat();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Worker threads

interface Waiting {
  texts: string[];
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: Error) => void;
}

interface Lane {
  embed(texts: string[]): Promise<Float32Array[]>;
}

/**
 * `size` workers fed from one queue: an idle worker takes the waiting requests, as many as fit in
 * `batch` texts (always at least one), in the order they came.
 */
function lane(size: number, batch: number): Lane {
  const queue: Waiting[] = [];
  const workers: (EncoderWorker | undefined)[] = Array.from({ length: size }, () => undefined);
  const busy = new Set<number>();

  const dispatch = () => {
    for (let slot = 0; slot < size && queue.length > 0; slot++) {
      if (busy.has(slot)) continue;
      const taken = [queue.shift()!];
      let count = taken[0]!.texts.length;
      while (queue.length > 0 && count + queue[0]!.texts.length <= batch) {
        count += queue[0]!.texts.length;
        taken.push(queue.shift()!);
      }
      busy.add(slot);
      const worker = (workers[slot] ??= startEncoderWorker(() => (workers[slot] = undefined)));
      worker
        .embed(taken.flatMap((waiting) => waiting.texts))
        .then(
          (vectors) => {
            let offset = 0;
            for (const waiting of taken) {
              waiting.resolve(vectors.slice(offset, offset + waiting.texts.length));
              offset += waiting.texts.length;
            }
          },
          (error: Error) => taken.forEach((waiting) => waiting.reject(error)),
        )
        .finally(() => {
          busy.delete(slot);
          dispatch();
        });
    }
  };

  return {
    embed(texts) {
      if (texts.length === 0) return Promise.resolve([]);
      return new Promise((resolve, reject) => {
        queue.push({ texts, resolve, reject });
        dispatch();
      });
    },
  };
}

interface EncoderWorker {
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** One worker thread with the model; `onStop` runs when it stops (the next request starts another). */
function startEncoderWorker(onStop: () => void): EncoderWorker {
  const worker: Worker = startTypeScriptWorker(new URL('./embedding-worker.ts', import.meta.url));
  const pending = new Map<number, { resolve: (vectors: Float32Array[]) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  // The worker keeps the process alive only while it has work.
  worker.unref();

  worker.on('message', (reply: EmbedReply) => {
    const entry = pending.get(reply.id);
    if (!entry) return;
    pending.delete(reply.id);
    if (pending.size === 0) worker.unref();
    if ('error' in reply) entry.reject(new ProviderError(`The offline embedding model failed: ${reply.error}`, { retryable: true }));
    else entry.resolve(reply.vectors);
  });
  let stopped = false;
  const failAll = (error: unknown) => {
    if (!stopped) {
      stopped = true;
      onStop();
    }
    const failure = new ProviderError(`The offline embedding model stopped: ${error instanceof Error ? error.message : String(error)}`, {
      retryable: true,
      cause: error,
    });
    for (const entry of pending.values()) entry.reject(failure);
    pending.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`its worker exited with code ${code}`)));

  return {
    embed(texts) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ id, texts } satisfies EmbedRequest);
      });
    },
  };
}
