/**
 * A campaign's call window: when, in the campaign's own time zone, a contact may be dialled.
 *
 * A call is allowed when the campaign-local time of day is in [start, end) — start inclusive, end exclusive — on one of `days`
 * (1 = Monday … 7 = Sunday, luxon's weekday numbering). The local time is always read from the instant converted to the zone, so
 * daylight saving is included:
 * - spring forward: a local time that does not exist that day is never "seen"; a window whose start falls in the gap opens at the
 *   first instant after the gap (e.g. 02:30 in America/New_York on 2026-03-08 opens at 03:00 EDT = 07:00Z);
 * - fall back: local times in the repeated hour occur twice; a window opens at the FIRST occurrence of its start, and an instant in the
 *   second occurrence is inside any window that contains its local time.
 *
 * Pure functions: the current instant is always an argument.
 */
import { DateTime, IANAZone } from 'luxon';
import { isPublicHoliday, type HolidayCalendar } from '../../platform/holidays.ts';
import { isValidTimeZone } from '../../platform/time-zones.ts';

export { isValidTimeZone };

export interface CallWindow {
  timezone: string;
  start: string;
  end: string;
  days: number[];
  /** Days the window stays shut, in its zone's calendar (a calling rule's holidays). */
  holidays?: HolidayCalendar;
}

const HH_MM = /^([01]\d|2[0-3]):[0-5]\d$/;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;
/**
 * How far ahead nextWindowOpening looks: any non-empty set of days opens within a week, plus slack for a window lost to a DST gap;
 * with holidays, a second week (a window open only on Mondays, and this Monday a holiday).
 */
export const SEARCH_DAYS = 8;
export const SEARCH_DAYS_WITH_HOLIDAYS = 15;
/** Offset transitions are found by sampling the zone's offset at this step; no zone changes its offset twice within a day. */
const TRANSITION_SAMPLE_MS = DAY_MS;

export function isValidHhMm(value: string): boolean {
  return typeof value === 'string' && HH_MM.test(value);
}

/** "09:30" -> 570. Throws RangeError on anything that is not HH:mm. */
export function minutesOfDay(hhmm: string): number {
  if (!isValidHhMm(hhmm)) throw new RangeError(`Not an HH:mm time: "${hhmm}"`);
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
}

/** The window with its bounds in milliseconds of the local day; throws RangeError on a window the spec does not allow. */
interface CheckedWindow {
  zone: IANAZone;
  startMs: number;
  endMs: number;
  days: ReadonlySet<number>;
  holidays: HolidayCalendar | undefined;
}

function checkWindow(window: CallWindow): CheckedWindow {
  if (!isValidTimeZone(window.timezone)) throw new RangeError(`Unknown time zone "${window.timezone}"`);
  const start = minutesOfDay(window.start);
  const end = minutesOfDay(window.end);
  if (start >= end) throw new RangeError(`Call window start (${window.start}) must be before its end (${window.end})`);
  for (const day of window.days) {
    if (!Number.isInteger(day) || day < 1 || day > 7) throw new RangeError(`Call day ${day} is not 1 (Monday) … 7 (Sunday)`);
  }
  return {
    zone: IANAZone.create(window.timezone),
    startMs: start * MINUTE_MS,
    endMs: end * MINUTE_MS,
    days: new Set(window.days),
    holidays: window.holidays,
  };
}

function checkInstant(at: Date, name: string): number {
  const ms = at instanceof Date ? at.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) throw new RangeError(`${name} is not a valid Date`);
  return ms;
}

function insideAt(ms: number, w: CheckedWindow): boolean {
  const local = DateTime.fromMillis(ms, { zone: w.zone });
  if (!w.days.has(local.weekday)) return false;
  const msOfDay = ((local.hour * 60 + local.minute) * 60 + local.second) * 1000 + local.millisecond;
  if (msOfDay < w.startMs || msOfDay >= w.endMs) return false;
  return !w.holidays || !isPublicHoliday(w.holidays, local.year, local.month, local.day);
}

export function isInsideCallWindow(at: Date, window: CallWindow): boolean {
  return insideAt(checkInstant(at, 'at'), checkWindow(window));
}

/** Offset of the zone at an instant, in milliseconds (luxon gives minutes). */
const offsetMs = (zone: IANAZone, ms: number) => zone.offset(ms) * MINUTE_MS;

/**
 * Every instant whose local wall-clock reading is `wallMs` (a local date-time written as if it were UTC): none in a spring-forward gap,
 * two in a fall-back overlap, one otherwise. Sorted, earliest first.
 */
function instantsOfWallTime(zone: IANAZone, wallMs: number): number[] {
  const offsets = new Set([offsetMs(zone, wallMs - DAY_MS), offsetMs(zone, wallMs + DAY_MS)]);
  const found: number[] = [];
  for (const offset of offsets) {
    const candidate = wallMs - offset;
    if (offsetMs(zone, candidate) === offset) found.push(candidate);
  }
  return found.sort((a, b) => a - b);
}

/** The instants in (from, to] at which the zone's offset changes (the first millisecond with the new offset). */
function offsetTransitions(zone: IANAZone, from: number, to: number): number[] {
  const found: number[] = [];
  let previous = from;
  let previousOffset = offsetMs(zone, previous);
  while (previous < to) {
    const next = Math.min(previous + TRANSITION_SAMPLE_MS, to);
    const nextOffset = offsetMs(zone, next);
    if (nextOffset !== previousOffset) {
      let lo = previous; // has previousOffset
      let hi = next; // has nextOffset
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        if (offsetMs(zone, mid) === previousOffset) lo = mid;
        else hi = mid;
      }
      found.push(hi);
    }
    previous = next;
    previousOffset = nextOffset;
  }
  return found;
}

/**
 * `at` (a copy) when it is inside the window, else the next instant the window opens; null when days is empty or the window does not
 * open within 8 days (a window entirely inside a DST gap on its only day, say), 15 with holidays.
 *
 * The window can only be entered where the local time of day reaches `start` (an occurrence of the start wall-clock time on some day)
 * or where the zone's offset jumps (a DST transition: this is how a start inside a spring-forward gap opens at the end of the gap);
 * the answer is the earliest such instant after `at` that is inside the window.
 */
export function nextWindowOpening(at: Date, window: CallWindow): Date | null {
  const atMs = checkInstant(at, 'at');
  const w = checkWindow(window);
  if (w.days.size === 0) return null;
  if (insideAt(atMs, w)) return new Date(atMs);
  const searchDays = w.holidays ? SEARCH_DAYS_WITH_HOLIDAYS : SEARCH_DAYS;
  const horizon = atMs + searchDays * DAY_MS;

  // Transitions a little beyond both ends too: with none at all (most of the year) the offset is constant and each start time
  // occurs exactly once, at its wall-clock time minus that offset.
  const transitions = offsetTransitions(w.zone, atMs - 2 * DAY_MS, horizon + 2 * DAY_MS);
  const constantOffset = transitions.length === 0 ? offsetMs(w.zone, atMs) : null;
  const occurrences = (wallMs: number) => (constantOffset === null ? instantsOfWallTime(w.zone, wallMs) : [wallMs - constantOffset]);
  const candidates = [...transitions];
  const local = DateTime.fromMillis(atMs, { zone: w.zone });
  // Local calendar days as wall-clock midnights written as if UTC, from the day before `at` (a fall-back can repeat yesterday's
  // hours) to past the horizon.
  for (let d = -1; d <= searchDays + 1; d += 1) {
    const wallMidnight = Date.UTC(local.year, local.month - 1, local.day + d);
    const weekday = new Date(wallMidnight).getUTCDay() || 7; // JS 0 = Sunday -> luxon 7
    if (w.days.has(weekday)) candidates.push(...occurrences(wallMidnight + w.startMs));
  }
  const opening = candidates
    .filter((ms) => ms > atMs && ms <= horizon)
    .sort((a, b) => a - b)
    .find((ms) => insideAt(ms, w));
  return opening === undefined ? null : new Date(opening);
}

/** The earliest instant a retry may be dialled: nextWindowOpening(previousEndedAt + redialDelayMin minutes). */
export function nextAttemptAt(previousEndedAt: Date, redialDelayMin: number, window: CallWindow): Date | null {
  const endedMs = checkInstant(previousEndedAt, 'previousEndedAt');
  if (!Number.isFinite(redialDelayMin) || redialDelayMin < 0)
    throw new RangeError(`redialDelayMin must be a non-negative number, got ${redialDelayMin}`);
  return nextWindowOpening(new Date(endedMs + redialDelayMin * MINUTE_MS), window);
}

/** The first instant of the local calendar day after the one `at` falls on, in `timezone` (a day of a DST change included). */
export function startOfNextLocalDay(at: Date, timezone: string): Date {
  const local = DateTime.fromMillis(checkInstant(at, 'at'), { zone: timezone });
  return local.plus({ days: 1 }).startOf('day').toJSDate();
}

/** A campaign's own window, read in its own zone. */
export const windowOf = (campaign: {
  timezone: string;
  call_window_start: string;
  call_window_end: string;
  call_days: number[];
}): CallWindow => ({
  timezone: campaign.timezone,
  start: campaign.call_window_start,
  end: campaign.call_window_end,
  days: campaign.call_days,
});
