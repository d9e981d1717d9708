/**
 * The statutory calling rules the dialer applies to a campaign with `callingRules` on: when a person
 * may be called (in the person's own local time) and how often. Every rule names its source; keep
 * them current as docs/compliance.md says. A rule holds for a number by its region: a country
 * (ISO 3166-1, from the number) or a US state (`US-FL`, from the area code, us-area-codes.json).
 * All the rules that hold for a number apply at once, so the strictest hours and caps win.
 *
 * Holidays are the public holidays of a calendar (date-holidays' data, platform/holidays.ts) and the
 * days a statute names that the data lacks. Where a source is unsure, the stricter reading is kept:
 * a day barred too many only loses calling time. Not modelled: the "same subject" of a cap, counted
 * here as any call of the tenant.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import usAreaCodes from './us-area-codes.json' with { type: 'json' };
import type { CallingRule } from './schemas.ts';

const EVERY_DAY = [1, 2, 3, 4, 5, 6, 7];
const MONDAY_TO_SATURDAY = [1, 2, 3, 4, 5, 6];
const WEEKDAYS = [1, 2, 3, 4, 5];
const EIGHT_TO_EIGHT_MONDAY_TO_SATURDAY = [{ days: MONDAY_TO_SATURDAY, start: '08:00', end: '20:00' }];

export const STATUTORY_RULES: readonly CallingRule[] = [
  {
    id: 'us-tcpa-hours',
    region: 'US',
    name: 'US federal calling hours: 8 a.m. to 9 p.m. at the called party’s location',
    source: 'Telephone Consumer Protection Act rules, 47 CFR 64.1200(c)(1)',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '21:00' }],
  },
  {
    id: 'us-fl-telephone-solicitation',
    region: 'US-FL',
    name: 'Florida: 8 a.m. to 8 p.m., at most 3 calls in 24 hours',
    source: 'Florida Telephone Solicitation Act, Fla. Stat. 501.059(8)',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }],
    maxCalls: [{ count: 3, hours: 24 }],
  },
  {
    id: 'us-ok-telephone-solicitation',
    region: 'US-OK',
    name: 'Oklahoma: 8 a.m. to 8 p.m., at most 3 calls in 24 hours',
    source: 'Oklahoma Telephone Solicitation Act of 2022, 15 O.S. 775C.1 and following',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }],
    maxCalls: [{ count: 3, hours: 24 }],
  },
  {
    id: 'us-md-stop-the-spam-calls',
    region: 'US-MD',
    name: 'Maryland: 8 a.m. to 8 p.m., at most 3 calls in 24 hours',
    source: 'Maryland Stop the Spam Calls Act of 2023, Md. Code, Com. Law 14-4501 and following',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }],
    maxCalls: [{ count: 3, hours: 24 }],
  },
  {
    id: 'us-la-telephone-solicitation',
    region: 'US-LA',
    name: 'Louisiana: 8 a.m. to 8 p.m. Monday to Saturday, not on Sundays or state holidays',
    source:
      'La. R.S. 45:811(2) and (3); the state holidays of La. R.S. 1:55(A)(1) (January 8, August 30 and November 1 added to the calendar)',
    windows: EIGHT_TO_EIGHT_MONDAY_TO_SATURDAY,
    holidays: { calendar: 'US-LA', extraDays: ['01-08', '08-30', '11-01'] },
  },
  {
    id: 'us-al-telephone-solicitation',
    region: 'US-AL',
    name: 'Alabama: 8 a.m. to 8 p.m., not on Sundays or state holidays',
    source: 'Ala. Admin. Code r. 770-X-5-.17(1)(b); the state holidays of Ala. Code 1-3-8',
    windows: EIGHT_TO_EIGHT_MONDAY_TO_SATURDAY,
    holidays: { calendar: 'US-AL' },
  },
  {
    id: 'us-ms-telephone-solicitation',
    region: 'US-MS',
    name: 'Mississippi: 8 a.m. to 8 p.m., not on Sundays',
    source: 'Miss. Code Ann. 77-3-723(1)',
    windows: EIGHT_TO_EIGHT_MONDAY_TO_SATURDAY,
  },
  {
    id: 'us-ri-telephone-sales',
    region: 'US-RI',
    name: 'Rhode Island: 9 a.m. to 6 p.m. on weekdays, 10 a.m. to 5 p.m. on Saturday, not on Sundays or state and federal holidays',
    source: 'R.I. Gen. Laws 5-61-3.6 and the hours of operation of 5-61-2; May 4, Rhode Island Independence Day, added to the calendar',
    windows: [
      { days: WEEKDAYS, start: '09:00', end: '18:00' },
      { days: [6], start: '10:00', end: '17:00' },
    ],
    holidays: { calendar: 'US-RI', extraDays: ['05-04'] },
  },
  {
    id: 'us-ut-telephone-solicitation',
    region: 'US-UT',
    name: 'Utah: 8 a.m. to 9 p.m., not on Sundays or legal holidays',
    source:
      'Utah Code 13-25a-103(3); the legal holidays of Utah Code 63G-1-301, a Saturday one observed on the Friday before and a Sunday one on the Monday after',
    windows: [{ days: MONDAY_TO_SATURDAY, start: '08:00', end: '21:00' }],
    holidays: { calendar: 'US-UT', weekendObserved: true },
  },
  {
    id: 'us-pa-telemarketing',
    region: 'US-PA',
    name: 'Pennsylvania: 8 a.m. to 9 p.m., not on legal holidays',
    source: 'Telemarketer Registration Act, 73 P.S. 2245(a)(1); legal holidays barred by Act 73 of 2019',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '21:00' }],
    holidays: { calendar: 'US-PA' },
  },
  {
    id: 'us-ct-telephone-solicitation',
    region: 'US-CT',
    name: 'Connecticut: 9 a.m. to 8 p.m.',
    source: 'Conn. Gen. Stat. 42-288a, as amended by Public Act 23-98',
    windows: [{ days: EVERY_DAY, start: '09:00', end: '20:00' }],
  },
  {
    id: 'us-ma-telephone-solicitation',
    region: 'US-MA',
    name: 'Massachusetts: 8 a.m. to 8 p.m.',
    source: '201 CMR 12.02(2)',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }],
  },
  {
    id: 'us-tx-telephone-solicitation',
    region: 'US-TX',
    name: 'Texas: 9 a.m. to 9 p.m. Monday to Saturday, noon to 9 p.m. on Sunday',
    source: 'Texas Business and Commerce Code 301.051',
    windows: [
      { days: MONDAY_TO_SATURDAY, start: '09:00', end: '21:00' },
      { days: [7], start: '12:00', end: '21:00' },
    ],
  },
  {
    id: 'us-wa-telephone-solicitation',
    region: 'US-WA',
    name: 'Washington: 8 a.m. to 8 p.m.',
    source: 'Revised Code of Washington 80.36.390',
    windows: [{ days: EVERY_DAY, start: '08:00', end: '20:00' }],
  },
  {
    id: 'fr-demarchage-telephonique',
    region: 'FR',
    name: 'France: weekdays 10:00 to 13:00 and 14:00 to 20:00, not on public holidays, at most 4 calls in 30 days',
    source:
      'Code de la consommation L.223-1 and D.223-9 (Décret n° 2022-1313 du 13 octobre 2022); the public holidays of Code du travail L.3133-1',
    windows: [
      { days: WEEKDAYS, start: '10:00', end: '13:00' },
      { days: WEEKDAYS, start: '14:00', end: '20:00' },
    ],
    holidays: { calendar: 'FR' },
    maxCalls: [{ count: 4, hours: 30 * 24 }],
  },
  {
    id: 'de-uwg-consent',
    region: 'DE',
    name: 'Germany: an advertising call to a consumer needs the consumer’s prior express consent',
    source: 'Gesetz gegen den unlauteren Wettbewerb (UWG) § 7 Abs. 2',
    requiresConsent: true,
  },
];

const areaCodeStates = usAreaCodes as Record<string, string>;

/** The regions a number (E.164) belongs to, widest first: its country, and for a US number its state. */
export function regionsOfNumber(e164: string): string[] {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed?.country) return [];
  if (parsed.country !== 'US') return [parsed.country];
  const state = areaCodeStates[String(parsed.nationalNumber).slice(0, 3)];
  return state ? ['US', `US-${state}`] : ['US'];
}

/** The rules, statutory and the tenant's own, that hold for a number. */
export function rulesForNumber(e164: string, tenantRules: readonly CallingRule[]): CallingRule[] {
  const regions = new Set(regionsOfNumber(e164));
  return [...STATUTORY_RULES, ...tenantRules].filter((rule) => rule.region === '*' || regions.has(rule.region));
}

/** The longest period any statutory cap counts calls over: how far back the dialer reads a number's calls. */
export const LONGEST_STATUTORY_CAP_HOURS = Math.max(0, ...STATUTORY_RULES.flatMap((rule) => rule.maxCalls ?? []).map((cap) => cap.hours));
