import { describe, expect, it } from 'vitest';
import { wordSenses } from './word-senses.ts';

describe("WordNet's word senses", () => {
  it('matches a word in another form, or a word of the same meaning, and not a word merely related', async () => {
    const senses = await wordSenses();
    for (const [a, b] of [
      ['Mazdas', 'mazda'],
      ['bills', 'bill'],
      ['moving', 'move'],
      ['kids', 'children'],
      ['guarantee', 'warranty'],
      ['secondhand', 'used'],
      ['coaching', 'training'],
      ['price', 'cost'],
    ])
      expect(senses.sameMeaning(a!, b!), `${a} ~ ${b}`).toBe(true);
    for (const [a, b] of [
      ['parking', 'car'],
      ['bitcoin', 'card'],
      ['pizza', 'teeth'],
      ['weather', 'water'],
    ])
      expect(senses.sameMeaning(a!, b!), `${a} ≁ ${b}`).toBe(false);
    // The first and the last lemmas of the sorted index files are found too.
    expect(senses.sameMeaning("'s-Gravenhage", 'den-haag')).toBe(true);
    expect(senses.sameMeaning('zyrian', 'komi')).toBe(true);
    expect(senses.sameMeaning('zymurgy', 'zymology')).toBe(true);
  });
});
