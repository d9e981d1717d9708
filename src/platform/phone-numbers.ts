import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

// One rule for every phone number the platform takes (contacts, voice numbers, call
// destinations), so a number valid in one place is valid in all.

const FORMATTING = /[\s\-.()]/g;
const E164 = /^\+[1-9][0-9]{7,14}$/;

export const INVALID_PHONE = 'Invalid phone number';

/** E.164 after removing spaces, dashes, dots and parentheses, and possible for its country; else null. */
export function normalizePhoneNumber(raw: string): string | null {
  const compact = raw.replace(FORMATTING, '');
  if (!E164.test(compact)) return null;
  const parsed = parsePhoneNumberFromString(compact);
  return parsed?.isPossible() ? parsed.number : null;
}
