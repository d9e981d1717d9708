import type { CountryCode } from 'libphonenumber-js/max';
import { INVALID_PHONE, normalizePhoneNumber } from '../../platform/phone-numbers.ts';
import { isValidTimeZone } from '../../platform/time-zones.ts';

/** Rules for one contact's fields, shared by single add, bulk add and CSV import (contract §4). */

// Practical e-mail check, the same shape ajv-formats' "email" accepts.
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/i;

export const MISSING_PHONE = 'Missing phone number';
export const INVALID_EMAIL = 'Invalid email';
export const METADATA_NOT_OBJECT = 'metadata is not a JSON object';
export const DUPLICATE_PHONE = 'Duplicate phone number in this list';
export const INVALID_TIMEZONE = 'Unknown time zone; use an IANA name such as America/New_York';

export const isValidEmail = (value: string): boolean => value.length <= 254 && EMAIL.test(value);

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
  const rawPhone =
    typeof row.phoneNumber === 'string'
      ? row.phoneNumber.trim()
      : row.phoneNumber === undefined || row.phoneNumber === null
        ? ''
        : String(row.phoneNumber);
  if (rawPhone === '') return { ok: false, phone: '', reason: MISSING_PHONE };
  const phoneNumber = normalizePhoneNumber(rawPhone, defaultCountry);
  if (!phoneNumber) return { ok: false, phone: rawPhone, reason: INVALID_PHONE };
  const email = typeof row.email === 'string' && row.email.trim() !== '' ? row.email.trim() : null;
  if ((email !== null && !isValidEmail(email)) || (row.email !== undefined && row.email !== null && typeof row.email !== 'string')) {
    return { ok: false, phone: rawPhone, reason: INVALID_EMAIL };
  }
  if (row.metadata !== undefined && row.metadata !== null && !isPlainObject(row.metadata))
    return { ok: false, phone: rawPhone, reason: METADATA_NOT_OBJECT };
  const timezone = typeof row.timezone === 'string' && row.timezone.trim() !== '' ? row.timezone.trim() : null;
  if ((timezone !== null && !isValidTimeZone(timezone)) || (row.timezone != null && typeof row.timezone !== 'string'))
    return { ok: false, phone: rawPhone, reason: INVALID_TIMEZONE };
  const name = typeof row.name === 'string' && row.name.trim() !== '' ? row.name.trim() : null;
  return {
    ok: true,
    contact: { phoneNumber, name, email, metadata: (row.metadata as Record<string, unknown> | undefined) ?? {}, timezone },
  };
}
