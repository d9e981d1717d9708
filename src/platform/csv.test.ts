import { describe, expect, it } from 'vitest';
import { csvCell } from './csv.ts';

describe('csvCell', () => {
  it.each([
    ['=HYPERLINK("http://x.example","click")', `"'=HYPERLINK(""http://x.example"",""click"")"`],
    ['+cmd|/C calc!A0', `"'+cmd|/C calc!A0"`],
    ['-2+3+cmd|/C calc!A0', `"'-2+3+cmd|/C calc!A0"`],
    ['@SUM(1+1)', `"'@SUM(1+1)"`],
    ['\t=1+1', `"'\t=1+1"`],
    ['\r=1+1', `"'\r=1+1"`],
  ])('prefixes a cell beginning with a formula character with a quote and quotes it: %j', (value, written) => {
    expect(csvCell(value)).toBe(written);
  });

  it('writes plain numbers, such as phone numbers, as they are', () => {
    expect(csvCell('+14155550100')).toBe('+14155550100');
    expect(csvCell('-3.5')).toBe('-3.5');
  });

  it('quotes a cell holding a quote, a comma or a line break, and leaves others alone', () => {
    expect(csvCell('Called the office, angry')).toBe('"Called the office, angry"');
    expect(csvCell('say "stop"')).toBe('"say ""stop"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('plain a=b')).toBe('plain a=b');
    expect(csvCell('')).toBe('');
  });
});
