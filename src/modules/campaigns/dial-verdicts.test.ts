import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { timezones } from 'libphonenumber-geo-carrier';
import { describe, expect, it } from 'vitest';
import { timeZonesOfNumber } from '../../platform/phone-time-zones.ts';
import { isPublicHoliday, calendarProblem } from '../../platform/holidays.ts';
import { rulesForNumber, STATUTORY_RULES } from '../compliance/calling-rules.ts';
import type { DialSettings } from '../compliance/service.ts';
import { decide, type ClaimFacts } from './dial-verdicts.ts';
import type { CampaignRow, DueContact } from './repo.ts';

// The verdict on one claimed contact, at the edges: the minute a contact's window opens and closes,
// daylight-saving days, numbers spanning zones or none, caps and rules. 2026-11-23 is a Monday.
const HOUR = 3_600_000;
const EVERY_DAY = [1, 2, 3, 4, 5, 6, 7];

const campaign = (overrides: Partial<CampaignRow> = {}) =>
  ({
    id: 'c',
    timezone: 'UTC',
    call_window_start: '09:00',
    call_window_end: '18:00',
    call_days: EVERY_DAY,
    window_time_zone: 'CONTACT',
    calling_rules: false,
    require_consent: false,
    ...overrides,
  }) as CampaignRow;

const settings = (overrides: Partial<DialSettings> = {}): DialSettings => ({
  windowTimeZone: 'CAMPAIGN',
  callingRules: false,
  requireConsent: false,
  maxCallsPerDay: null,
  maxCallsPerWeek: null,
  customRules: [],
  ...overrides,
});

const contact = (phone: string, timezone: string | null = null): DueContact => ({
  contact_id: `id-${phone}`,
  phone_number: phone,
  name: null,
  metadata: {},
  attempts: 0,
  timezone,
  wait_reason: null,
  agent_version: null,
});

interface FactOptions {
  campaign?: Partial<CampaignRow>;
  settings?: Partial<DialSettings>;
  calls?: Date[];
  barred?: boolean;
  consented?: boolean;
  onCall?: boolean;
}

/** The facts of a claim at `iso` about one person's number. */
function factsAbout(iso: string, who: DueContact, options: FactOptions = {}): ClaimFacts {
  const dialSettings = settings(options.settings);
  return {
    campaign: campaign(options.campaign),
    settings: dialSettings,
    barred: new Set(options.barred ? [who.phone_number] : []),
    consented: new Set(options.consented ? [who.phone_number] : []),
    callTimes: new Map([[who.phone_number, options.calls ?? []]]),
    onCall: new Set(options.onCall ? [who.phone_number] : []),
    rulesFor: (phone) => rulesForNumber(phone, dialSettings.customRules),
    now: new Date(iso),
  };
}

function verdictAt(iso: string, who: DueContact, options: FactOptions = {}) {
  const [verdict] = decide([who], factsAbout(iso, who, options));
  return verdict!;
}

const summary = (verdict: ReturnType<typeof verdictAt>) => [
  verdict.verdict,
  verdict.reason,
  verdict.verdict === 'wait' ? verdict.until.toISOString() : null,
];

const MIAMI = '+13055550100'; // Florida, America/New_York
const IDAHO = '+12085550100'; // America/Boise and America/Los_Angeles
const NO_ZONE = '+80012345678'; // international freephone: no zone

describe("a contact's own call window", () => {
  it('opens at the first minute and closes at the end minute, in the contact’s zone', () => {
    expect(summary(verdictAt('2026-11-23T13:59:59.999Z', contact(MIAMI)))).toEqual(['wait', 'outside_window', '2026-11-23T14:00:00.000Z']);
    expect(summary(verdictAt('2026-11-23T14:00:00.000Z', contact(MIAMI)))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-23T22:59:59.999Z', contact(MIAMI)))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-23T23:00:00.000Z', contact(MIAMI)))).toEqual(['wait', 'outside_window', '2026-11-24T14:00:00.000Z']);
    // The contact's own zone wins over its number's.
    expect(summary(verdictAt('2026-11-23T14:00:00.000Z', contact(MIAMI, 'Asia/Tokyo')))).toEqual([
      'wait',
      'outside_window',
      '2026-11-24T00:00:00.000Z',
    ]);
  });

  it('follows New York across spring-forward and fall-back', () => {
    // 2026-03-08: 09:00 EDT is 13:00Z; a start inside the gap (02:30) opens when the gap ends, 03:00 EDT = 07:00Z.
    expect(summary(verdictAt('2026-03-08T12:59:00.000Z', contact(MIAMI)))).toEqual(['wait', 'outside_window', '2026-03-08T13:00:00.000Z']);
    expect(summary(verdictAt('2026-03-08T13:00:00.000Z', contact(MIAMI)))).toEqual(['dial', null, null]);
    expect(
      summary(
        verdictAt('2026-03-08T06:59:00.000Z', contact(MIAMI), { campaign: { call_window_start: '02:30', call_window_end: '05:00' } }),
      ),
    ).toEqual(['wait', 'outside_window', '2026-03-08T07:00:00.000Z']);
    // 2026-11-01: back to EST; 09:00 is 14:00Z (13:00Z the day before), 18:00 is 23:00Z.
    expect(summary(verdictAt('2026-10-31T13:00:00.000Z', contact(MIAMI)))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-01T13:30:00.000Z', contact(MIAMI)))).toEqual(['wait', 'outside_window', '2026-11-01T14:00:00.000Z']);
    expect(summary(verdictAt('2026-11-01T22:59:00.000Z', contact(MIAMI)))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-01T23:00:00.000Z', contact(MIAMI)))).toEqual(['wait', 'outside_window', '2026-11-02T14:00:00.000Z']);
  });

  it('needs the window open in every zone a number may be in', () => {
    expect(timeZonesOfNumber(IDAHO)).toEqual(['America/Boise', 'America/Los_Angeles']);
    // 16:30Z is 09:30 in Boise but 08:30 in Los Angeles; 01:00Z is 18:00 in Boise though 17:00 in Los Angeles.
    const at = (iso: string) => summary(verdictAt(iso, contact(IDAHO)));
    expect(at('2026-11-23T16:30:00.000Z')).toEqual(['wait', 'outside_window', '2026-11-23T17:00:00.000Z']);
    expect(at('2026-11-23T17:00:00.000Z')).toEqual(['dial', null, null]);
    expect(at('2026-11-24T00:59:00.000Z')).toEqual(['dial', null, null]);
    expect(at('2026-11-24T01:00:00.000Z')).toEqual(['wait', 'outside_window', '2026-11-24T17:00:00.000Z']);
    const verdict = verdictAt('2026-11-23T17:00:00.000Z', contact(IDAHO));
    expect(verdict.facts).toMatchObject({
      timeZones: ['America/Boise', 'America/Los_Angeles'],
      timeZoneSource: 'number',
      localTimes: ['2026-11-23T10:00:00-07:00', '2026-11-23T09:00:00-08:00'],
    });
  });

  it('fails closed when no zone is known, and only then', () => {
    expect(summary(verdictAt('2026-11-23T14:00:00.000Z', contact(NO_ZONE)))).toEqual(['skip', 'unknown_timezone', null]);
    // Its own zone fixes it; read in the campaign's zone, the contact's is not needed.
    expect(summary(verdictAt('2026-11-23T14:00:00.000Z', contact(NO_ZONE, 'America/New_York')))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-23T14:00:00.000Z', contact(NO_ZONE), { campaign: { window_time_zone: 'CAMPAIGN' } }))).toEqual([
      'dial',
      null,
      null,
    ]);
    // With calling rules on, a US number's zone is needed even in the campaign's zone.
    expect(
      summary(verdictAt('2026-11-23T14:00:00.000Z', contact(NO_ZONE), { campaign: { window_time_zone: 'CAMPAIGN', calling_rules: true } })),
    ).toEqual(['dial', null, null]);
  });

  it('derives zones as libphonenumber-geo-carrier does', async () => {
    for (const phone of [MIAMI, IDAHO, NO_ZONE, '+442079460000', '+4930123456', '+61212345678', '+18005550100', '+33612345678']) {
      const theirs = (await timezones(parsePhoneNumberFromString(phone))) ?? [];
      expect(timeZonesOfNumber(phone), phone).toEqual(theirs.filter((zone) => zone !== 'Etc/Unknown'));
    }
  });
});

describe('calling rules, caps, consent and the do-not-call list', () => {
  const rulesOn = { campaign: { call_window_start: '07:00', call_window_end: '22:00', calling_rules: true } };

  it('applies Florida’s 8 p.m. close and its 3 calls in 24 hours: the 3rd is dialled, the 4th waits', () => {
    expect(summary(verdictAt('2026-11-24T00:59:00.000Z', contact(MIAMI), rulesOn))).toEqual(['dial', null, null]);
    expect(summary(verdictAt('2026-11-24T01:00:00.000Z', contact(MIAMI), rulesOn))).toEqual([
      'wait',
      'outside_window',
      '2026-11-24T13:00:00.000Z',
    ]);
    const now = '2026-11-23T18:00:00.000Z';
    const twoCalls = [new Date(Date.parse(now) - 5 * HOUR), new Date(Date.parse(now) - 2 * HOUR)];
    const third = verdictAt(now, contact(MIAMI), { ...rulesOn, calls: twoCalls });
    expect(summary(third)).toEqual(['dial', null, null]);
    expect(third.facts).toMatchObject({ rules: ['us-tcpa-hours', 'us-fl-telephone-solicitation'], callCounts: { '24': 2 } });
    const fourth = verdictAt(now, contact(MIAMI), { ...rulesOn, calls: [...twoCalls, new Date(now)] });
    // Free again 24 hours after the oldest of the three, inside the Florida hours.
    expect(summary(fourth)).toEqual(['wait', 'frequency_cap', '2026-11-24T13:00:00.000Z']);
    expect(fourth.facts.callCounts['24']).toBe(3);
    // A number in New York has no such cap.
    expect(summary(verdictAt(now, contact('+12125551000'), { ...rulesOn, calls: [...twoCalls, new Date(now)] }))).toEqual([
      'dial',
      null,
      null,
    ]);
    // Two of the same number in one claim: the second counts the first.
    const claim = decide([contact(MIAMI), contact(MIAMI)], factsAbout(now, contact(MIAMI), { ...rulesOn, calls: twoCalls }));
    expect(claim.map((verdict) => verdict.verdict)).toEqual(['dial', 'wait']);
  });

  it("applies the tenant's caps to every number, and its own rules with the statutory ones", () => {
    const now = '2026-11-23T18:00:00.000Z';
    const calls = [new Date(Date.parse(now) - 30 * HOUR), new Date(Date.parse(now) - HOUR)];
    expect(summary(verdictAt(now, contact('+12125551000'), { calls, settings: { maxCallsPerWeek: 2 } }))).toEqual([
      'wait',
      'frequency_cap',
      '2026-11-29T14:00:00.000Z',
    ]);
    const ownRule = {
      id: 'no-lunch',
      region: 'US',
      name: 'No calls over lunch',
      source: 'House policy',
      windows: [{ days: EVERY_DAY, start: '13:00', end: '23:00' }],
    };
    // 17:00Z is noon in New York: inside the campaign's and the federal hours, not the tenant's.
    const withOwnRule = { ...rulesOn, settings: { customRules: [ownRule] } };
    expect(summary(verdictAt('2026-11-23T17:00:00.000Z', contact('+12125551000'), withOwnRule))).toEqual([
      'wait',
      'outside_window',
      '2026-11-23T18:00:00.000Z',
    ]);
    expect(verdictAt('2026-11-23T18:00:00.000Z', contact('+12125551000'), withOwnRule).facts.rules).toEqual(['us-tcpa-hours', 'no-lunch']);
  });

  it('puts off a person on another call of the tenant for ten seconds, and only when they could be called now', () => {
    const now = '2026-11-23T15:00:00.000Z';
    const busy = verdictAt(now, contact('+12125551000'), { onCall: true });
    expect(summary(busy)).toEqual(['wait', 'in_call', '2026-11-23T15:00:10.000Z']);
    expect(busy.facts.resumesAt).toBe('2026-11-23T15:00:10.000Z');
    expect(summary(verdictAt(now, contact('+12125551000')))).toEqual(['dial', null, null]);
    // Outside the window the window is the reason (and the later moment); a listed number stays skipped.
    expect(summary(verdictAt('2026-11-23T03:00:00.000Z', contact('+12125551000'), { onCall: true }))[1]).toBe('outside_window');
    expect(summary(verdictAt(now, contact('+12125551000'), { onCall: true, barred: true }))[1]).toBe('dnc');
    // The same person twice in one claim, no cap: the first is dialled, the second waits for that call.
    const twice = decide([contact('+12125551000'), contact('+12125551000')], factsAbout(now, contact('+12125551000')));
    expect(twice.map((verdict) => [verdict.verdict, verdict.reason])).toEqual([
      ['dial', null],
      ['wait', 'in_call'],
    ]);
  });

  it('skips a listed number and one without the consent a campaign or a rule needs', () => {
    const at = '2026-11-23T15:00:00.000Z';
    expect(summary(verdictAt(at, contact(MIAMI), { barred: true }))).toEqual(['skip', 'dnc', null]);
    expect(summary(verdictAt(at, contact(MIAMI), { campaign: { require_consent: true } }))).toEqual(['skip', 'no_consent', null]);
    expect(summary(verdictAt(at, contact(MIAMI), { campaign: { require_consent: true }, consented: true }))).toEqual(['dial', null, null]);
    // Germany needs consent for an advertising call: with rules on, a German number without one is skipped.
    expect(summary(verdictAt('2026-11-23T10:00:00.000Z', contact('+4915112345678'), { campaign: { calling_rules: true } }))).toEqual([
      'skip',
      'no_consent',
      null,
    ]);
  });

  it('skips for good a number whose windows never overlap (a toll-free number ringing from Guam to Hawaii)', () => {
    expect(summary(verdictAt('2026-11-23T18:00:00.000Z', contact('+18005550100'), { campaign: { calling_rules: true } }))).toEqual([
      'skip',
      'outside_window',
      null,
    ]);
  });
});

describe('holidays and days of rest', () => {
  const rulesOn = { campaign: { call_window_start: '07:00', call_window_end: '22:00', calling_rules: true } };
  const at = (iso: string, phone: string, options = rulesOn) => summary(verdictAt(iso, contact(phone), options));
  const NEW_ORLEANS = '+15045550100'; // Louisiana, America/Chicago
  const PARIS = '+33612345678'; // Europe/Paris

  it('every statutory calendar is known, and the days a statute adds are in it', () => {
    for (const rule of STATUTORY_RULES.filter((statutory) => statutory.holidays))
      expect(calendarProblem(rule.holidays!), rule.id).toBeNull();
    const louisiana = STATUTORY_RULES.find((rule) => rule.id === 'us-la-telephone-solicitation')!.holidays!;
    // January 8 (Battle of New Orleans) is not in the package's data; the rule adds it.
    expect(isPublicHoliday({ calendar: 'US-LA' }, 2027, 1, 8)).toBe(false);
    expect(isPublicHoliday(louisiana, 2027, 1, 8)).toBe(true);
    expect(isPublicHoliday(louisiana, 2027, 2, 9)).toBe(true); // Mardi Gras 2027
    expect(isPublicHoliday(louisiana, 2027, 2, 10)).toBe(false);
  });

  it('keeps Louisiana to 8 a.m. to 8 p.m., Monday to Saturday, and off its holidays, in its own calendar', () => {
    // Thursday 2026-12-24, 19:59 in Chicago: dialled; at 20:00 the next day is Christmas, so Saturday 08:00.
    expect(at('2026-12-25T01:59:00.000Z', NEW_ORLEANS)).toEqual(['dial', null, null]);
    expect(at('2026-12-25T02:00:00.000Z', NEW_ORLEANS)).toEqual(['wait', 'outside_window', '2026-12-26T14:00:00.000Z']);
    // Saturday 2026-11-28 at 20:00: Sunday is barred, so Monday 08:00.
    expect(at('2026-11-29T02:00:00.000Z', NEW_ORLEANS)).toEqual(['wait', 'outside_window', '2026-11-30T14:00:00.000Z']);
    // Mardi Gras 2027 (Tuesday 9 February) and January 8 (a Friday): no call that day, the first minute of the next.
    expect(at('2027-02-09T16:00:00.000Z', NEW_ORLEANS)).toEqual(['wait', 'outside_window', '2027-02-10T14:00:00.000Z']);
    expect(at('2027-01-08T16:00:00.000Z', NEW_ORLEANS)).toEqual(['wait', 'outside_window', '2027-01-09T14:00:00.000Z']);
    expect(at('2027-01-09T14:00:00.000Z', NEW_ORLEANS)).toEqual(['dial', null, null]);
    expect(verdictAt('2027-01-09T14:00:00.000Z', contact(NEW_ORLEANS), rulesOn).facts.rules).toEqual([
      'us-tcpa-hours',
      'us-la-telephone-solicitation',
    ]);
    // Without the calling rules the campaign's own window is all there is.
    expect(at('2027-02-09T16:00:00.000Z', NEW_ORLEANS, { campaign: { ...rulesOn.campaign, calling_rules: false } })).toEqual([
      'dial',
      null,
      null,
    ]);
  });

  it('bars French public holidays, and looks a second week ahead when a holiday takes the only day', () => {
    // Tuesday 14 July 2026, 10:00 in Paris: the national holiday; Wednesday 10:00 (08:00Z).
    expect(at('2026-07-14T08:00:00.000Z', PARIS)).toEqual(['wait', 'outside_window', '2026-07-15T08:00:00.000Z']);
    expect(at('2026-07-15T08:00:00.000Z', PARIS)).toEqual(['dial', null, null]);
    // A campaign calling on Mondays only: Easter Monday (6 April 2026) is barred, so the Monday after, not "never".
    const mondays = { campaign: { ...rulesOn.campaign, call_days: [1] } };
    expect(at('2026-03-31T12:00:00.000Z', PARIS, mondays)).toEqual(['wait', 'outside_window', '2026-04-13T08:00:00.000Z']);
  });

  it("moves Utah's weekend holidays to the Friday before or the Monday after, as its statute does", () => {
    const SALT_LAKE_CITY = '+18015550100'; // Utah, America/Denver
    // Pioneer Day, Saturday 24 July 2027: Friday the 23rd is barred too (noon in Denver); Sunday is barred, so Monday 08:00.
    expect(at('2027-07-23T18:00:00.000Z', SALT_LAKE_CITY)).toEqual(['wait', 'outside_window', '2027-07-26T14:00:00.000Z']);
    expect(at('2027-07-22T18:00:00.000Z', SALT_LAKE_CITY)).toEqual(['dial', null, null]);
    // Pioneer Day, Sunday 24 July 2022: Monday the 25th is barred; Tuesday 08:00.
    expect(at('2022-07-25T18:00:00.000Z', SALT_LAKE_CITY)).toEqual(['wait', 'outside_window', '2022-07-26T14:00:00.000Z']);
    // Veterans Day, Saturday 11 November 2023: Friday the 10th is barred (the package's data moves neither).
    expect(isPublicHoliday({ calendar: 'US-UT' }, 2023, 11, 10)).toBe(false);
    expect(at('2023-11-10T19:00:00.000Z', SALT_LAKE_CITY)).toEqual(['wait', 'outside_window', '2023-11-13T15:00:00.000Z']);
    // A holiday observed in the year before its own: Saturday 1 January 2022 → Friday 31 December 2021.
    expect(isPublicHoliday({ calendar: 'FR' }, 2021, 12, 31)).toBe(false);
    expect(isPublicHoliday({ calendar: 'FR', weekendObserved: true }, 2021, 12, 31)).toBe(true);
    expect(isPublicHoliday({ calendar: 'FR', weekendObserved: true }, 2021, 12, 30)).toBe(false);
  });

  it("applies a tenant's own holidays with its windows", () => {
    const ownRule = {
      id: 'office-days',
      region: 'US',
      name: 'Not on our office holidays',
      source: 'House policy',
      windows: [{ days: EVERY_DAY, start: '00:00', end: '23:59' }],
      holidays: { calendar: 'US-NY', extraDays: ['12-24'] },
    };
    const options = { campaign: rulesOn.campaign, settings: { customRules: [ownRule] } };
    // Thursday 2026-12-24, noon in New York: the tenant's extra day; Saturday the 26th at the campaign's 07:00 (Christmas between).
    expect(at('2026-12-24T17:00:00.000Z', '+12125551000', options)).toEqual(['wait', 'outside_window', '2026-12-26T13:00:00.000Z']);
    expect(at('2026-12-23T17:00:00.000Z', '+12125551000', options)).toEqual(['dial', null, null]);
  });
});
