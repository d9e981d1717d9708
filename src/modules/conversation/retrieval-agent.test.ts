import { describe, expect, it } from 'vitest';
import type { Passage } from '../knowledge/service.ts';
import { wordSenses } from '../../platform/word-senses.ts';
import {
  answerFromPassages,
  answerScore,
  ANSWER_RULE,
  givesKindAsked,
  isGoodbye,
  isGreeting,
  isOptOut,
  topicWords,
  wordShares,
} from './retrieval-agent.ts';

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
    // A greeting that goes on to ask something is a question; one that asks who calls is still a greeting.
    expect(isGreeting('Yes, that is me. Where can I park?')).toBe(false);
    expect(isGreeting('Hello? Who is this?')).toBe(true);
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

  it('reads a question word where it opens the question or a clause, and knows how often, due dates, notice and ways to pay', () => {
    // "when the power is cut" is no question about a time; "…, who do I call?" asks for someone.
    expect(givesKindAsked('Who gets priority when the power is cut?', 'The outage line is staffed 24 hours a day.')).toBe(false);
    expect(givesKindAsked('When is the outage line staffed?', 'The outage line is staffed 24 hours a day.')).toBe(true);
    expect(givesKindAsked('I have terrible tooth pain at night, who do I call?', 'Our head dentist is Dr. Priya Raman.')).toBe(true);
    expect(givesKindAsked('How often will I get a bill?', 'Bills are sent every two months.')).toBe(true);
    expect(givesKindAsked('How often will I get a bill?', 'A late payment adds a fee of $12.')).toBe(false);
    expect(givesKindAsked('When is my payment due?', 'Bills are due 21 days after the bill date.')).toBe(true);
    expect(givesKindAsked('Is there a penalty for paying after the due date?', 'Bills are due 21 days after the bill date.')).toBe(false);
    expect(givesKindAsked('How much notice do you need?', 'Tell us at least five working days before the move.')).toBe(true);
    expect(givesKindAsked('How can I pay what I owe?', 'You can pay online, by direct debit or at any post office.')).toBe(true);
    expect(answerScore('How often will I get a bill?', 'Bills are sent every two months.', 0.4)).toBeCloseTo(0.4 + ANSWER_RULE.kindBonus);
  });

  it("weighs the question's words a sentence holds, in any form or a word of the same meaning, rarer words more", async () => {
    const senses = await wordSenses();
    expect(topicWords('Do you take Cigna?')).toEqual(['take', 'cigna']);
    const facts = ['We accept Delta Dental, Cigna and Aetna insurance.', 'We take part-exchange.', 'We are open from 8 am.'];
    const [cigna, partExchange, open] = wordShares('Do you take Cigna?', facts, senses);
    // "take" is in two facts ("accept" means it too), "Cigna" in one: the fact with both holds all the question.
    expect(cigna).toBeCloseTo(1);
    expect(partExchange).toBeGreaterThan(0);
    expect(partExchange).toBeLessThan(0.5);
    expect(open).toBe(0);
    // Kids are children; Mazdas are a Mazda.
    expect(wordShares('Any kids?', ['Children are welcome from the age of two.', 'We open at 8 am.'], senses)).toEqual([1, 0]);
    expect(wordShares('Do you have any Mazdas?', ['We sell Toyota and Mazda cars.'], senses)[0]).toBeCloseTo(1);
    // A word no sentence holds (bitcoin) weighs most, and leaves every sentence short of the whole question.
    expect(wordShares('Can I pay with bitcoin?', ['You can pay online.', 'We open at 8 am.'], senses)[0]).toBeLessThan(0.5);
    expect(wordShares('Hello there?', ['We open at 8 am.'], senses)).toEqual([0]);
  });

  it("answers with the fact that holds the question's rare word over one a little closer in meaning", async () => {
    const faq = [passage('We accept Delta Dental, Cigna and Aetna insurance.\n\nWe take part-exchange.')];
    const similar = similarities({ 'We accept': 0.4, 'We take': 0.45 });
    expect((await answerFromPassages('Do you take Cigna?', faq, similar))?.text).toBe('We accept Delta Dental, Cigna and Aetna insurance.');
    // Without the words, the closer fact would win by too little to answer.
    expect(0.45 - 0.4).toBeLessThan(ANSWER_RULE.margin);
  });

  it('keeps an answer to about two spoken sentences', async () => {
    const long = `Refunds ${'are paid back to the card you used and take a while, '.repeat(12)}.`;
    const answer = (await answerFromPassages('refunds', [passage(long)], similarities({ Refunds: 0.9 })))!.text;
    expect(answer.length).toBeLessThanOrEqual(281);
    expect(answer.endsWith('…')).toBe(true);
  });
});
