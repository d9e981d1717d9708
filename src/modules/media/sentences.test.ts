import { describe, expect, it } from 'vitest';
import { sentenceCutter } from './sentences.ts';

describe('sentenceCutter', () => {
  it('gives each sentence once the next has begun, and the rest at the end', () => {
    const cutter = sentenceCutter('en-US');
    expect(cutter.push('Of cou')).toEqual([]);
    expect(cutter.push('rse. We open')).toEqual(['Of course.']);
    expect(cutter.push(' at 8 am. Parking is')).toEqual(['We open at 8 am.']);
    expect(cutter.push(' free!')).toEqual([]);
    expect(cutter.flush()).toEqual(['Parking is free!']);
    expect(cutter.flush()).toEqual([]);
  });

  it('keeps decimals and questions whole', () => {
    const cutter = sentenceCutter('en-US');
    expect([...cutter.push('It costs 3.50 euros. Is that fine? '), ...cutter.flush()]).toEqual(['It costs 3.50 euros.', 'Is that fine?']);
  });
});
