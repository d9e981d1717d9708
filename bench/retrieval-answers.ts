/**
 * The retrieval agent's answers on its evaluation set (issue 42), offline: the same ranking of a
 * base's sentences as the agent's (`rankSentences`: the model's similarity, the kind asked, the
 * words' share), without the server, so that a sentence encoder can be compared with another and
 * the answer rule's thresholds refitted in seconds.
 *
 *   npm run bench:retrieval-answers
 *   BENCH_RETRIEVAL_MODEL=use-lite-512 npm run bench:retrieval-answers
 *
 * Each question is asked of every chunk of its base's one text source (the chunks are as many as
 * the agent's three best passages, or fewer: each base is one or two chunks). It prints, on each
 * half of test/retrieval-questions.ts and for the answerable questions, how often the best
 * sentence is of the right fact, by the model's similarity alone and by the agent's score: no
 * "I don't know" rule can give more right answers than the latter. Then right and wrong answers
 * with `ANSWER_RULE`, and with the floor and margin fitted on the tuning half (most right answers
 * with at most 2% wrong). Goal: wrong ≤ 2% and right ≥ 80% on each half. The figures are in
 * docs/knowledge-performance.md § The retrieval agent's answers.
 */
import { ANSWER_RULE, chosenAnswer, rankSentences, type RankedSentence } from '../src/modules/conversation/retrieval-agent.ts';
import { chunkText } from '../src/modules/knowledge/chunking.ts';
import { similaritiesBy, type Passage } from '../src/modules/knowledge/service.ts';
import { localSentenceEncoder } from '../src/providers/local-embeddings/sentence-encoder.ts';
import type { Embedder } from '../src/providers/types.ts';
import { EVALUATION_BASES, halvesOf, sourceTextOf, type EvaluationBase, type EvaluationQuestion } from '../test/retrieval-questions.ts';
import { fixed, runBench, table } from './harness.ts';

/** The sentence encoders that can be compared, by the name `BENCH_RETRIEVAL_MODEL` gives. */
const MODELS: Record<string, () => Embedder> = {
  'use-lite-512': () => localSentenceEncoder({ documentWorkers: 1 }),
};
const modelName = process.env.BENCH_RETRIEVAL_MODEL ?? 'use-lite-512';
/** The bound on wrong answers, of all the questions of a half. */
const MOST_WRONG = 0.02;
const HALVES = ['tuning', 'heldOut'] as const;
type Half = (typeof HALVES)[number];

interface Asked {
  half: Half;
  question: EvaluationQuestion;
  base: EvaluationBase;
  ranked: RankedSentence[];
}

/** The fact a sentence is part of (facts are one paragraph each). */
const factOf = (base: EvaluationBase, sentence: string) => base.facts.findIndex((fact) => fact.includes(sentence));

/** Right (the right fact), wrong (another, or any where none answers) or undefined ("I don't know"). */
function verdict(asked: Asked, rule: { answersAt: number; margin: number }): 'right' | 'wrong' | undefined {
  const answer = chosenAnswer(asked.ranked, rule);
  if (!answer) return undefined;
  return asked.question.fact !== null && factOf(asked.base, answer.sentence) === asked.question.fact ? 'right' : 'wrong';
}

function counts(asked: Asked[], rule: { answersAt: number; margin: number }) {
  const verdicts = asked.map((each) => verdict(each, rule));
  return { right: verdicts.filter((v) => v === 'right').length, wrong: verdicts.filter((v) => v === 'wrong').length };
}

/** The floor and margin with the most right answers of `asked` and at most `MOST_WRONG` wrong (the wider margin on a tie). */
function fitted(asked: Asked[]): { answersAt: number; margin: number } {
  const allowed = Math.floor(MOST_WRONG * asked.length + 1e-9);
  let best = { answersAt: ANSWER_RULE.answersAt, margin: ANSWER_RULE.margin, right: -1 };
  for (let margin = 0.6; margin >= 0; margin -= 0.01)
    for (let answersAt = 0; answersAt <= 1.5; answersAt += 0.01) {
      const rule = { answersAt, margin };
      const { right, wrong } = counts(asked, rule);
      if (wrong <= allowed && right > best.right) best = { ...rule, right };
    }
  return { answersAt: best.answersAt, margin: best.margin };
}

await runBench(async () => {
  const make = MODELS[modelName];
  if (!make) throw new Error(`BENCH_RETRIEVAL_MODEL names one of ${Object.keys(MODELS).join(', ')}, not ${modelName}.`);
  const embedder = make();
  // The question and the sentences embedded as the agent embeds them (all on the query lane).
  const similarityOf = (question: string, sentences: string[]) => similaritiesBy(embedder, question, sentences);
  const asked: Asked[] = [];
  for (const base of EVALUATION_BASES) {
    const passages: Passage[] = chunkText(sourceTextOf(base)).map((text, i) => ({
      chunkId: String(i),
      sourceId: base.name,
      sourceName: 'Facts',
      text,
      score: 0,
    }));
    const halves = halvesOf(base);
    for (const half of HALVES)
      for (const question of halves[half])
        asked.push({ half, question, base, ranked: await rankSentences(question.ask, passages, similarityOf) });
  }

  const fit = fitted(asked.filter((each) => each.half === 'tuning'));
  const rows = [['', ...HALVES, 'all']];
  const of = (half: Half | 'all') => asked.filter((each) => half === 'all' || each.half === half);
  const answerable = (half: Half | 'all') => of(half).filter((each) => each.question.fact !== null);
  const topRight = (half: Half | 'all', by: 'similarity' | 'score') =>
    answerable(half).filter((each) => {
      const top = [...each.ranked].sort((a, b) => b[by] - a[by])[0];
      return top && factOf(each.base, top.sentence) === each.question.fact;
    }).length;
  const columns = [...HALVES, 'all'] as const;
  rows.push(['questions (answerable)', ...columns.map((half) => `${of(half).length} (${answerable(half).length})`)]);
  for (const by of ['similarity', 'score'] as const)
    rows.push([`best sentence right, by ${by}`, ...columns.map((half) => `${topRight(half, by)}/${answerable(half).length}`)]);
  for (const [label, rule] of [
    [`ANSWER_RULE (≥ ${fixed(ANSWER_RULE.answersAt, 2)}, margin ${fixed(ANSWER_RULE.margin, 2)})`, ANSWER_RULE],
    [`fitted on tuning (≥ ${fixed(fit.answersAt, 2)}, margin ${fixed(fit.margin, 2)})`, fit],
  ] as const) {
    const percent = (part: number, whole: number) => `${fixed((part / whole) * 100, 0)}%`;
    rows.push([
      `${label}: right, wrong`,
      ...columns.map((half) => {
        const { right, wrong } = counts(of(half), rule);
        return `${right}/${answerable(half).length} (${percent(right, answerable(half).length)}), ${wrong}/${of(half).length} (${percent(wrong, of(half).length)})`;
      }),
    ]);
  }
  process.stdout.write(`Model ${modelName}; goal: wrong ≤ 2% and right ≥ 80% on each half\n\n${table(rows, (column) => column > 0)}\n`);
  return 0;
});
