import { describe, expect, it } from 'vitest';
import { normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { checkContactRow } from './contact-fields.ts';

describe('normalizePhoneNumber', () => {
  it('removes formatting characters and keeps E.164', () => {
    expect(normalizePhoneNumber('+1 (415) 555-2671')).toBe('+14155552671');
    expect(normalizePhoneNumber('+44 20.7946.0958')).toBe('+442079460958');
    expect(normalizePhoneNumber('+919876543210')).toBe('+919876543210');
  });

  it('refuses numbers without a leading +, with letters, too short, too long or impossible for the country', () => {
    expect(normalizePhoneNumber('4155552671')).toBeNull();
    expect(normalizePhoneNumber('+1415555CALL')).toBeNull();
    expect(normalizePhoneNumber('+1234567')).toBeNull();
    expect(normalizePhoneNumber('+1234567890123456')).toBeNull();
    expect(normalizePhoneNumber('+1 415 555')).toBeNull();
    expect(normalizePhoneNumber('+0123456789')).toBeNull();
  });
});

describe('checkContactRow', () => {
  it('gives the reason a row is refused', () => {
    expect(checkContactRow({})).toEqual({ ok: false, phone: '', reason: 'Missing phone number' });
    expect(checkContactRow({ phoneNumber: '12' })).toEqual({ ok: false, phone: '12', reason: 'Invalid phone number' });
    expect(checkContactRow({ phoneNumber: '+14155552671', email: 'nope' })).toMatchObject({ reason: 'Invalid email' });
    expect(checkContactRow({ phoneNumber: '+14155552671', metadata: [1] })).toMatchObject({ reason: 'metadata is not a JSON object' });
  });

  it('normalises a valid row', () => {
    expect(
      checkContactRow({ phoneNumber: ' +1 415-555-2671 ', name: ' Ada ', email: 'ada@example.com', metadata: { tier: 'gold' } }),
    ).toEqual({
      ok: true,
      contact: { phoneNumber: '+14155552671', name: 'Ada', email: 'ada@example.com', metadata: { tier: 'gold' }, timezone: null },
    });
    expect(checkContactRow({ phoneNumber: '+14155552671', timezone: ' America/Chicago ' })).toMatchObject({
      ok: true,
      contact: { timezone: 'America/Chicago' },
    });
    expect(checkContactRow({ phoneNumber: '+14155552671', timezone: 'Mars/Olympus' })).toMatchObject({ ok: false });
  });
});
