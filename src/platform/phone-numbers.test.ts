import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { normalizePhoneNumber } from './phone-numbers.ts';

/** What the library alone says of an E.164 number: the number when possible, else null. */
const libraryAnswer = (number: string) => {
  const parsed = parsePhoneNumberFromString(number);
  return parsed?.isPossible() ? parsed.number : null;
};

describe('normalizePhoneNumber', () => {
  it('answers a North American number as the library does, without asking it', () => {
    // Every area code and exchange from 000 to 999, with line numbers that vary with them.
    const numbers: string[] = [];
    for (let area = 0; area < 1000; area += 7)
      for (let exchange = 0; exchange < 1000; exchange += 13)
        numbers.push(
          `+1${String(area).padStart(3, '0')}${String(exchange).padStart(3, '0')}${String((area * 31 + exchange * 17) % 10_000).padStart(4, '0')}`,
        );
    expect(numbers.length).toBeGreaterThan(10_000);
    for (const number of numbers) expect(normalizePhoneNumber(number), number).toBe(libraryAnswer(number));
    expect(normalizePhoneNumber('+1 (415) 555-0123')).toBe('+14155550123');
    // One digit short or long is not a North American number: the library decides, and refuses.
    expect(normalizePhoneNumber('+1415555012')).toBeNull();
    expect(normalizePhoneNumber('+141555501234')).toBeNull();
  });

  it('reads other countries through the library', () => {
    expect(normalizePhoneNumber('+49 30 1234567')).toBe('+49301234567');
    expect(normalizePhoneNumber('030 1234567', 'DE')).toBe('+49301234567');
    expect(normalizePhoneNumber('+4930')).toBeNull();
    expect(normalizePhoneNumber('4155550123')).toBeNull(); // no country to read it in
  });
});
