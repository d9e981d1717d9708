import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkText } from './chunking.ts';
import { NEVER_FINAL } from '../../platform/sentences.ts';

/** Sentences of equal length (31 characters), numbered so a chunk's sentences can be read back. */
const rule = (number: number) => `Rule ${String(number).padStart(2, '0')} covers one refund case.`;
const rules = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => rule(from + index)).join(' ');
const ruleNumbers = (chunk: string) => [...chunk.matchAll(/Rule (\d+)/g)].map((match) => Number(match[1]));

describe('chunkText', () => {
  it('returns no chunks for empty, blank or heading-only text', () => {
    expect(chunkText('')).toEqual([]);
    expect(chunkText(' \n\n\t ')).toEqual([]);
    expect(chunkText('# Refunds\n\n## Timing\n\n')).toEqual([]);
  });

  it('keeps a short text as one chunk with its line and paragraph breaks', () => {
    expect(chunkText('First line\nSecond line.\n\nNew paragraph. Same paragraph.')).toEqual([
      'First line\nSecond line.\n\nNew paragraph. Same paragraph.',
    ]);
  });

  it('prefixes each chunk with its heading path; a heading without body only prefixes its subsections', () => {
    const text =
      'Before any heading.\n\n# Refunds\n\n## Timing\n\nWithin 14 days.\n\n## Amounts\n\nIn full.\n\n# Deliveries\n\n### Abroad\n\nTwo weeks.\n\n## Fees\n\nNone.';
    expect(chunkText(text)).toEqual([
      'Before any heading.',
      'Refunds › Timing\nWithin 14 days.',
      'Refunds › Amounts\nIn full.',
      'Deliveries › Abroad\nTwo weeks.',
      'Deliveries › Fees\nNone.',
    ]);
  });

  it('packs whole sentences up to maxChars, counting the heading prefix', () => {
    const chunks = chunkText(`# Refunds\n\n${rules(1, 20)}`, { maxChars: 200, overlapChars: 0 });
    // "Refunds\n" is 8 characters; six 31-character sentences and their spaces make 191.
    expect(chunks[0]).toBe(`Refunds\n${rules(1, 6)}`);
    expect(chunks.map(ruleNumbers)).toEqual([
      [1, 2, 3, 4, 5, 6],
      [7, 8, 9, 10, 11, 12],
      [13, 14, 15, 16, 17, 18],
      [19, 20],
    ]);
  });

  it('starts the next chunk of a section with the trailing sentences that fit in overlapChars', () => {
    // Two sentences (63 characters) fit in 70; three (95) do not.
    const chunks = chunkText(`# Refunds\n\n${rules(1, 20)}`, { maxChars: 200, overlapChars: 70 });
    expect(chunks.length).toBeGreaterThan(3);
    for (const [index, chunk] of chunks.entries()) {
      expect(chunk.startsWith('Refunds\n')).toBe(true);
      if (index === 0) continue;
      const previous = ruleNumbers(chunks[index - 1]!);
      expect(ruleNumbers(chunk).slice(0, 2)).toEqual(previous.slice(-2));
    }
    expect(chunks[1]).toBe(`Refunds\n${rules(5, 10)}`);
  });

  it('carries no sentence across a heading', () => {
    const chunks = chunkText(`# Refunds\n\n${rules(1, 10)}\n\n# Deliveries\n\n${rules(11, 20)}`, { maxChars: 200, overlapChars: 70 });
    const firstDeliveries = chunks.findIndex((chunk) => chunk.startsWith('Deliveries\n'));
    expect(ruleNumbers(chunks[firstDeliveries - 1]!)).toContain(10);
    expect(ruleNumbers(chunks[firstDeliveries]!)[0]).toBe(11);
    for (const chunk of chunks) {
      const numbers = ruleNumbers(chunk);
      expect(numbers.every((number) => number <= 10) || numbers.every((number) => number > 10)).toBe(true);
    }
  });

  it('uses 700 and 200 characters by default', () => {
    const chunks = chunkText(rules(1, 60));
    // 21 sentences make 671 characters, 22 would make 703; six trailing ones (191) fit the overlap.
    expect(chunks[0]).toBe(rules(1, 21));
    expect(ruleNumbers(chunks[1]!).slice(0, 6)).toEqual([16, 17, 18, 19, 20, 21]);
  });

  it.each([100, 160, 300, 700])('keeps every chunk within maxChars %i and every sentence whole in some chunk', (maxChars) => {
    // The longest sentence (82 characters) and the longest heading path (16) fit in 100, so none is split.
    const sentences = Array.from({ length: 40 }, (_, index) => `Sentence ${index} ${'says a little more '.repeat(index % 4)}about visits.`);
    const text = [
      '# Clinic',
      sentences.slice(0, 15).join(' '),
      '## Visits',
      sentences.slice(15, 30).join('\n'),
      '# Billing',
      sentences.slice(30).join(' '),
    ].join('\n\n');
    const chunks = chunkText(text, { maxChars, overlapChars: Math.floor(maxChars / 4) });
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(maxChars);
    for (const sentence of sentences) expect(chunks.some((chunk) => chunk.includes(sentence))).toBe(true);
  });

  it('splits a sentence longer than maxChars between words', () => {
    const sentence = `${Array.from({ length: 120 }, (_, index) => `word${index}`).join(' ')}.`;
    const chunks = chunkText(sentence, { maxChars: 100, overlapChars: 30 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(100);
    expect(chunks.join(' ')).toBe(sentence);
  });

  it('cuts a word longer than a chunk and keeps the heading on every piece', () => {
    expect(chunkText(`# H\n\n${'x'.repeat(250)}`, { maxChars: 100, overlapChars: 0 })).toEqual([
      `H\n${'x'.repeat(98)}`,
      `H\n${'x'.repeat(98)}`,
      `H\n${'x'.repeat(54)}`,
    ]);
  });

  it('shortens a heading path too long for the chunk', () => {
    const [chunk] = chunkText(`# ${'Very long heading '.repeat(10)}\n\nShort body.`, { maxChars: 60, overlapChars: 0 });
    expect(chunk!.length).toBeLessThanOrEqual(60);
    expect(chunk).toMatch(/^Very long heading.*…\nShort body\.$/);
  });

  it('rejects options that cannot make chunks', () => {
    expect(() => chunkText('Text.', { maxChars: 0 })).toThrow(RangeError);
    expect(() => chunkText('Text.', { maxChars: 100, overlapChars: 100 })).toThrow(RangeError);
    expect(() => chunkText('Text.', { overlapChars: -1 })).toThrow(RangeError);
  });
});

type Block =
  { kind: 'heading'; level: number; words: string[] } | { kind: 'paragraph'; sentences: string[][]; oneSentencePerLine: boolean };

// No word is an abbreviation that never ends a sentence ("ca.", "cf.", "fig."): the splitter rightly
// runs such a sentence on into the next, and each generated sentence must stay one.
const word = fc.string({ unit: fc.constantFrom(...'abcdefghij'), minLength: 1, maxLength: 10 }).filter((text) => !NEVER_FINAL.has(text));
const block: fc.Arbitrary<Block> = fc.oneof(
  fc.record({
    kind: fc.constant('heading' as const),
    level: fc.integer({ min: 1, max: 4 }),
    words: fc.array(word, { minLength: 1, maxLength: 4 }),
  }),
  fc.record({
    kind: fc.constant('paragraph' as const),
    sentences: fc.array(fc.array(word, { minLength: 1, maxLength: 14 }), { minLength: 1, maxLength: 6 }),
    oneSentencePerLine: fc.boolean(),
  }),
);
const options = fc
  .integer({ min: 30, max: 900 })
  .chain((maxChars) => fc.record({ maxChars: fc.constant(maxChars), overlapChars: fc.integer({ min: 0, max: maxChars - 1 }) }));

interface GeneratedSentence {
  text: string;
  section: number;
}

/** A document from the blocks, its sentences numbered S0, S1, … (headings use no "S") and tagged with their section. */
function documentOf(blocks: Block[]): { text: string; sentences: GeneratedSentence[] } {
  const sentences: GeneratedSentence[] = [];
  let section = 0;
  const parts = blocks.map((part) => {
    if (part.kind === 'heading') {
      section++;
      return `${'#'.repeat(part.level)} ${part.words.join(' ')}`;
    }
    const texts = part.sentences.map((words) => {
      const sentence = { text: `S${sentences.length} ${words.join(' ')}.`, section };
      sentences.push(sentence);
      return sentence.text;
    });
    return texts.join(part.oneSentencePerLine ? '\n' : ' ');
  });
  return { text: parts.join('\n\n'), sentences };
}

describe('chunkText properties', () => {
  it('bounds chunks, keeps every sentence, overlaps only within a section and by at most overlapChars', () => {
    fc.assert(
      fc.property(fc.array(block, { maxLength: 25 }), options, (blocks, { maxChars, overlapChars }) => {
        const { text, sentences } = documentOf(blocks);
        const chunks = chunkText(text, { maxChars, overlapChars });
        const idsOf = (chunk: string) => [...chunk.matchAll(/\bS(\d+)\b/g)].map((match) => Number(match[1]));

        for (const chunk of chunks) {
          expect(chunk.length).toBeLessThanOrEqual(maxChars);
          expect(chunk.trim()).toBe(chunk);
          expect(chunk).not.toBe('');
          expect(new Set(idsOf(chunk).map((id) => sentences[id]!.section)).size).toBeLessThanOrEqual(1);
        }
        // A sentence this short is never split, whatever the heading prefix takes.
        const unsplit = maxChars - Math.floor(maxChars / 2);
        for (const sentence of sentences) {
          if (sentence.text.length <= unsplit) expect(chunks.some((chunk) => chunk.includes(sentence.text))).toBe(true);
        }
        for (let index = 1; index < chunks.length; index++) {
          const previous = idsOf(chunks[index - 1]!);
          const current = idsOf(chunks[index]!);
          const shared = current.filter((id) => previous.includes(id));
          expect(shared).toEqual(previous.slice(previous.length - shared.length));
          expect(shared).toEqual(current.slice(0, shared.length));
          const sharedLength = shared.reduce((sum, id) => sum + sentences[id]!.text.length, Math.max(shared.length - 1, 0));
          expect(sharedLength).toBeLessThanOrEqual(overlapChars);
        }
      }),
    );
  });

  it('keeps chunks within maxChars for arbitrary text', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 3000 }),
          fc.string({ unit: fc.constantFrom('ab', 'X', ' ', '\t', '\n', '# ', '. ', 'é', '😀'), maxLength: 1500 }),
        ),
        options,
        (text, { maxChars, overlapChars }) => {
          for (const chunk of chunkText(text, { maxChars, overlapChars })) {
            expect(chunk.length).toBeLessThanOrEqual(maxChars);
            expect(chunk.trim()).not.toBe('');
          }
        },
      ),
    );
  });
});
