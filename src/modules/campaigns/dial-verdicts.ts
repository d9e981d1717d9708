/**
 * The dialer's verdict on each claimed contact: dial now, skip for good (dnc, no_consent,
 * unknown_timezone, or windows that never overlap), or wait (outside_window, frequency_cap) until
 * a computed moment. Pure: every fact (lists, consents, call times, settings, the instant) is an
 * argument, read for the whole claim at once by the dialer.
 */
import { DateTime } from 'luxon';
import { timeZonesOfNumber } from '../../platform/phone-time-zones.ts';
import type * as compliance from '../compliance/service.ts';
import type { CallingRule, DecisionFacts } from '../compliance/schemas.ts';
import { isInsideCallWindow, nextWindowOpening, SEARCH_DAYS_WITH_HOLIDAYS, windowOf, type CallWindow } from './call-window.ts';
import type { CampaignRow, DueContact } from './repo.ts';

const HOUR_MS = 3_600_000;
/** How far ahead a contact's windows are searched for a common minute (holidays included); none within: they never overlap. */
const HORIZON_MS = SEARCH_DAYS_WITH_HOLIDAYS * 24 * HOUR_MS;
/** The call counts every record shows, whatever caps apply: the last day and the last week. */
export const COUNTED_HOURS = [24, 168];
/** How soon a contact on another call of the tenant's is looked at again: soon after that call ends. */
const IN_CALL_RECHECK_MS = 10_000;

export type Verdict =
  | { verdict: 'dial'; reason: null; facts: DecisionFacts }
  | { verdict: 'skip'; reason: 'dnc' | 'no_consent' | 'unknown_timezone' | 'outside_window'; facts: DecisionFacts }
  | { verdict: 'wait'; reason: 'outside_window' | 'frequency_cap' | 'in_call'; until: Date; facts: DecisionFacts };

export interface ClaimFacts {
  campaign: CampaignRow;
  settings: compliance.DialSettings;
  barred: Set<string>;
  consented: Set<string>;
  /** When each number was called within the longest cap period. */
  callTimes: Map<string, Date[]>;
  /** The numbers with a call of the tenant's not yet ended (from another campaign, or a test call). */
  onCall: Set<string>;
  rulesFor: (phoneNumber: string) => CallingRule[];
  now: Date;
}

/** Each constraint is a set of windows, any one of which allows the call; a call needs every constraint to allow it. */
type Constraint = CallWindow[];

const allows = (constraint: Constraint, at: Date) => constraint.some((window) => isInsideCallWindow(at, window));

function nextOpening(constraint: Constraint, at: Date): Date | null {
  const openings = constraint.map((window) => nextWindowOpening(at, window)).filter((date): date is Date => date !== null);
  return openings.length === 0 ? null : new Date(Math.min(...openings.map(Number)));
}

/** The first instant from `from` at which every constraint allows a call, or null within the horizon. */
export function firstCommonOpening(constraints: Constraint[], from: Date): Date | null {
  let at = from;
  while (at.getTime() - from.getTime() <= HORIZON_MS) {
    if (constraints.every((constraint) => allows(constraint, at))) return at;
    // Moves to the latest of the next openings: no earlier instant can satisfy all.
    let latest = at;
    for (const constraint of constraints) {
      const opening = nextOpening(constraint, at);
      if (!opening) return null;
      if (opening > latest) latest = opening;
    }
    at = latest;
  }
  return null;
}

/** The verdicts of a claim, in order: calls this claim dials count toward the caps of the contacts after them. */
export function decide(contacts: DueContact[], facts: ClaimFacts): Verdict[] {
  const dialledNow = new Map<string, number>();
  // Contacts of one claim share zones and rules (one area code, one country): each common opening is searched once.
  const openings = new Map<string, Date | null>();
  const opening = (constraints: Constraint[], from: Date) => {
    const key = `${from.getTime()}|${JSON.stringify(constraints)}`;
    if (!openings.has(key)) openings.set(key, firstCommonOpening(constraints, from));
    return openings.get(key)!;
  };
  return contacts.map((contact) => {
    const verdict = decideOne(contact, facts, dialledNow.get(contact.phone_number) ?? 0, opening);
    if (verdict.verdict === 'dial') dialledNow.set(contact.phone_number, (dialledNow.get(contact.phone_number) ?? 0) + 1);
    return verdict;
  });
}

function decideOne(contact: DueContact, claim: ClaimFacts, alreadyThisClaim: number, commonOpening: typeof firstCommonOpening): Verdict {
  const { campaign, settings, now } = claim;
  const phone = contact.phone_number;
  const rules = campaign.calling_rules ? claim.rulesFor(phone) : [];
  const contactLocal = campaign.window_time_zone === 'CONTACT' || rules.some((rule) => rule.windows);
  const contactZones = contact.timezone ? [contact.timezone] : timeZonesOfNumber(phone);
  const zones = contactLocal ? contactZones : [campaign.timezone];
  const times = (claim.callTimes.get(phone) ?? []).map(Number);
  const countWithin = (hours: number) => times.filter((ms) => ms > now.getTime() - hours * HOUR_MS).length + alreadyThisClaim;
  const needsConsent = campaign.require_consent || rules.some((rule) => rule.requiresConsent);
  const facts: DecisionFacts = {
    timeZones: zones,
    timeZoneSource: !contactLocal ? 'campaign' : contact.timezone ? 'contact' : zones.length ? 'number' : 'unknown',
    localTimes: zones.map((zone) => DateTime.fromJSDate(now, { zone }).toISO({ suppressMilliseconds: true }) ?? ''),
    rules: rules.map((rule) => rule.id),
    doNotCall: claim.barred.has(phone),
    consent: !needsConsent ? 'not_required' : claim.consented.has(phone) ? 'valid' : 'none',
    callCounts: Object.fromEntries(COUNTED_HOURS.map((hours) => [String(hours), countWithin(hours)])),
    resumesAt: null,
  };
  if (facts.doNotCall) return { verdict: 'skip', reason: 'dnc', facts };
  if (facts.consent === 'none') return { verdict: 'skip', reason: 'no_consent', facts };
  // Fail closed: a local time is needed and no zone is known.
  if (zones.length === 0) return { verdict: 'skip', reason: 'unknown_timezone', facts };

  const own = windowOf(campaign);
  const constraints: Constraint[] = [
    // The campaign's window in the zone it is read in; in each of the contact's zones when several are possible.
    ...zones.map((timezone) => [{ ...own, timezone }]),
    ...rules.flatMap((rule) =>
      rule.windows ? zones.map((timezone) => rule.windows!.map((window) => ({ ...window, timezone, holidays: rule.holidays }))) : [],
    ),
  ];
  const caps = [
    ...(settings.maxCallsPerDay ? [{ count: settings.maxCallsPerDay, hours: 24 }] : []),
    ...(settings.maxCallsPerWeek ? [{ count: settings.maxCallsPerWeek, hours: 168 }] : []),
    ...rules.flatMap((rule) => rule.maxCalls ?? []),
  ];
  // A cap over its count frees up when enough of the calls in its period grow older than the period.
  let capFreesAt = now.getTime();
  const sorted = [...times].sort((a, b) => a - b);
  for (const cap of caps) {
    const inPeriod = sorted.filter((ms) => ms > now.getTime() - cap.hours * HOUR_MS);
    const over = inPeriod.length + alreadyThisClaim - cap.count;
    if (over >= 0)
      capFreesAt = Math.max(capFreesAt, (inPeriod[Math.min(over, inPeriod.length - 1)] ?? now.getTime()) + cap.hours * HOUR_MS);
  }
  const capped = capFreesAt > now.getTime();
  const opening = commonOpening(constraints, new Date(capFreesAt));
  if (!opening) return { verdict: 'skip', reason: 'outside_window', facts };
  if (!capped && opening.getTime() === now.getTime()) {
    // Free to call, but on a call with the tenant already (or dialled earlier in this claim): never
    // two calls to one person at once.
    if (claim.onCall.has(phone) || alreadyThisClaim > 0) {
      const until = new Date(now.getTime() + IN_CALL_RECHECK_MS);
      return { verdict: 'wait', reason: 'in_call', until, facts: { ...facts, resumesAt: until.toISOString() } };
    }
    return { verdict: 'dial', reason: null, facts };
  }
  const waiting = { ...facts, resumesAt: opening.toISOString() };
  const inWindowNow = constraints.every((constraint) => allows(constraint, now));
  return { verdict: 'wait', reason: inWindowNow ? 'frequency_cap' : 'outside_window', until: opening, facts: waiting };
}
