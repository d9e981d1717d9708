import { describe, expect, it } from 'vitest';
import type { Passage } from '../knowledge/service.ts';
import { answerFromPassages, answerScore, ANSWER_RULE, isGoodbye, isGreeting, isOptOut } from './retrieval-agent.ts';

const passage = (text: string): Passage => ({ chunkId: 'c', sourceId: 's', sourceName: 'FAQ', text, score: 0.03 });

/** Similarities as a model would give them: each sentence's by the words it starts with, others 0. */
const similarities =
  (table: Record<string, number>) =>
  async (_question: string, sentences: string[]): Promise<number[]> =>
    sentences.map((sentence) => Object.entries(table).find(([start]) => sentence.startsWith(start))?.[1] ?? 0);

describe('the retrieval agent', () => {
  it('hears opt-outs, goodbyes and greetings, and not in ordinary questions', () => {
    for (const text of ['Stop calling me', "Please don't call me again", 'Take me off your list.', 'I want to opt out', 'Remove my number'])
      expect(isOptOut(text), text).toBe(true);
    for (const text of ['Can I stop my subscription?', 'Do you call back later?', 'What is the opt-in bonus?'])
      expect(isOptOut(text), text).toBe(false);
    for (const text of ['Bye!', 'Okay, goodbye', 'Have a nice day', "That's all, thanks"]) expect(isGoodbye(text), text).toBe(true);
    expect(isGoodbye('Is the bypass road open?')).toBe(false);
    expect(isGreeting('Hello?')).toBe(true);
    expect(isGreeting('Yes, speaking. What is this about?')).toBe(true);
    expect(isGreeting('Hello, what time does the clinic open on Saturdays during the summer?')).toBe(false);
  });

  it('answers with the one sentence that answers, spoken plainly, and those after it that go on about the same thing', async () => {
    const text =
      '# Team\n\nOur head dentist is **Dr. Priya Raman**. She specialises in implants. We also sell toothbrushes.\n\n' +
      '## Parking\n\n- Parking is [free](https://example.com) for patients.';
    const faq = [passage(text)];
    expect((await answerFromPassages('Who is the head dentist?', faq, similarities({ Our: 0.6 })))?.text).toBe(
      'Our head dentist is Dr. Priya Raman. She specialises in implants.',
    );
    expect((await answerFromPassages('Is parking free?', faq, similarities({ Parking: 0.7 })))?.text).toBe('Parking is free for patients.');
  });

  it('says it does not know when the best sentence is not close enough, or another fact is nearly as close', async () => {
    const faq = [passage('We open at 8 am.\n\nThe clinic is at 12 Harbour Road.')];
    const below = ANSWER_RULE.answersAt - 0.01;
    expect(await answerFromPassages('Can I pay in bitcoin?', faq, similarities({ We: below }))).toBeUndefined();
    expect(
      await answerFromPassages('Can I pay in bitcoin?', faq, similarities({ We: 0.6, The: 0.6 - ANSWER_RULE.margin + 0.01 })),
    ).toBeUndefined();
    expect((await answerFromPassages('Can I come at 9?', faq, similarities({ We: 0.6, The: 0.6 - ANSWER_RULE.margin - 0.01 })))?.text).toBe(
      'We open at 8 am.',
    );
    expect(await answerFromPassages('anything', [], similarities({}))).toBeUndefined();
    // Facts written one a line are facts apart: one nearly as close as the other is a rival too.
    const lines = [passage('We open at 8 am.\nThe clinic is at 12 Harbour Road.\nShe is nice.')];
    expect(await answerFromPassages('Can I pay in bitcoin?', lines, similarities({ We: 0.6, The: 0.55 }))).toBeUndefined();
    expect((await answerFromPassages('When?', lines, similarities({ We: 0.6, The: 0.4 })))?.text).toBe('We open at 8 am.');
  });

  it('counts a sentence that gives the kind of thing asked (a place, a time, a price, a person) as closer', () => {
    const where = 'Where exactly is your office?';
    expect(answerScore(where, 'The clinic is at 12 Harbour Road, first floor.', 0.35)).toBeCloseTo(0.35 + ANSWER_RULE.kindBonus);
    expect(answerScore(where, 'Call us on 555 0199 after hours.', 0.35)).toBe(0.35);
    expect(answerScore('How much is a check-up?', 'A check-up costs $85.', 0.4)).toBeCloseTo(0.4 + ANSWER_RULE.kindBonus);
    expect(answerScore('When do you open on Saturday?', 'On Saturdays we open from 9 am to noon.', 0.4)).toBeCloseTo(
      0.4 + ANSWER_RULE.kindBonus,
    );
  });

  it('keeps an answer to about two spoken sentences', async () => {
    const long = `Refunds ${'are paid back to the card you used and take a while, '.repeat(12)}.`;
    const answer = (await answerFromPassages('refunds', [passage(long)], similarities({ Refunds: 0.9 })))!.text;
    expect(answer.length).toBeLessThanOrEqual(281);
    expect(answer.endsWith('…')).toBe(true);
  });
});
