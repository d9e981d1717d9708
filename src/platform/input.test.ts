import { describe, expect, it } from 'vitest';
import { storableJsonText, storableText, storableValue, unstorableText } from './input.ts';

describe('storableText', () => {
  it('replaces the NUL character and halves of surrogate pairs alone with U+FFFD', () => {
    expect(storableText('a\u0000b\u0000')).toBe('a\uFFFDb\uFFFD');
    expect(storableText('high \ud800 alone')).toBe('high \uFFFD alone');
    expect(storableText('low \udc00 alone, and a high one last \ud83d')).toBe('low \uFFFD alone, and a high one last \uFFFD');
    // Two halves in the wrong order are no pair.
    expect(storableText('\ude00\ud83d')).toBe('\uFFFD\uFFFD');
  });

  it('keeps a valid surrogate pair (an emoji) and returns text with nothing to replace as it is', () => {
    expect(storableText('Cheers 😀 \ud83d\ude00')).toBe('Cheers 😀 😀');
    const text = 'Nothing to replace: é, 漢字, 😀.';
    expect(storableText(text)).toBe(text);
    expect(unstorableText(storableText('x\u0000\ud800😀'))).toBeUndefined();
  });
});

describe('storableValue', () => {
  it('cleans every string and property name, keeping dates, and returns a value with nothing to clean as it is', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const cleaned = storableValue({ text: 'hi\u0000', list: ['\ud800', 2], 'key\u0000': true, at });
    expect(cleaned).toEqual({ text: 'hi\uFFFD', list: ['\uFFFD', 2], 'key\uFFFD': true, at });
    expect(cleaned.at).toBe(at);
    const fine = { text: 'hi 😀', list: [1], at };
    expect(storableValue(fine)).toBe(fine);
  });
});

describe('storableJsonText', () => {
  it('cleans what the escapes of JSON text become once parsed, and keeps JSON with none of them as it is', () => {
    expect(JSON.parse(storableJsonText('{"notes":"a\\u0000b","more":["\\ud800"]}'))).toEqual({ notes: 'a\uFFFDb', more: ['\uFFFD'] });
    const fine = '{ "notes": "caf\\u00e9 \\ud83d\\ude00" }';
    expect(storableJsonText(fine)).toBe(fine);
    // Not JSON: cleaned as text, its escapes left as they are.
    expect(storableJsonText('{"notes": "a\\u0000\u0000')).toBe('{"notes": "a\\u0000\uFFFD');
  });
});
