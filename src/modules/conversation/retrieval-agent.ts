/**
 * The built-in retrieval agent's judgement, for when no language model is configured: which words
 * end a call or ask never to be called again, and how a knowledge passage is said aloud. Fixed
 * lines and passages the tenant wrote; nothing is generated.
 */
import type { Passage } from '../knowledge/service.ts';

export const RETRIEVAL_LINES = {
  greeting: (agentName: string) => `Hello, this is ${agentName}, an automated assistant. How can I help you?`,
  offerHelp: (agentName: string) => `This is ${agentName}, an automated assistant. What would you like to know?`,
  didNotCatch: "Sorry, I didn't catch that. Could you say it another way?",
  goodbye: 'Thank you for your time. Goodbye.',
  optedOut: "Understood. We won't call you again. Goodbye.",
};

const OPT_OUT =
  /\b(stop (calling|ringing|phoning|contacting)|(don'?t|do not|never) (call|ring|phone|contact)|remove (me|my (number|name))|take me off|put me on (your|the) do[- ]not[- ]call|unsubscribe|opt(ing)?[- ]?out|no more calls|lose my number)\b/i;
const GOODBYE =
  /\b(good ?bye|bye( bye)?|see you|have a (good|nice|great) (day|one|evening)|that'?s all|talk (to you )?later|i have to go|gotta go)\b/i;
const GREETING =
  /^(hello|hi|hey|good (morning|afternoon|evening)|yes|yeah|yep|speaking|ok(ay)?|sure|go ahead|this is (me|he|she)|who('?s| is) (this|calling)|what('?s| is) this( about)?)\b/i;

/** "Stop calling me", "take me off your list", "don't call again"… */
export const isOptOut = (text: string): boolean => OPT_OUT.test(text);

export const isGoodbye = (text: string): boolean => GOODBYE.test(text);

/** A greeting or an acknowledgement with no question in it worth searching for. */
export function isGreeting(text: string): boolean {
  const words = text.trim().split(/\s+/).length;
  return words <= 8 && GREETING.test(text.trim());
}

/** A passage is an answer when it shares words with the question or is close to it in meaning. */
const SIMILAR_ENOUGH = 0.5;
/** About two spoken sentences: a phone answer, not a page read aloud. */
const MAX_SPOKEN_CHARACTERS = 280;

/** Words of three letters or more, plural and verb endings cut, so "Saturdays" meets "Saturday". */
const wordsOf = (text: string) =>
  new Set((text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? []).map((word) => word.replace(/(ing|ed|es|s)$/, '')));

/**
 * A passage as speech: its paragraphs, each a list of sentences, with headings, list marks,
 * emphasis and links' addresses left out (a voice would read them out).
 */
function spokenParagraphs(text: string): string[][] {
  return text
    .split(/\n\s*\n/)
    .map((paragraph) =>
      paragraph
        .split('\n')
        // A heading, or a short line with no sentence in it, is a title: not something one says.
        .filter((line) => !/^\s{0,3}#{1,6}\s/.test(line) && !(/^[^.!?:]*$/.test(line) && line.trim().split(/\s+/).length <= 6))
        .join(' ')
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/(^|\s)([-*+]|\d+[.)])\s+/g, '$1')
        .replace(/[*_`>|]+/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter(Boolean)
    .map((paragraph) =>
      paragraph
        .match(/[^.!?]+[.!?]*/g)!
        .map((sentence) => sentence.trim())
        .filter(Boolean),
    );
}

/**
 * The best passage for a question, shortened to what one says on the phone: the sentence sharing
 * most words with the question, with the sentences after it in its paragraph while they fit.
 * Undefined when no passage answers.
 */
export function answerFromPassages(question: string, passages: Passage[]): { text: string; passage: Passage } | undefined {
  const passage = passages.find((p) => p.sharesWords || p.similarity >= SIMILAR_ENOUGH);
  if (!passage) return undefined;
  const asked = wordsOf(question);
  const overlap = (sentence: string) => [...wordsOf(sentence)].filter((word) => asked.has(word)).length;
  let best: { paragraph: string[]; index: number; score: number } | undefined;
  for (const paragraph of spokenParagraphs(passage.text)) {
    paragraph.forEach((sentence, index) => {
      const score = overlap(sentence);
      if (!best || score > best.score) best = { paragraph, index, score };
    });
  }
  if (!best) return undefined;
  let text = best.paragraph[best.index]!;
  for (const next of best.paragraph.slice(best.index + 1)) {
    if (text.length + next.length + 1 > MAX_SPOKEN_CHARACTERS) break;
    text += ` ${next}`;
  }
  if (text.length > MAX_SPOKEN_CHARACTERS) text = `${text.slice(0, MAX_SPOKEN_CHARACTERS).replace(/\s+\S*$/, '')}…`;
  return { text, passage };
}
