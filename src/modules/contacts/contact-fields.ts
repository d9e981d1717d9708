import type { CountryCode } from 'libphonenumber-js/max';
import { MAX_JSON_DEPTH, unstorableText } from '../../platform/input.ts';
import { INVALID_PHONE, normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { resolveTimeZone, TIME_ZONE_HINT } from '../../platform/time-zones.ts';
import { MAX_CONTACT_NAME_LENGTH, MAX_EMAIL_LENGTH, MAX_PHONE_NUMBER_LENGTH, MAX_TIME_ZONE_LENGTH } from './schemas.ts';

/** Rules for one contact's fields, shared by single add, bulk add and CSV import (contract §4). */

// Practical e-mail check, the same shape ajv-formats' "email" accepts.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export const MISSING_PHONE = 'Missing phone number';
export const INVALID_EMAIL = 'Invalid email';
export const METADATA_NOT_OBJECT = 'metadata is not a JSON object';
export const DUPLICATE_PHONE = 'Duplicate phone number in this list';
export const INVALID_TIMEZONE = `Unknown time zone; ${TIME_ZONE_HINT}`;
const METADATA_TOO_DEEP = `metadata nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`;
// In the words the JSON API refuses a name too long with.
const NAME_TOO_LONG = `name must be at most ${MAX_CONTACT_NAME_LENGTH} characters long`;

/**
 * A metadata value left unread: the CSV cell that held it nests deeper than a JSON body may
 * (MAX_JSON_DEPTH), and parsing, storing or answering it would recurse once per level.
 */
export const TOO_DEEP_METADATA: unique symbol = Symbol('metadata nested too deep');

/** Why a row holds text PostgreSQL cannot store, naming the field (a JSON body is refused for it before any route sees it; a CSV cell is not). */
function unstorableField(row: Record<string, unknown>): string | undefined {
  const found = unstorableText(row);
  return found && `${found.path.split('/')[1]} ${found.problem}`;
}

export const isValidEmail = (value: string): boolean => value.length <= MAX_EMAIL_LENGTH && EMAIL.test(value);

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export interface ContactFields {
  phoneNumber: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  /** The contact's IANA zone when given; null: the dialer derives it from the number. */
  timezone: string | null;
}

export type RowCheck = { ok: true; contact: ContactFields } | { ok: false; phone: string; reason: string };

/** Checks one incoming row; the reason is the sentence reported in `invalidRows`. `defaultCountry` reads numbers without `+`. */
export function checkContactRow(
  row: { phoneNumber?: unknown; name?: unknown; email?: unknown; metadata?: unknown; timezone?: unknown },
  defaultCountry?: CountryCode,
): RowCheck {
  const unstorable = unstorableField(row);
  if (unstorable) return { ok: false, phone: typeof row.phoneNumber === 'string' ? row.phoneNumber.trim() : '', reason: unstorable };
  const rawPhone =
    typeof row.phoneNumber === 'string'
      ? row.phoneNumber.trim()
      : row.phoneNumber === undefined || row.phoneNumber === null
        ? ''
        : String(row.phoneNumber);
  if (rawPhone === '') return { ok: false, phone: '', reason: MISSING_PHONE };
  const phoneNumber = rawPhone.length <= MAX_PHONE_NUMBER_LENGTH ? normalizePhoneNumber(rawPhone, defaultCountry) : null;
  if (!phoneNumber) return { ok: false, phone: rawPhone, reason: INVALID_PHONE };
  const email = typeof row.email === 'string' && row.email.trim() !== '' ? row.email.trim() : null;
  if ((email !== null && !isValidEmail(email)) || (row.email !== undefined && row.email !== null && typeof row.email !== 'string')) {
    return { ok: false, phone: rawPhone, reason: INVALID_EMAIL };
  }
  if (row.metadata === TOO_DEEP_METADATA) return { ok: false, phone: rawPhone, reason: METADATA_TOO_DEEP };
  if (row.metadata !== undefined && row.metadata !== null && !isPlainObject(row.metadata))
    return { ok: false, phone: rawPhone, reason: METADATA_NOT_OBJECT };
  const typedZone = typeof row.timezone === 'string' && row.timezone.trim() !== '' ? row.timezone.trim() : null;
  // Stored as the zone's IANA name, also when a city named it.
  const timezone = typedZone !== null && typedZone.length <= MAX_TIME_ZONE_LENGTH ? (resolveTimeZone(typedZone) ?? null) : null;
  if ((typedZone !== null && timezone === null) || (row.timezone != null && typeof row.timezone !== 'string'))
    return { ok: false, phone: rawPhone, reason: INVALID_TIMEZONE };
  const name = typeof row.name === 'string' && row.name.trim() !== '' ? row.name.trim() : null;
  if (name !== null && name.length > MAX_CONTACT_NAME_LENGTH) return { ok: false, phone: rawPhone, reason: NAME_TOO_LONG };
  return {
    ok: true,
    contact: { phoneNumber, name, email, metadata: (row.metadata as Record<string, unknown> | undefined) ?? {}, timezone },
  };
}
