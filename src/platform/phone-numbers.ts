import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

// One rule for every phone number the platform takes (contacts, voice numbers, call
// destinations), so a number valid in one place is valid in all.

const FORMATTING = /[\s\-.()]/g;
const E164 = /^\+[1-9][0-9]{7,14}$/;
/**
 * A North American number in E.164: the library would spend most of its time deciding which of the
 * plan's 25 countries it belongs to (about 30 µs a number, five times any other country's), only
 * to answer what it answers for all of them: possible at 10 digits, and the number unchanged.
 * phone-numbers.test.ts holds this to the library's answer.
 */
const NANP_E164 = /^\+1[0-9]{10}$/;

export const INVALID_PHONE = 'Invalid phone number';

/** An ISO 3166-1 alpha-2 code whose numbering plan is known (for national numbers), or null. */
export const phoneCountry = (code: string): CountryCode | null => (isSupportedCountry(code) ? code : null);

/**
 * E.164 after removing spaces, dashes, dots and parentheses, and possible for its country; else null.
 * With `defaultCountry`, a number written without `+` is read as a national number of that country
 * (`030 1234567` in DE is +49301234567); without it, only E.164 is accepted.
 */
export function normalizePhoneNumber(raw: string, defaultCountry?: CountryCode): string | null {
  const compact = raw.replace(FORMATTING, '');
  if (defaultCountry && !compact.startsWith('+') && /^[0-9]{2,17}$/.test(compact)) {
    const national = parsePhoneNumberFromString(compact, defaultCountry);
    return national?.isPossible() && E164.test(national.number) ? national.number : null;
  }
  if (NANP_E164.test(compact)) return compact;
  if (!E164.test(compact)) return null;
  const parsed = parsePhoneNumberFromString(compact);
  return parsed?.isPossible() ? parsed.number : null;
}
