import { IANAZone } from 'luxon';
import { appError } from './errors.ts';

/** luxon's isValidZone builds a new Intl.DateTimeFormat on every call; remember the zones found valid (a bounded set, unlike the invalid ones). */
const validZones = new Set<string>();

/** Whether `zone` is an IANA time zone name this runtime knows. */
export function isValidTimeZone(zone: string): boolean {
  if (typeof zone !== 'string') return false;
  if (validZones.has(zone)) return true;
  if (!IANAZone.isValidZone(zone)) return false;
  validZones.add(zone);
  return true;
}

/** What a person is told to type when a zone is not found (the dashboard's picker searches cities too). */
export const TIME_ZONE_HINT = 'use an IANA name such as America/New_York, or a city that names one zone, such as Berlin';

/** The areas IANA names cities under: a city typed alone is looked for in each. */
const AREAS = [
  'Africa',
  'America',
  'America/Argentina',
  'America/Indiana',
  'America/Kentucky',
  'America/North_Dakota',
  'Antarctica',
  'Arctic',
  'Asia',
  'Atlantic',
  'Australia',
  'Europe',
  'Indian',
  'Pacific',
];

/** The runtime's own spelling of a valid zone ("europe/berlin" is Europe/Berlin). */
const canonicalZone = (zone: string): string => new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;

/**
 * The zone a person means, in its canonical spelling: an IANA name in any case, or a city that
 * names exactly one zone ("Berlin", "new york"); undefined for a name that names no zone, or
 * several (a person is then asked for the IANA name).
 */
export function resolveTimeZone(name: string): string | undefined {
  const typed = name.trim();
  if (typed === '') return undefined;
  if (isValidTimeZone(typed)) return canonicalZone(typed);
  if (typed.includes('/')) return undefined;
  const city = typed.replace(/\s+/g, '_');
  const zones = new Set(
    AREAS.map((area) => `${area}/${city}`)
      .filter(isValidTimeZone)
      .map(canonicalZone),
  );
  return zones.size === 1 ? [...zones][0] : undefined;
}

/** The refusal of a zone `resolveTimeZone` finds nothing for, on every route that takes one. */
export const unknownTimeZone = (timezone: string) =>
  appError('VALIDATION_FAILED.timezone', { timezone }, [
    { path: '/timezone', message: `Unknown time zone "${timezone}"; ${TIME_ZONE_HINT}` },
  ]);
