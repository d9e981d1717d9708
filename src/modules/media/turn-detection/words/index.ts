/**
 * The caller's words decide (the default): a finished question or sentence is answered at once; a
 * phrase that cannot end there ("I'd like to…", "my number is 4 1 5") waits up to
 * VOICE_UNFINISHED_MS of silence for the rest; words that say neither wait VOICE_END_OF_SPEECH_MS.
 * Recognisers punctuate what they hear (Whisper, Deepgram's `punctuate`), even a fragment ("I'd
 * like to."), so a phrase's last word outweighs its full stop.
 */
import { holdUntil, type TurnDetector, type TurnDetectorSettings } from '../types.ts';

export type Completeness = { verdict: 'finished' | 'unfinished' | 'unknown'; reason: string };

/**
 * English words a sentence almost never ends on: articles, possessives, conjunctions, most
 * prepositions, the verb "to be", a speaker's fillers. (Other languages: punctuation and numbers only.)
 */
const CONTINUING_WORDS = new Set(
  (
    'a an the my your our their his her its this these those some any ' +
    'and or but because if than that whether when while although ' +
    'to of for with from at in into on about by like as ' +
    "is are was were am be been i i'm i'd i'll we we're you you're it's there's " +
    'um uh er erm hmm mm'
  ).split(' '),
);
/** How many digits a number spoken whole has: a ZIP code, a North American phone number (with or without its 1). */
const WHOLE_NUMBER_DIGITS = new Set([5, 10, 11]);

/** Whether the words so far can be a finished turn. */
export function completeness(text: string, language: string): Completeness {
  const words = text.trim().split(/\s+/).filter(Boolean);
  const last = words.at(-1);
  if (!last) return { verdict: 'unknown', reason: 'no words' };
  if (/(\.\.\.|…|,|-|—|–)$/.test(last)) return { verdict: 'unfinished', reason: 'trails off' };
  const bare = last.toLowerCase().replace(/[.!?;:"“”]+$/g, '');
  if (language.toLowerCase().startsWith('en') && CONTINUING_WORDS.has(bare.replace(/’/g, "'")))
    return { verdict: 'unfinished', reason: `ends on "${bare}"` };
  const digits = trailingDigits(words);
  // A number being read out (two groups or more, or one of three digits or more) that is not yet whole.
  if (digits && (digits.groups >= 2 || digits.count >= 3) && !WHOLE_NUMBER_DIGITS.has(digits.count) && digits.count < 12)
    return { verdict: 'unfinished', reason: `a number of ${digits.count} digits so far` };
  if (last.endsWith('?')) return { verdict: 'finished', reason: 'a question' };
  if (/[.!]$/.test(last)) return { verdict: 'finished', reason: 'a sentence' };
  return { verdict: 'unknown', reason: 'no punctuation' };
}

/** The digits of the groups of digits the words end with ("is 415 555" → 6 in 2 groups). */
function trailingDigits(words: string[]): { count: number; groups: number } | undefined {
  let count = 0;
  let groups = 0;
  for (let index = words.length - 1; index >= 0; index--) {
    const group = words[index]!.replace(/[.,!?]+$/, '');
    if (!/^[\d-]+$/.test(group) || !/\d/.test(group)) break;
    count += group.replace(/-/g, '').length;
    groups++;
  }
  return groups ? { count, groups } : undefined;
}

export function wordsDetector(settings: Pick<TurnDetectorSettings, 'endOfSpeechMs' | 'unfinishedMs' | 'language'>): TurnDetector {
  return {
    decide(turn) {
      const { verdict, reason } = completeness(turn.text, settings.language);
      if (verdict === 'finished') return { holdMs: 0, reason };
      return { holdMs: holdUntil(verdict === 'unfinished' ? settings.unfinishedMs : settings.endOfSpeechMs, turn), reason };
    },
  };
}
