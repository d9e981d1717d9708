import { describe, expect, it } from 'vitest';
import type { Passage } from '../knowledge/service.ts';
import { answerFromPassages, isGoodbye, isGreeting, isOptOut } from './retrieval-agent.ts';

const passage = (text: string, match: Partial<Passage> = {}): Passage => ({
  chunkId: 'c',
  sourceId: 's',
  sourceName: 'FAQ',
  text,
  score: 0.03,
  sharesWords: true,
  similarity: 0.2,
  ...match,
});

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

  it('answers with the sentence that matches best and those after it in its paragraph, spoken plainly', () => {
    const text =
      '# Hours\n\nWe open at **8 am**. We close at 6 pm.\n\n## Parking\n\n- Parking is [free](https://example.com) for patients.';
    expect(answerFromPassages('When do you open?', [passage(text)])?.text).toBe('We open at 8 am. We close at 6 pm.');
    expect(answerFromPassages('When do you close?', [passage(text)])?.text).toBe('We close at 6 pm.');
    expect(answerFromPassages('Is parking free?', [passage(text)])?.text).toBe('Parking is free for patients.');
  });

  it('keeps an answer to about two spoken sentences', () => {
    const long = Array.from({ length: 12 }, (_, i) => `Sentence number ${i} tells you something about refunds.`).join(' ');
    const answer = answerFromPassages('refunds', [passage(long)])!.text;
    expect(answer.length).toBeLessThanOrEqual(280);
    expect(answer.startsWith('Sentence number 0')).toBe(true);
  });

  it('answers only from a passage that shares words with the question or is close to it in meaning', () => {
    expect(answerFromPassages('dragons?', [passage('We open at 8.', { sharesWords: false, similarity: 0.49 })])).toBeUndefined();
    expect(answerFromPassages('when?', [passage('We open at 8.', { sharesWords: false, similarity: 0.5 })])?.text).toBe('We open at 8.');
    expect(answerFromPassages('anything', [])).toBeUndefined();
  });
});
