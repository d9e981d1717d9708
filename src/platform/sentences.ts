/**
 * The project's one way to cut text into sentences: the language's own rules from `Intl.Segmenter`,
 * with the breaks it makes after a title or a Latin abbreviation taken back. ICU's sentence rules
 * (as Node ships them) end a sentence at "Dr. " or "e.g. " when a capital or a digit follows, and
 * V8 does not take ICU's suppression list (`-u-ss-standard`), so the abbreviations that never end
 * a sentence are listed here. Words that may end one ("etc.", "Inc.", "St." for Street) are not.
 */
const segmenters = new Map<string, Intl.Segmenter>();

function segmenterFor(language: string): Intl.Segmenter {
  let segmenter = segmenters.get(language);
  if (!segmenter) {
    segmenter = new Intl.Segmenter(language, { granularity: 'sentence' });
    segmenters.set(language, segmenter);
  }
  return segmenter;
}

/** Abbreviations always followed by more of their sentence: titles before a name, and Latin ones. */
export const NEVER_FINAL: ReadonlySet<string> = new Set([
  'dr',
  'mr',
  'mrs',
  'ms',
  'mx',
  'prof',
  'rev',
  'hon',
  'sgt',
  'capt',
  'gen',
  'col',
  'lt',
  'fr',
  'e.g',
  'i.e',
  'cf',
  'vs',
  'viz',
  'approx',
  'ca',
  'tel',
  'fig',
]);

/** A segment that ends at a never-final abbreviation ("… Dr. "), so it runs on into the next. */
function endsAtAbbreviation(segment: string): boolean {
  const last = /(?:^|[\s(["'])([\p{L}.]+)\.\s*$/u.exec(segment);
  return last !== null && NEVER_FINAL.has(last[1]!.toLowerCase());
}

/** The segmenter's pieces with the breaks after abbreviations joined back; spacing kept as it was. */
function segmentsOf(text: string, language: string): string[] {
  const joined: string[] = [];
  let carried = '';
  for (const { segment } of segmenterFor(language).segment(text)) {
    carried += segment;
    if (endsAtAbbreviation(carried)) continue;
    joined.push(carried);
    carried = '';
  }
  if (carried) joined.push(carried);
  return joined;
}

/** The sentences of a text, trimmed, blank ones left out. */
export function sentencesOf(text: string, language = 'en'): string[] {
  return segmentsOf(text, language)
    .map((sentence) => sentence.trim())
    .filter(Boolean);
}

/** The sentences of a text with the spacing or line break that followed each, for who must keep the layout. */
export function sentenceSegments(text: string, language = 'en'): string[] {
  return segmentsOf(text, language);
}

export interface SentenceCutter {
  /** Adds text; returns the sentences it completed. */
  push(delta: string): string[];
  /** The text left over at the end of the reply, as a last sentence. */
  flush(): string[];
}

/**
 * Streamed text cut into sentences as each completes, so the first can be spoken while the model
 * is still writing the rest.
 */
export function sentenceCutter(language: string): SentenceCutter {
  let pending = '';
  return {
    push(delta) {
      pending += delta;
      const segments = segmentsOf(pending, language);
      // The last segment may still grow: a sentence is complete once another has begun after it
      // (one cut at an abbreviation has not: it is carried as the last).
      if (segments.length < 2) return [];
      pending = segments.pop()!;
      return segments.map((sentence) => sentence.trim()).filter(Boolean);
    },
    flush() {
      const rest = pending.trim();
      pending = '';
      return rest ? [rest] : [];
    },
  };
}
