import { startTypeScriptWorker } from '../../platform/worker.ts';
import { ProviderError } from '../errors.ts';
import type { Embedder } from '../types.ts';

/**
 * Texts per message to the worker: a query waits behind at most one batch of a source being
 * embedded, and a batch is big enough that the messages cost the event loop next to nothing.
 */
const BATCH = 32;

export interface EmbedRequest {
  id: number;
  texts: string[];
}
export type EmbedReply = { id: number; vectors: Float32Array[] } | { id: number; error: string };

/**
 * The offline default: Universal Sentence Encoder lite, whose weights ship inside the npm
 * package, run on TensorFlow.js in a worker thread of this process (the service's event loop only
 * passes texts and vectors). The worker is started, and the model loaded, on first use; a source's
 * chunks go to it in batches, so a query is answered between two of them.
 */
export function localSentenceEncoder(): Embedder {
  return {
    model: 'use-lite-512',
    dimensions: 512,
    async embed(texts) {
      const vectors: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += BATCH) vectors.push(...(await encoder().embed(texts.slice(i, i + BATCH))));
      return vectors;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The worker thread

interface Encoder {
  embed(texts: string[]): Promise<Float32Array[]>;
}

let running: Encoder | undefined;
const encoder = () => (running ??= startEncoder());

function startEncoder(): Encoder {
  const worker = startTypeScriptWorker(new URL('./embedding-worker.ts', import.meta.url));
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
  const failAll = (error: unknown) => {
    // A stopped worker takes no more work; the next request starts another.
    if (running === started) running = undefined;
    const failure = new ProviderError(`The offline embedding model stopped: ${error instanceof Error ? error.message : String(error)}`, {
      retryable: true,
      cause: error,
    });
    for (const entry of pending.values()) entry.reject(failure);
    pending.clear();
  };
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`its worker exited with code ${code}`)));

  const started: Encoder = {
    embed(texts) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ id, texts } satisfies EmbedRequest);
      });
    },
  };
  return started;
}
