import { describe, expect, it } from 'vitest';
import {
  type CallWindow,
  isInsideCallWindow,
  isValidHhMm,
  isValidTimeZone,
  minutesOfDay,
  nextAttemptAt,
  nextWindowOpening,
} from './call-window.ts';

const ALL_DAYS = [1, 2, 3, 4, 5, 6, 7];
const WEEKDAYS = [1, 2, 3, 4, 5];
const at = (iso: string) => new Date(iso);
const win = (timezone: string, start: string, end: string, days: number[] = ALL_DAYS): CallWindow => ({ timezone, start, end, days });
const opening = (from: string, window: CallWindow) => nextWindowOpening(at(from), window)?.toISOString() ?? null;

const NEW_YORK = 'America/New_York';
const LONDON = 'Europe/London';
const KOLKATA = 'Asia/Kolkata';

describe('isValidTimeZone', () => {
  it.each([NEW_YORK, LONDON, KOLKATA, 'UTC'])('accepts the IANA zone %s', (zone) => {
    expect(isValidTimeZone(zone)).toBe(true);
  });

  it.each(['Mars/Olympus', 'America/Springfield', '', '+05:30'])('refuses %j', (zone) => {
    expect(isValidTimeZone(zone)).toBe(false);
  });
});

describe('isValidHhMm and minutesOfDay', () => {
  it.each([
    ['00:00', 0],
    ['09:30', 570],
    ['12:00', 720],
    ['23:59', 1439],
  ])('reads %s as %i minutes after midnight', (hhmm, minutes) => {
    expect(isValidHhMm(hhmm)).toBe(true);
    expect(minutesOfDay(hhmm)).toBe(minutes);
  });

  it.each(['24:00', '9:30', '09:60', '09:30:00', '0930', ' 09:30', '09:30 ', '', 'ab:cd'])('refuses %j as HH:mm', (value) => {
    expect(isValidHhMm(value)).toBe(false);
    expect(() => minutesOfDay(value)).toThrow(RangeError);
  });
});

describe('window validation', () => {
  it.each([
    ['an unknown time zone', win('Mars/Olympus', '09:00', '18:00')],
    ['a start that is not HH:mm', win(NEW_YORK, '9:00', '18:00')],
    ['an end that is not HH:mm', win(NEW_YORK, '09:00', '24:00')],
    ['a start equal to the end', win(NEW_YORK, '09:00', '09:00')],
    ['a start after the end (a window crossing midnight)', win(NEW_YORK, '22:00', '06:00')],
    ['a call day outside 1..7', win(NEW_YORK, '09:00', '18:00', [0, 1])],
  ])('refuses %s with a RangeError', (_label, window) => {
    expect(() => isInsideCallWindow(at('2026-11-23T15:00:00.000Z'), window)).toThrow(RangeError);
    expect(() => nextWindowOpening(at('2026-11-23T15:00:00.000Z'), window)).toThrow(RangeError);
  });

  it('refuses an invalid Date and a negative redial delay', () => {
    const window = win(NEW_YORK, '09:00', '18:00');
    expect(() => isInsideCallWindow(new Date('nope'), window)).toThrow(RangeError);
    expect(() => nextAttemptAt(at('2026-11-23T15:00:00.000Z'), -1, window)).toThrow(RangeError);
    expect(() => nextAttemptAt(at('2026-11-23T15:00:00.000Z'), Number.NaN, window)).toThrow(RangeError);
  });
});

describe('isInsideCallWindow: window bounds (start inclusive, end exclusive)', () => {
  // Monday 2026-11-23, America/New_York is on EST (UTC-5): 09:00 local = 14:00Z, 18:00 local = 23:00Z.
  const nineToSix = win(NEW_YORK, '09:00', '18:00', WEEKDAYS);

  it.each([
    ['accepts a call at exactly callWindowStart', '2026-11-23T14:00:00.000Z', true],
    ['refuses a call one millisecond before callWindowStart', '2026-11-23T13:59:59.999Z', false],
    ['accepts a call in the middle of the window', '2026-11-23T17:30:00.000Z', true],
    ['accepts a call one millisecond before callWindowEnd', '2026-11-23T22:59:59.999Z', true],
    ['refuses a call at exactly callWindowEnd', '2026-11-23T23:00:00.000Z', false],
    ['refuses a call after callWindowEnd', '2026-11-24T02:00:00.000Z', false],
  ])('%s', (_label, instant, inside) => {
    expect(isInsideCallWindow(at(instant), nineToSix)).toBe(inside);
  });
});

describe('isInsideCallWindow: callDays (1 = Monday … 7 = Sunday)', () => {
  it.each([
    ['days [1] is inside on Monday 2026-11-23', [1], '2026-11-23T12:00:00.000Z', true],
    ['days [1] is outside on Sunday 2026-11-22', [1], '2026-11-22T12:00:00.000Z', false],
    ['days [7] is inside on Sunday 2026-11-22', [7], '2026-11-22T12:00:00.000Z', true],
    ['days [7] is outside on Monday 2026-11-23', [7], '2026-11-23T12:00:00.000Z', false],
    ['days [6, 7] is inside on Saturday 2026-11-21', [6, 7], '2026-11-21T12:00:00.000Z', true],
    ['weekdays are outside on Saturday 2026-11-21', WEEKDAYS, '2026-11-21T12:00:00.000Z', false],
    ['empty days are never inside', [], '2026-11-23T12:00:00.000Z', false],
  ])('%s', (_label, days, instant, inside) => {
    expect(isInsideCallWindow(at(instant), win('UTC', '09:00', '18:00', days))).toBe(inside);
  });

  it('uses the campaign-local weekday, not the UTC one', () => {
    // 2026-11-22T19:00Z is still Sunday in UTC but already Monday 00:30 in Kolkata (UTC+05:30).
    const mondayNight = win(KOLKATA, '00:00', '06:00', [1]);
    expect(isInsideCallWindow(at('2026-11-22T19:00:00.000Z'), mondayNight)).toBe(true);
    expect(isInsideCallWindow(at('2026-11-22T18:29:59.999Z'), mondayNight)).toBe(false);
  });
});

describe('isInsideCallWindow: Asia/Kolkata (+05:30, no DST)', () => {
  // Monday 2026-11-23: 09:00 IST = 03:30Z, 18:00 IST = 12:30Z.
  const kolkata = win(KOLKATA, '09:00', '18:00', WEEKDAYS);

  it.each([
    ['2026-11-23T03:29:59.999Z', false],
    ['2026-11-23T03:30:00.000Z', true],
    ['2026-11-23T12:29:59.999Z', true],
    ['2026-11-23T12:30:00.000Z', false],
  ])('%s is inside: %s', (instant, inside) => {
    expect(isInsideCallWindow(at(instant), kolkata)).toBe(inside);
  });

  it('opens on Monday 09:00 IST after a Friday-evening refusal', () => {
    expect(opening('2026-11-27T12:30:00.000Z', kolkata)).toBe('2026-11-30T03:30:00.000Z');
  });
});

describe('nextWindowOpening', () => {
  const nineToSixWeekdays = win(NEW_YORK, '09:00', '18:00', WEEKDAYS);

  it('returns the instant itself when it is inside the window', () => {
    expect(opening('2026-11-23T15:00:00.000Z', nineToSixWeekdays)).toBe('2026-11-23T15:00:00.000Z');
    expect(opening('2026-11-23T14:00:00.000Z', nineToSixWeekdays)).toBe('2026-11-23T14:00:00.000Z');
  });

  it.each([
    ['before the window on an allowed day: opens later the same day', '2026-11-23T12:00:00.000Z', '2026-11-23T14:00:00.000Z'],
    ['at exactly callWindowEnd: opens the next allowed day', '2026-11-23T23:00:00.000Z', '2026-11-24T14:00:00.000Z'],
    ['Friday evening: opens on Monday morning', '2026-11-20T23:30:00.000Z', '2026-11-23T14:00:00.000Z'],
    ['Friday at exactly callWindowEnd: opens on Monday morning', '2026-11-20T23:00:00.000Z', '2026-11-23T14:00:00.000Z'],
    ['Saturday noon: opens on Monday morning', '2026-11-21T17:00:00.000Z', '2026-11-23T14:00:00.000Z'],
    ['Sunday one millisecond before Monday: opens on Monday morning', '2026-11-23T04:59:59.999Z', '2026-11-23T14:00:00.000Z'],
  ])('%s', (_label, from, expected) => {
    expect(opening(from, nineToSixWeekdays)).toBe(expected);
  });

  it('opens on the only allowed day of the next week', () => {
    // Sunday-only window, asked on Sunday after it closed: next Sunday.
    expect(opening('2026-11-22T23:00:00.000Z', win(NEW_YORK, '09:00', '18:00', [7]))).toBe('2026-11-29T14:00:00.000Z');
  });

  it('returns null when callDays is empty', () => {
    expect(nextWindowOpening(at('2026-11-23T15:00:00.000Z'), win(NEW_YORK, '09:00', '18:00', []))).toBeNull();
  });
});

describe('America/New_York across the 2026 DST changes', () => {
  describe('spring forward on Sunday 2026-03-08 (02:00 EST -> 03:00 EDT at 07:00Z)', () => {
    it('keeps 09:00 local as the opening on both sides of the change', () => {
      const nineToSix = win(NEW_YORK, '09:00', '18:00');
      // Saturday 18:30 EST -> Sunday 09:00 EDT (UTC-4).
      expect(opening('2026-03-07T23:30:00.000Z', nineToSix)).toBe('2026-03-08T13:00:00.000Z');
      expect(isInsideCallWindow(at('2026-03-07T14:00:00.000Z'), nineToSix)).toBe(true); // Saturday 09:00 EST
      expect(isInsideCallWindow(at('2026-03-08T13:00:00.000Z'), nineToSix)).toBe(true); // Sunday 09:00 EDT
      expect(isInsideCallWindow(at('2026-03-08T12:59:59.999Z'), nineToSix)).toBe(false);
      expect(isInsideCallWindow(at('2026-03-08T22:00:00.000Z'), nineToSix)).toBe(false); // Sunday 18:00 EDT
    });

    it('opens a window whose start (02:30) does not exist at the first instant after the gap (03:00 EDT = 07:00Z)', () => {
      const window = win(NEW_YORK, '02:30', '04:00');
      expect(opening('2026-03-08T05:00:00.000Z', window)).toBe('2026-03-08T07:00:00.000Z');
      expect(isInsideCallWindow(at('2026-03-08T06:59:59.999Z'), window)).toBe(false); // 01:59:59.999 EST
      expect(isInsideCallWindow(at('2026-03-08T07:00:00.000Z'), window)).toBe(true); // 03:00 EDT
      expect(isInsideCallWindow(at('2026-03-08T07:59:59.999Z'), window)).toBe(true); // 03:59:59.999 EDT
      expect(isInsideCallWindow(at('2026-03-08T08:00:00.000Z'), window)).toBe(false); // 04:00 EDT
    });

    it('skips a day whose whole window falls in the gap', () => {
      // 02:00–02:30 never happens on 2026-03-08: the next Sunday opens at 02:00 EDT = 06:00Z.
      expect(opening('2026-03-08T05:00:00.000Z', win(NEW_YORK, '02:00', '02:30', [7]))).toBe('2026-03-15T06:00:00.000Z');
    });
  });

  describe('fall back on Sunday 2026-11-01 (02:00 EDT -> 01:00 EST at 06:00Z; 01:00–02:00 happens twice)', () => {
    it.each([
      [
        'opens at the FIRST occurrence of a repeated start time (01:30 EDT)',
        win(NEW_YORK, '01:30', '03:00'),
        '2026-11-01T04:00:00.000Z',
        '2026-11-01T05:30:00.000Z',
      ],
      [
        'reopens at the change when the repeated hour brings the window back (01:00 EST)',
        win(NEW_YORK, '01:00', '01:30'),
        '2026-11-01T05:45:00.000Z',
        '2026-11-01T06:00:00.000Z',
      ],
      [
        'opens at the second occurrence when asked between the two (01:45 EST)',
        win(NEW_YORK, '01:45', '03:00'),
        '2026-11-01T06:30:00.000Z',
        '2026-11-01T06:45:00.000Z',
      ],
      [
        'opens the next day once both occurrences are past (01:00 EST on 2026-11-02)',
        win(NEW_YORK, '01:00', '01:30'),
        '2026-11-01T06:45:00.000Z',
        '2026-11-02T06:00:00.000Z',
      ],
      [
        'keeps 09:00 local as the opening after the change (Saturday 18:30 EDT -> Sunday 09:00 EST)',
        win(NEW_YORK, '09:00', '18:00'),
        '2026-10-31T22:30:00.000Z',
        '2026-11-01T14:00:00.000Z',
      ],
    ])('%s', (_label, window, from, expected) => {
      expect(opening(from, window)).toBe(expected);
    });

    it('treats an instant in the second occurrence as inside a window containing its local time', () => {
      const window = win(NEW_YORK, '01:00', '01:30');
      expect(isInsideCallWindow(at('2026-11-01T05:15:00.000Z'), window)).toBe(true); // 01:15 EDT (first)
      expect(isInsideCallWindow(at('2026-11-01T05:30:00.000Z'), window)).toBe(false); // 01:30 EDT, at the end
      expect(isInsideCallWindow(at('2026-11-01T06:00:00.000Z'), window)).toBe(true); // 01:00 EST (second)
      expect(isInsideCallWindow(at('2026-11-01T06:15:00.000Z'), window)).toBe(true); // 01:15 EST (second)
      expect(isInsideCallWindow(at('2026-11-01T06:30:00.000Z'), window)).toBe(false); // 01:30 EST (second), at the end
    });
  });
});

describe('Europe/London across the 2026 DST changes', () => {
  describe('spring forward on Sunday 2026-03-29 (01:00 GMT -> 02:00 BST at 01:00Z)', () => {
    const nineToFive = win(LONDON, '09:00', '17:00');

    it.each([
      ['Saturday 09:00 GMT', '2026-03-28T09:00:00.000Z', true],
      ['Saturday 17:00 GMT (end)', '2026-03-28T17:00:00.000Z', false],
      ['Sunday 09:00 BST', '2026-03-29T08:00:00.000Z', true],
      ['Sunday 08:59:59.999 BST', '2026-03-29T07:59:59.999Z', false],
      ['Sunday 16:59:59.999 BST', '2026-03-29T15:59:59.999Z', true],
      ['Sunday 17:00 BST (end)', '2026-03-29T16:00:00.000Z', false],
    ])('%s is inside: %s', (_label, instant, inside) => {
      expect(isInsideCallWindow(at(instant), nineToFive)).toBe(inside);
    });

    it('opens on Sunday at 09:00 BST after Saturday closes at 17:00 GMT', () => {
      expect(opening('2026-03-28T17:00:00.000Z', nineToFive)).toBe('2026-03-29T08:00:00.000Z');
    });

    it('opens a window whose start (01:30) does not exist at 02:00 BST = 01:00Z', () => {
      const window = win(LONDON, '01:30', '03:00');
      expect(opening('2026-03-29T00:00:00.000Z', window)).toBe('2026-03-29T01:00:00.000Z');
      expect(isInsideCallWindow(at('2026-03-29T00:59:59.999Z'), window)).toBe(false); // 00:59:59.999 GMT
      expect(isInsideCallWindow(at('2026-03-29T01:00:00.000Z'), window)).toBe(true); // 02:00 BST
    });
  });

  describe('fall back on Sunday 2026-10-25 (02:00 BST -> 01:00 GMT at 01:00Z; 01:00–02:00 happens twice)', () => {
    const nineToFive = win(LONDON, '09:00', '17:00');

    it('keeps 09:00 local as the opening on both sides of the change', () => {
      expect(isInsideCallWindow(at('2026-10-24T08:00:00.000Z'), nineToFive)).toBe(true); // Saturday 09:00 BST
      expect(opening('2026-10-24T16:00:00.000Z', nineToFive)).toBe('2026-10-25T09:00:00.000Z'); // Sat 17:00 BST -> Sun 09:00 GMT
      expect(isInsideCallWindow(at('2026-10-25T08:59:59.999Z'), nineToFive)).toBe(false);
      expect(isInsideCallWindow(at('2026-10-25T16:59:59.999Z'), nineToFive)).toBe(true);
      expect(isInsideCallWindow(at('2026-10-25T17:00:00.000Z'), nineToFive)).toBe(false);
    });

    it('opens at the FIRST occurrence of a repeated start time (01:30 BST = 00:30Z)', () => {
      expect(opening('2026-10-24T23:00:00.000Z', win(LONDON, '01:30', '02:00'))).toBe('2026-10-25T00:30:00.000Z');
    });

    it('treats an instant in the second occurrence as inside a window containing its local time', () => {
      const window = win(LONDON, '01:30', '02:00');
      expect(isInsideCallWindow(at('2026-10-25T00:59:59.999Z'), window)).toBe(true); // 01:59:59.999 BST (first)
      expect(isInsideCallWindow(at('2026-10-25T01:00:00.000Z'), window)).toBe(false); // 01:00 GMT (second), before start
      expect(isInsideCallWindow(at('2026-10-25T01:30:00.000Z'), window)).toBe(true); // 01:30 GMT (second)
      expect(opening('2026-10-25T01:00:00.000Z', window)).toBe('2026-10-25T01:30:00.000Z');
    });
  });
});

describe('nextAttemptAt', () => {
  // Monday 2026-11-23 in New York is EST (UTC-5).
  const nineToSixWeekdays = win(NEW_YORK, '09:00', '18:00', WEEKDAYS);

  it.each([
    [
      'is exactly redialDelayMin after the previous end when that is inside the window',
      '2026-11-23T15:00:00.000Z',
      1,
      '2026-11-23T15:01:00.000Z',
    ],
    ['keeps the milliseconds of the previous end', '2026-11-23T15:00:00.123Z', 60, '2026-11-23T16:00:00.123Z'],
    ['may land one minute before callWindowEnd', '2026-11-23T21:59:00.000Z', 60, '2026-11-23T22:59:00.000Z'],
    [
      'is deferred to the next opening when it would land at exactly callWindowEnd',
      '2026-11-23T22:59:00.000Z',
      1,
      '2026-11-24T14:00:00.000Z',
    ],
    ['is deferred to the next opening when it would land after the window', '2026-11-23T22:30:00.000Z', 60, '2026-11-24T14:00:00.000Z'],
    [
      'is deferred to the same day opening when it would land before the window',
      '2026-11-23T12:00:00.000Z',
      30,
      '2026-11-23T14:00:00.000Z',
    ],
    ['is deferred from Friday evening to Monday morning', '2026-11-20T22:30:00.000Z', 60, '2026-11-23T14:00:00.000Z'],
    ['with a zero delay is the previous end itself when inside', '2026-11-23T15:00:00.000Z', 0, '2026-11-23T15:00:00.000Z'],
  ])('%s', (_label, endedAt, delay, expected) => {
    expect(nextAttemptAt(at(endedAt), delay, nineToSixWeekdays)?.toISOString()).toBe(expected);
  });

  it('is deferred across the fall-back change to 09:00 EST', () => {
    // Ended Saturday 2026-10-31 17:30 EDT; 18:30 is outside; Sunday opens at 09:00 EST = 14:00Z.
    expect(nextAttemptAt(at('2026-10-31T21:30:00.000Z'), 60, win(NEW_YORK, '09:00', '18:00'))?.toISOString()).toBe(
      '2026-11-01T14:00:00.000Z',
    );
  });

  it('returns null when callDays is empty', () => {
    expect(nextAttemptAt(at('2026-11-23T15:00:00.000Z'), 1, win(NEW_YORK, '09:00', '18:00', []))).toBeNull();
  });
});

describe('nextWindowOpening agrees with a minute-by-minute scan around the DST changes', () => {
  // Brute force: the first quarter hour at or after `from` that isInsideCallWindow accepts. Every `from`, window bound and offset
  // change below falls on a quarter hour, so the true opening does too.
  const scan = (from: Date, window: CallWindow, limitMinutes: number) => {
    for (let m = 0; m <= limitMinutes; m += 15) {
      const candidate = new Date(from.getTime() + m * 60_000);
      if (isInsideCallWindow(candidate, window)) return candidate.toISOString();
    }
    return null;
  };
  const cases: Array<[string, string]> = [
    [NEW_YORK, '2026-03-07T12:00:00.000Z'],
    [NEW_YORK, '2026-10-31T12:00:00.000Z'],
    [LONDON, '2026-03-28T12:00:00.000Z'],
    [LONDON, '2026-10-24T12:00:00.000Z'],
  ];
  const windows: Array<[string, string]> = [
    ['00:30', '01:15'],
    ['01:00', '01:30'],
    ['01:30', '02:45'],
    ['02:15', '02:45'],
    ['09:00', '18:00'],
  ];

  it.each(cases)('in %s from %s, every 45 minutes for two days', (zone, firstIso) => {
    for (const [start, end] of windows) {
      const window = win(zone, start, end);
      for (let step = 0; step < 64; step += 1) {
        const from = new Date(Date.parse(firstIso) + step * 45 * 60_000);
        expect(nextWindowOpening(from, window)?.toISOString() ?? null, `${zone} ${start}-${end} from ${from.toISOString()}`).toBe(
          scan(from, window, 8 * 24 * 60),
        );
      }
    }
  });
});
