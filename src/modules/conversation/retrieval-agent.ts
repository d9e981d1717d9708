/**
 * The built-in retrieval agent's judgement, for when no language model is configured: which words
 * end a call or ask never to be called again, and how a knowledge passage is said aloud. Fixed
 * lines and passages the tenant wrote; nothing is generated.
 */
import { sentencesOf } from '../../platform/sentences.ts';
import { wordSenses, type WordSenses } from '../../platform/word-senses.ts';
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
  const trimmed = text.trim();
  if (trimmed.split(/\s+/).length > 8 || !GREETING.test(trimmed)) return false;
  // "Yes, that is me. Where can I park?" goes on to ask: a question, unless it asks who calls or why.
  return trimmed
    .split(/(?<=[.!?])\s+/)
    .slice(1)
    .every((sentence) => !sentence.endsWith('?') || GREETING.test(sentence));
}

/** A question word that opens the question or a clause of it ("…, who do I call?"), not one inside a clause ("… when the power is cut"). */
const asked = (words: string) => new RegExp(`(^|[,;:.?!]\\s*|\\b(and|so|but|then|me|know)\\s+)(${words})\\b`, 'i');
/** A number, in figures or in words, as a length of time or an interval is given. */
const COUNT = '(\\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|a|an)';

/**
 * What kind of thing a question asks for, and how a sentence that gives it reads: a place, a time,
 * a price, a person, a phone number, a length of time, how often, a due date, ways to pay. A
 * sentence of the kind asked is likelier an answer than one that only shares words ("Where is your
 * office?" against "… is at 12 Harbour Road"). A question word counts where it opens the question
 * or a clause of it: "Who gets priority when the power is cut?" asks for a person, not a time.
 */
const ANSWER_KINDS: { asks: RegExp[]; gives: RegExp }[] = [
  {
    asks: [asked('where'), /\b(address|located|location|directions?|find you)\b/i],
    gives: /\b(road|street|lane|avenue|boulevard|square|floor|building|located|behind|above|opposite|next to|corner of)\b/i,
  },
  {
    asks: [asked('when|what time'), /\b(hours|open|close|closing|opening)\b/i],
    gives:
      /\b\d{1,2}(:\d{2})?\s?(am|pm)\b|\b(mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekdays?|weekends?|every day|daily|24 hours)\b/i,
  },
  {
    asks: [asked('how much'), /\b(cost|costs|price|prices|charge|charges|fee|fees|rate|rates|free|expensive|cheap|cheaper)\b/i],
    gives: /[$€£¥]\s?\d|\b\d+(\.\d+)?\s?(%|dollars|euros|pounds)|\bfree\b/i,
  },
  { asks: [asked('who|whom'), /\bname\b/i], gives: /\b(dr|mr|mrs|ms|prof)\.\s|\b(manager|dentist|doctor|trainer|director|owner)\b/i },
  { asks: [/\b(phone|number|call|ring)\b/i], gives: /\d{3,}[\s-]\d{3,}/ },
  {
    asks: [asked('how (long|soon|far in advance)'), /\b(how much notice|notice period)\b/i],
    gives: new RegExp(`\\b${COUNT}[\\s-]((working|business) )?(minutes?|hours?|days?|weeks?|months?|years?)(['’]s)?\\b`, 'i'),
  },
  {
    asks: [asked('how (often|frequently)')],
    gives: /\b(every|each|daily|weekly|monthly|quarterly|yearly|annually|once a|twice a)\b/i,
  },
  {
    asks: [asked('(when|what date)\\b.*\\b(due|deadline|expire|expires)')],
    gives: new RegExp(`\\bdue\\b|\\b${COUNT}[\\s-](working )?(days?|weeks?|months?)\\s(after|before|of|from)\\b`, 'i'),
  },
  {
    asks: [asked('how (can|do|could|should) (i|we) pay'), /\b(ways|methods?|options?) (to|of) pay/i],
    gives: /\b(online|direct debit|debit card|credit card|card|cash|cheque|check|bank transfer|post office|by phone|app)\b/i,
  },
];

/** Words that carry no topic of their own: a question's other words are what it is about. */
const FUNCTION_WORDS = new Set(
  (
    'a an the and or but if then so of to in on at by for with from up out over under about into as is are was were be been ' +
    'being am do does did doing have has had having i me my mine we us our ours you your yours he him his she her it its they ' +
    'them their this that these those there here what which who whom whose when where why how can could will would shall ' +
    'should may might must not no any some much many more most very too also just only than such own same other another ' +
    "each every all both few get got there's what's it's i'm don't can't isn't let please tell know want need like thanks " +
    'exactly really'
  ).split(' '),
);

/** The words of a text that say what it is about, lower-cased, each once. */
export function topicWords(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\d][\p{L}\d'’-]*/gu) ?? [];
  return [...new Set(words.filter((word) => !FUNCTION_WORDS.has(word) && !FUNCTION_WORDS.has(word.replace(/['’].*$/, ''))))];
}

/** How close in meaning each sentence is to the question (knowledge's `similarityToQuestion`). */
export type SentenceSimilarity = (question: string, sentences: string[]) => Promise<number[]>;

/**
 * When a sentence answers: its score reaches `answersAt` and beats every sentence of another
 * paragraph (another fact) by `margin`: two facts nearly as close mean the question is not
 * understood well enough to choose. The score is the sentence's closeness in meaning to the
 * question, plus `kindBonus` when it gives the kind of thing asked, plus `wordsWeight` times the
 * share of the question's words it holds (`wordShare`). Chosen on the tuning half of
 * test/retrieval-questions.ts by leave-one-base-out runs within it
 * (docs/knowledge-performance.md § The retrieval agent's answers): the margin is what three of the
 * four runs chose; `answersAt` only keeps a base of one fact, where no other fact is a rival, from
 * answering everything, a little under the lowest score of a right answer on the tuning half.
 */
export const ANSWER_RULE = { kindBonus: 0.3, wordsWeight: 0.5, answersAt: 0.45, margin: 0.25 };

export function givesKindAsked(question: string, sentence: string): boolean {
  return ANSWER_KINDS.some((kind) => kind.asks.some((asks) => asks.test(question)) && kind.gives.test(sentence));
}

export function answerScore(question: string, sentence: string, similarity: number, wordShare = 0): number {
  return similarity + (givesKindAsked(question, sentence) ? ANSWER_RULE.kindBonus : 0) + ANSWER_RULE.wordsWeight * wordShare;
}

/**
 * The share of the question's words each sentence holds, in some form or a word of the same
 * meaning ("kids" in "Children are welcome…"), each word weighted by how few of the sentences hold
 * it: a word every fact has ("we", the business's name) tells little, one only the answer has
 * ("Cigna") much; a word no sentence holds ("bitcoin") weighs most, and lowers every sentence's share.
 */
export function wordShares(question: string, sentences: string[], senses: WordSenses): number[] {
  const asked = topicWords(question);
  const held = sentences.map((sentence) => {
    const words = topicWords(sentence);
    return asked.map((word) => words.some((other) => senses.sameMeaning(word, other)));
  });
  const weights = asked.map((_, i) => Math.log((sentences.length + 1) / (held.filter((holds) => holds[i]).length + 0.5)));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  return held.map((holds) => (total > 0 ? holds.reduce((sum, has, i) => sum + (has ? weights[i]! : 0), 0) / total : 0));
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

/** A sentence of the passages, where it stands (its paragraph), and its `answerScore` for a question. */
export interface RankedSentence {
  passage: Passage;
  /** The sentences of its paragraph (one fact): a rival is a sentence of another paragraph. */
  paragraph: string[];
  index: number;
  sentence: string;
  /** Its closeness in meaning to the question, as `similarityOf` gave it. */
  similarity: number;
  score: number;
}

/**
 * Every sentence of the passages scored against the question (`answerScore`), best first. A
 * sentence repeated by overlapping chunks is scored once, where it first appears.
 */
export async function rankSentences(question: string, passages: Passage[], similarityOf: SentenceSimilarity): Promise<RankedSentence[]> {
  const candidates = new Map<string, Pick<RankedSentence, 'passage' | 'paragraph' | 'index'>>();
  for (const passage of passages)
    for (const paragraph of spokenParagraphs(passage.text))
      paragraph.forEach((sentence, index) => {
        if (!candidates.has(sentence)) candidates.set(sentence, { passage, paragraph, index });
      });
  const sentences = [...candidates.keys()];
  const [similarities, senses] = await Promise.all([similarityOf(question, sentences), wordSenses()]);
  const shares = wordShares(question, sentences, senses);
  return sentences
    .map((sentence, i) => ({
      ...candidates.get(sentence)!,
      sentence,
      similarity: similarities[i]!,
      score: answerScore(question, sentence, similarities[i]!, shares[i]),
    }))
    .sort((a, b) => b.score - a.score);
}

/**
 * The best of ranked sentences when it answers by `rule`: its score reaches `answersAt` and beats
 * the best sentence of every other paragraph by `margin`; undefined otherwise.
 */
export function chosenAnswer(
  ranked: RankedSentence[],
  rule: { answersAt: number; margin: number } = ANSWER_RULE,
): RankedSentence | undefined {
  const best = ranked[0];
  if (!best || best.score < rule.answersAt) return undefined;
  const rival = ranked.find((candidate) => candidate.paragraph !== best.paragraph);
  return rival && best.score - rival.score < rule.margin ? undefined : best;
}

/**
 * The answer to a question from the best passages, or undefined when none truly answers it: every
 * sentence of the passages is scored against the question (`rankSentences`), and the best one is
 * said when it passes `ANSWER_RULE` (`chosenAnswer`), with the sentences after it in its paragraph
 * that go on about the same thing, while they fit in about two spoken sentences.
 */
export async function answerFromPassages(
  question: string,
  passages: Passage[],
  similarityOf: SentenceSimilarity,
): Promise<{ text: string; passage: Passage } | undefined> {
  const best = chosenAnswer(await rankSentences(question, passages, similarityOf));
  if (!best) return undefined;
  let text = best.sentence;
  for (const next of best.paragraph.slice(best.index + 1)) {
    if (!CONTINUES.test(next) || text.length + next.length + 1 > MAX_SPOKEN_CHARACTERS) break;
    text += ` ${next}`;
  }
  if (text.length > MAX_SPOKEN_CHARACTERS) text = `${text.slice(0, MAX_SPOKEN_CHARACTERS).replace(/\s+\S*$/, '')}…`;
  return { text, passage: best.passage };
}
