import { describe, expect, it } from 'vitest';
import { sentenceCutter, sentencesOf } from './sentences.ts';

describe('sentencesOf', () => {
  it('never ends a sentence at a title or a Latin abbreviation', () => {
    expect(sentencesOf('Our head dentist is Dr. Priya Raman. She specialises in implants.')).toEqual([
      'Our head dentist is Dr. Priya Raman.',
      'She specialises in implants.',
    ]);
    expect(sentencesOf('Ask Prof. Lee or Mrs. Brown. Bring a form, e.g. 5B or i.e. the blue one. Fine.')).toEqual([
      'Ask Prof. Lee or Mrs. Brown.',
      'Bring a form, e.g. 5B or i.e. the blue one.',
      'Fine.',
    ]);
  });

  it('still ends one at a word that may close it', () => {
    expect(sentencesOf('We are at 12 Main St. Parking is free. We said no. Then yes.')).toEqual([
      'We are at 12 Main St.',
      'Parking is free.',
      'We said no.',
      'Then yes.',
    ]);
  });
});

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

  it('keeps decimals, questions and titles whole', () => {
    const cutter = sentenceCutter('en-US');
    expect([...cutter.push('It costs 3.50 euros. Is that fine? '), ...cutter.flush()]).toEqual(['It costs 3.50 euros.', 'Is that fine?']);
    expect(cutter.push('Ask for Dr. ')).toEqual([]);
    expect(cutter.push('Raman at the desk. She')).toEqual(['Ask for Dr. Raman at the desk.']);
  });
});
