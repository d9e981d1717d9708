import { describe, expect, it } from 'vitest';
import { reciprocalRankFusion } from './service.ts';
import { nearestRows } from './vector-search.ts';

describe('reciprocal rank fusion', () => {
  it('adds 1 / (k + rank) from every ranking an item is in', () => {
    const fused = reciprocalRankFusion(
      [
        ['a', 'b', 'c'],
        ['c', 'a'],
      ],
      { k: 60 },
    );
    expect(fused.map((hit) => hit.id)).toEqual(['a', 'c', 'b']);
    expect(fused[0]!.score).toBeCloseTo(1 / 61 + 1 / 62, 12);
    expect(fused[1]!.score).toBeCloseTo(1 / 63 + 1 / 61, 12);
    expect(fused[2]!.score).toBeCloseTo(1 / 62, 12);
  });

  it('ranks an item both rankings agree on above one that tops a single ranking', () => {
    const fused = reciprocalRankFusion([
      ['solo', 'shared'],
      ['other', 'shared'],
    ]);
    expect(fused[0]!.id).toBe('shared');
  });

  it('counts each ranking with its weight', () => {
    const rankings = [['text'], ['vector']];
    expect(reciprocalRankFusion(rankings, { k: 5, weights: [2, 1] }).map((hit) => hit.id)).toEqual(['text', 'vector']);
    const weighted = reciprocalRankFusion(rankings, { k: 5, weights: [1, 2] });
    expect(weighted.map((hit) => hit.id)).toEqual(['vector', 'text']);
    expect(weighted[0]!.score).toBeCloseTo(2 / 6, 12);
  });

  it('works with one empty ranking (a query no word of which is indexed)', () => {
    expect(reciprocalRankFusion([[], ['x', 'y']]).map((hit) => hit.id)).toEqual(['x', 'y']);
  });
});

describe('the exact nearest rows', () => {
  it('answers the rows of the highest dot products, highest first, ties by position, at most as many as there are', async () => {
    const rows = async (scores: number[], limit: number) =>
      (await nearestRows(Float32Array.from(scores), 1, Float32Array.of(1), limit)).map(({ row }) => row);
    expect(await rows([0.1, 0.9, 0.5, 0.9, -1], 3)).toEqual([1, 3, 2]);
    expect(await rows([0.3], 5)).toEqual([0]);
    expect(await rows([], 5)).toEqual([]);
  });

  it('scores every row as the plain sum does, whatever the dimensions', async () => {
    for (const dimensions of [1, 3, 4, 7, 512]) {
      const count = 5;
      const vectors = Float32Array.from({ length: count * dimensions }, (_, i) => Math.sin(i + 1));
      const query = Float32Array.from({ length: dimensions }, (_, i) => Math.cos(i));
      const plain = Array.from({ length: count }, (_, row) => {
        let dot = 0;
        for (let i = 0; i < dimensions; i++) dot += vectors[row * dimensions + i]! * query[i]!;
        return { row, dot };
      }).sort((a, b) => b.dot - a.dot);
      const nearest = await nearestRows(vectors, dimensions, query, count);
      expect(nearest.map(({ row }) => row)).toEqual(plain.map(({ row }) => row));
      nearest.forEach(({ similarity }, i) => expect(similarity).toBeCloseTo(plain[i]!.dot, 4));
    }
  });
});
