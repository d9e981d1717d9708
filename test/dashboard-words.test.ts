import { describe, expect, it } from 'vitest';
import { FUSION, reciprocalRankFusion } from '../src/modules/knowledge/service.ts';
import { formatWait, FUSED_SCORE, matchStrength, nextAttemptInWords } from '../web/src/words.ts';

// The dashboard's sentences about time, in the campaign's zone (2026-11-23 is a Monday).
describe("a contact's next attempt in words", () => {
  const now = new Date('2026-11-23T22:30:00.000Z');

  it("says the campaign's local day and time, and how long until then", () => {
    // 09:00 on Tuesday in New York is 14:00 UTC: 15 h 30 min from now.
    expect(nextAttemptInWords(new Date('2026-11-24T14:00:00.000Z'), 'America/New_York', now)).toBe('Tue 09:00, in 15 h 30 min');
    // The same instant in Tokyo is already Tuesday 23:00.
    expect(nextAttemptInWords(new Date('2026-11-24T14:00:00.000Z'), 'Asia/Tokyo', now)).toBe('Tue 23:00, in 15 h 30 min');
  });

  it('says "due now" for an attempt whose time has come', () => {
    expect(nextAttemptInWords(now, 'UTC', now)).toBe('due now');
    expect(nextAttemptInWords(new Date(now.getTime() - 60_000), 'UTC', now)).toBe('due now');
  });

  it('names the date too when the attempt is a week or more away', () => {
    expect(nextAttemptInWords(new Date('2026-12-02T10:00:00.000Z'), 'UTC', now)).toBe('Wed 2 Dec 10:00, in 8 d 11 h 30 min');
  });

  it('counts waits in days, hours and minutes, at least a minute', () => {
    expect(formatWait(1_000)).toBe('in 1 min');
    expect(formatWait(3 * 3600_000 + 5 * 60_000)).toBe('in 3 h 5 min');
    expect(formatWait(24 * 3600_000)).toBe('in 1 d');
  });
});

// The knowledge query's scores count ranks (reciprocal rank fusion): 0.17 is first in one ranking only.
describe("a knowledge query result's strength", () => {
  it('scores as the API fuses its rankings', () => {
    expect({ k: FUSED_SCORE.k, rankings: FUSED_SCORE.rankings }).toEqual({ k: FUSION.k, rankings: 2 });
    expect([FUSION.textWeight, FUSION.vectorWeight]).toEqual([1, 1]);
    const [first] = reciprocalRankFusion([['a'], ['a']]);
    expect(matchStrength(first!.score)).toEqual({ words: 'Strong match', detail: 'score 0.33 of 0.33' });
  });

  it('calls a passage first by one ranking only partial, never "100%"', () => {
    const [onlyByWords] = reciprocalRankFusion([['a'], []]);
    expect(matchStrength(onlyByWords!.score)).toEqual({ words: 'Partial match', detail: 'score 0.17 of 0.33' });
    expect(matchStrength(0.1)).toEqual({ words: 'Partial match', detail: 'score 0.10 of 0.33' });
    // Second by words and by meaning: 2 / 7, above what one ranking alone can give.
    expect(
      matchStrength(
        reciprocalRankFusion([
          ['b', 'a'],
          ['c', 'a'],
        ]).find((hit) => hit.id === 'a')!.score,
      ).words,
    ).toBe('Strong match');
  });
});
