/**
 * Public-holiday calendars for calling rules that bar holidays: the public holidays of a country
 * or a state from the date-holidays package's data (the observed weekday of a holiday that falls
 * on a weekend included), plus days a statute names that the package's data lacks, written in the
 * package's own rule syntax ("01-08", "easter -2", "07-24 and if sunday then next monday").
 *
 * A year's days are worked out once per calendar and kept: the dialer asks for every contact. The
 * package reads every country's rules when it is loaded (about 0.1 s), so it is loaded on the first
 * question, not when the service starts: a process that never meets a holiday rule never pays it.
 */
import { createRequire } from 'node:module';
import type HolidaysModule from 'date-holidays';

const require = createRequire(import.meta.url);
let loaded: typeof HolidaysModule | undefined;
const holidaysModule = (): typeof HolidaysModule => (loaded ??= require('date-holidays') as typeof HolidaysModule);

export interface HolidayCalendar {
  /** A country (ISO 3166-1, `FR`) or a country and one of its states (`US-LA`). */
  calendar: string;
  /** More days, in date-holidays' rule syntax (a tenant's rules: fixed days, "MM-DD", only). */
  extraDays?: string[];
  /**
   * A holiday on a Saturday is observed on the Friday before, one on a Sunday on the Monday after
   * (as Utah Code 63G-1-301 has it), for every holiday of the calendar: the package's data moves
   * only some of them.
   */
  weekendObserved?: boolean;
}

/** Why a calendar cannot be used, or null when it can. */
export function calendarProblem({ calendar, extraDays = [] }: HolidayCalendar): string | null {
  const Holidays = holidaysModule();
  const known = new Holidays();
  const [country, state, ...rest] = calendar.split('-');
  if (!country || rest.length > 0 || !(country in known.getCountries())) return `"${calendar}" is not a country with a holiday calendar.`;
  if (state && !(state in (known.getStates(country) ?? {}))) return `"${calendar}": ${country} has no state or region ${state}.`;
  const probe = new Holidays(country);
  const bad = extraDays.find((rule) => !probe.setHoliday(rule, { name: rule, type: 'public' }));
  return bad === undefined ? null : `"${bad}" is not a date rule (such as "01-08" or "easter -2").`;
}

const daysByYear = new Map<string, Map<number, Set<string>>>();

function daysOf({ calendar, extraDays = [], weekendObserved = false }: HolidayCalendar, year: number): Set<string> {
  const key = `${calendar}|${extraDays.join('|')}|${weekendObserved}`;
  let years = daysByYear.get(key);
  if (!years) daysByYear.set(key, (years = new Map()));
  let days = years.get(year);
  if (!days) {
    const [country, state] = calendar.split('-');
    const options = { types: ['public' as const] };
    const Holidays = holidaysModule();
    const holidays = state ? new Holidays(country!, state, options) : new Holidays(country!, options);
    for (const rule of extraDays) holidays.setHoliday(rule, { name: rule, type: 'public' });
    // `date` is the local calendar day, "YYYY-MM-DD hh:mm:ss".
    const dayOf = (holiday: { date: string }) => holiday.date.slice(0, 10);
    if (weekendObserved) {
      // A neighbouring year's holiday may be observed in this one (Saturday 1 January → 31 December).
      const all = [year - 1, year, year + 1].flatMap((y) => holidays.getHolidays(y).map(dayOf));
      days = new Set([...all, ...all.map(observedWeekday)].filter((day) => day.startsWith(`${year}-`)));
    } else days = new Set(holidays.getHolidays(year).map(dayOf));
    years.set(year, days);
  }
  return days;
}

const DAY_MS = 86_400_000;

/** The weekday on which a weekend day "YYYY-MM-DD" is observed: Friday for a Saturday, Monday for a Sunday. */
function observedWeekday(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  const shift = date.getUTCDay() === 6 ? -1 : date.getUTCDay() === 0 ? 1 : 0;
  return new Date(date.getTime() + shift * DAY_MS).toISOString().slice(0, 10);
}

/** Whether a local calendar day (year, month 1–12, day) is a public holiday of the calendar. */
export function isPublicHoliday(calendar: HolidayCalendar, year: number, month: number, day: number): boolean {
  return daysOf(calendar, year).has(`${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`);
}
