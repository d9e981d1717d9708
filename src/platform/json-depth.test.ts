import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth.ts';

describe('nestsDeeperThan', () => {
  it('counts the nesting of objects and arrays, not the brackets inside strings', () => {
    expect(nestsDeeperThan('{"a":[{"b":[]}]}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":[{"b":[[]]}]}', 4)).toBe(true);
    expect(nestsDeeperThan('[[],[],[],[]]', 2)).toBe(false);
    expect(nestsDeeperThan(`{"text":"${'[{'.repeat(100)}"}`, 1)).toBe(false);
    // An escaped quote does not end the string; an escaped backslash before the quote does.
    expect(nestsDeeperThan('{"t":"\\"[[[["}', 1)).toBe(false);
    expect(nestsDeeperThan('{"t":"\\\\",  "u":[[1]]}', 2)).toBe(true);
  });
});
