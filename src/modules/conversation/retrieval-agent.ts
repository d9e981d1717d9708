/**
 * The built-in retrieval agent's judgement, for when no language model is configured: which words
 * end a call or ask never to be called again, and how a knowledge passage is said aloud. Fixed
 * lines and passages the tenant wrote; nothing is generated.
 */
import { sentencesOf } from '../../platform/sentences.ts';
import type { Passage } from '../knowledge/service.ts';

export const RETRIEVAL_LINES = {
  greeting: (agentName: string) => `Hello, this is ${agentName}, an automated assistant. How can I help you?`,
  offerHelp: (agentName: string) => `This is ${agentName}, an automated assistant. What would you like to know?`,
  didNotCatch: "Sorry, I didn't catch that. Could you say it another way?",
  /** Said when no passage truly answers: plainly, rather than a passage that does not. */
  dontKnow: "Sorry, I don't know that. I can only answer from the information I've been given.",
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

/**
 * What kind of thing a question asks for, and how a sentence that gives it reads: a place, a time,
 * a price, a person, a length of time, a phone number. A sentence of the kind asked is likelier an
 * answer than one that only shares words ("Where is your office?" against "… is at 12 Harbour Road").
 */
const ANSWER_KINDS: { asks: RegExp; gives: RegExp }[] = [
  {
    asks: /\b(where|address|located|location|directions?|find you)\b/i,
    gives: /\b(road|street|lane|avenue|boulevard|square|floor|building|located|behind|above|opposite|next to|corner of)\b/i,
  },
  {
    asks: /\b(when|what time|hours|open|close|closing|opening)\b/i,
    gives:
      /\b\d{1,2}(:\d{2})?\s?(am|pm)\b|\b(mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekdays?|weekends?|every day|daily|24 hours)\b/i,
  },
  {
    asks: /\b(how much|cost|costs|price|prices|charge|charges|fee|fees|rate|rates|free|expensive|cheap|cheaper)\b/i,
    gives: /[$€£¥]\s?\d|\b\d+(\.\d+)?\s?(%|dollars|euros|pounds)|\bfree\b/i,
  },
  { asks: /\b(who|whom|name)\b/i, gives: /\b(dr|mr|mrs|ms|prof)\.\s|\b(manager|dentist|doctor|trainer|director|owner)\b/i },
  { asks: /\bhow long\b/i, gives: /\b\d+\s?(minutes?|hours?|days?|weeks?|months?|years?)\b|\ban hour\b/i },
  { asks: /\b(phone|number|call|ring)\b/i, gives: /\d{3,}[\s-]\d{3,}/ },
];

/** How close in meaning each sentence is to the question (knowledge's `similarityToQuestion`). */
export type SentenceSimilarity = (question: string, sentences: string[]) => Promise<number[]>;

/**
 * When a sentence answers: its score (closeness in meaning to the question, plus `kindBonus` when
 * it gives the kind of thing asked) reaches `answersAt`, and beats every sentence of another
 * paragraph (another fact) by `margin`: two facts nearly as close mean the question is not
 * understood well enough to choose. Measured on the tuning half of test/retrieval-questions.ts
 * (docs/knowledge-performance.md § The retrieval agent's answers); words in common, and words
 * close in meaning, added nothing there beyond what the sentence's meaning already holds.
 */
export const ANSWER_RULE = { kindBonus: 0.3, answersAt: 0.35, margin: 0.1 };

export function answerScore(question: string, sentence: string, similarity: number): number {
  const givesKindAsked = ANSWER_KINDS.some((kind) => kind.asks.test(question) && kind.gives.test(sentence));
  return similarity + (givesKindAsked ? ANSWER_RULE.kindBonus : 0);
}

/** About two spoken sentences: a phone answer, not a page read aloud. */
const MAX_SPOKEN_CHARACTERS = 280;
/** A sentence that goes on about what the one before it said ("She specialises in …"). */
const CONTINUES = /^(she|he|it|they|this|that|these|those|its|their|his|her)\b/i;

/**
 * A passage as speech: its paragraphs, each a list of sentences, with headings, list marks,
 * emphasis and links' addresses left out (a voice would read them out). A line that ends a
 * sentence ends its paragraph too: facts written one a line are as many paragraphs.
 */
function spokenParagraphs(text: string): string[][] {
  return text
    .split(/\n\s*\n|(?<=[.!?])[ \t]*\n/)
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
    .map((paragraph) => sentencesOf(paragraph));
}

interface Candidate {
  passage: Passage;
  paragraph: string[];
  index: number;
}

/**
 * The answer to a question from the best passages, or undefined when none truly answers it: every
 * sentence of the passages is scored against the question (`answerScore`), and the best one is
 * said when it passes `ANSWER_RULE`, with the sentences after it in its paragraph that go on about
 * the same thing, while they fit in about two spoken sentences.
 */
export async function answerFromPassages(
  question: string,
  passages: Passage[],
  similarityOf: SentenceSimilarity,
): Promise<{ text: string; passage: Passage } | undefined> {
  // Overlapping chunks repeat sentences: each is scored once, where it first appears.
  const candidates = new Map<string, Candidate>();
  for (const passage of passages)
    for (const paragraph of spokenParagraphs(passage.text))
      paragraph.forEach((sentence, index) => {
        if (!candidates.has(sentence)) candidates.set(sentence, { passage, paragraph, index });
      });
  const sentences = [...candidates.keys()];
  const similarities = await similarityOf(question, sentences);
  const ranked = sentences
    .map((sentence, i) => ({ ...candidates.get(sentence)!, score: answerScore(question, sentence, similarities[i]!) }))
    .sort((a, b) => b.score - a.score);
  const best = ranked[0];
  if (!best || best.score < ANSWER_RULE.answersAt) return undefined;
  const rival = ranked.find((candidate) => candidate.paragraph !== best.paragraph);
  if (rival && best.score - rival.score < ANSWER_RULE.margin) return undefined;
  let text = best.paragraph[best.index]!;
  for (const next of best.paragraph.slice(best.index + 1)) {
    if (!CONTINUES.test(next) || text.length + next.length + 1 > MAX_SPOKEN_CHARACTERS) break;
    text += ` ${next}`;
  }
  if (text.length > MAX_SPOKEN_CHARACTERS) text = `${text.slice(0, MAX_SPOKEN_CHARACTERS).replace(/\s+\S*$/, '')}…`;
  return { text, passage: best.passage };
}
