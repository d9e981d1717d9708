/**
 * The countries the API accepts as a default country for phone numbers: those with a numbering
 * plan in libphonenumber, which the service reads numbers with. A test holds this list equal to
 * libphonenumber's own (the dashboard does not bundle its 22 kB of metadata for a list of codes).
 * Neither ISO's withdrawn codes (DD, FX, ZR…), which browsers still name, nor groupings are in it.
 */
const NUMBERING_PLAN_COUNTRIES =
  'AC AD AE AF AG AI AL AM AO AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GT GU GW GY HK HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TA TC TD TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG US UY UZ VA VC VE VG VI VN VU WF WS XK YE YT ZA ZM ZW';

export const numberingPlanCountries = (): string[] => NUMBERING_PLAN_COUNTRIES.split(' ');

let options: [string, string][] | undefined;

/** Countries by name ("Germany (DE)"), sorted, in the browser's English names. */
export function countryOptions(): [string, string][] {
  if (options) return options;
  const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
  const named = numberingPlanCountries().map((code): [string, string] => [code, `${names.of(code) ?? code} (${code})`]);
  return (options = named.sort((a, b) => a[1].localeCompare(b[1])));
}
