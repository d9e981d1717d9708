// Runs in a worker thread (see sentence-encoder.ts): the sentence encoder computes on the CPU,
// milliseconds per text, which would hold every request of the service while a source embeds.
import { parentPort } from 'node:worker_threads';
import { unitVector } from '../types.ts';
import { openSentenceEncoder } from './sentence-encoder-model.ts';
import type { EmbedReply, EmbedRequest } from './sentence-encoder.ts';

const model = await openSentenceEncoder();
const port = parentPort!;
let queue = Promise.resolve();

// One request at a time, in the order they came; a request's texts are one model call (the sender sizes it).
port.on('message', (request: EmbedRequest) => {
  queue = queue.then(() => embed(request));
});

async function embed({ id, texts }: EmbedRequest): Promise<void> {
  try {
    const vectors = (await model.embed(texts)).map((values) => unitVector(values));
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
