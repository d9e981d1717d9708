import { IANAZone } from 'luxon';

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
