import { describe, expect, it } from 'vitest';
import { isOptOutReply } from './opt-out-replies.ts';

describe('opt-out replies', () => {
  it('are the carriers’ keywords and their equivalents alone, in any case and with punctuation around them', () => {
    for (const text of [
      'STOP',
      'stop',
      ' Stop. ',
      'STOPALL',
      'Unsubscribe!',
      'opt out',
      'OPT-OUT',
      'Revoke',
      'Stop promotions',
      'Baja',
      'ARRÊT',
      'Stopp',
    ])
      expect(isOptOutReply(text), text).toBe(true);
  });

  it('are not sentences that merely contain one of the words', () => {
    for (const text of ["Don't stop", 'stop by tomorrow', 'When does it end?', 'Yes', 'cancel my appointment please', ''])
      expect(isOptOutReply(text), text).toBe(false);
  });
});
