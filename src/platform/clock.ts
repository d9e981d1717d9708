/** The only source of "now": services read it from their context so tests can move time. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set and advance by hand. */
export function manualClock(start: Date | string): Clock & { set(to: Date | string): void; advance(ms: number): void } {
  let current = new Date(start);
  return {
    now: () => new Date(current),
    set: (to) => {
      current = new Date(to);
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms);
    },
  };
}

export const addSeconds = (at: Date, seconds: number): Date => new Date(at.getTime() + seconds * 1000);

/** An optional instant as the API shows it: ISO-8601 UTC, or null. */
export const isoOrNull = (value: Date | null): string | null => (value ? value.toISOString() : null);
