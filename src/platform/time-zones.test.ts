import { describe, expect, it } from 'vitest';
import { resolveTimeZone } from './time-zones.ts';

describe('resolveTimeZone', () => {
  it('takes an IANA name in any case and answers its canonical spelling', () => {
    expect(resolveTimeZone('Europe/Berlin')).toBe('Europe/Berlin');
    expect(resolveTimeZone(' europe/berlin ')).toBe('Europe/Berlin');
    expect(resolveTimeZone('UTC')).toBe('UTC');
  });

  it('takes a city that names one zone, typed as people type it', () => {
    expect(resolveTimeZone('Berlin')).toBe('Europe/Berlin');
    expect(resolveTimeZone('berlin')).toBe('Europe/Berlin');
    expect(resolveTimeZone('New York')).toBe('America/New_York');
    expect(resolveTimeZone('Indianapolis')).toBe(resolveTimeZone('America/Indiana/Indianapolis'));
  });

  it('finds nothing for a name that is no zone or city', () => {
    for (const name of ['', 'Atlantis', 'Europe/Atlantis', 'Europe', 'Mars/Berlin', 'Berlin/Europe'])
      expect(resolveTimeZone(name), name).toBeUndefined();
  });
});
