import { describe, expect, it } from 'vitest';
import { smsSegments } from './sms-segments.ts';

describe('smsSegments', () => {
  it('counts GSM-7 text: 160 characters in one segment, 153 per segment after that', () => {
    expect(smsSegments('a'.repeat(160))).toEqual({ encoding: 'GSM-7', segments: 1 });
    expect(smsSegments('a'.repeat(161))).toEqual({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments('a'.repeat(153 * 2))).toEqual({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments('a'.repeat(153 * 2 + 1))).toEqual({ encoding: 'GSM-7', segments: 3 });
  });

  it("keeps the GSM-7 alphabet's own non-ASCII letters in GSM-7", () => {
    expect(smsSegments('Café Ø Ñ ü @ £ $ ¥ è')).toEqual({ encoding: 'GSM-7', segments: 1 });
  });

  it('counts GSM-7 extension characters (€ { } [ ] ~ \\ | ^) twice', () => {
    expect(smsSegments('€'.repeat(80))).toEqual({ encoding: 'GSM-7', segments: 1 });
    expect(smsSegments('€'.repeat(81))).toEqual({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments(`${'a'.repeat(158)}{`)).toEqual({ encoding: 'GSM-7', segments: 1 });
    expect(smsSegments(`${'a'.repeat(159)}{`)).toEqual({ encoding: 'GSM-7', segments: 2 });
    expect(smsSegments('{}[]~\\|^'.repeat(10))).toEqual({ encoding: 'GSM-7', segments: 1 });
    expect(smsSegments(`${'{}[]~\\|^'.repeat(10)}a`)).toEqual({ encoding: 'GSM-7', segments: 2 });
  });

  it('switches Devanagari text to UCS-2: 70 characters in one segment, 67 per segment after that', () => {
    expect(smsSegments('न'.repeat(70))).toEqual({ encoding: 'UCS-2', segments: 1 });
    expect(smsSegments('न'.repeat(71))).toEqual({ encoding: 'UCS-2', segments: 2 });
    expect(smsSegments('न'.repeat(67 * 2))).toEqual({ encoding: 'UCS-2', segments: 2 });
    expect(smsSegments('न'.repeat(67 * 2 + 1))).toEqual({ encoding: 'UCS-2', segments: 3 });
    expect(smsSegments('नमस्ते, आपका ऑर्डर भेज दिया गया है')).toEqual({ encoding: 'UCS-2', segments: 1 });
  });

  it('makes the whole message UCS-2 for one emoji, which takes two UTF-16 code units', () => {
    expect(smsSegments(`${'a'.repeat(68)}😀`)).toEqual({ encoding: 'UCS-2', segments: 1 });
    expect(smsSegments(`${'a'.repeat(69)}😀`)).toEqual({ encoding: 'UCS-2', segments: 2 });
    expect(smsSegments('😀'.repeat(35))).toEqual({ encoding: 'UCS-2', segments: 1 });
    expect(smsSegments('😀'.repeat(36))).toEqual({ encoding: 'UCS-2', segments: 2 });
  });

  it('counts an empty body as one GSM-7 segment', () => {
    expect(smsSegments('')).toEqual({ encoding: 'GSM-7', segments: 1 });
  });
});
