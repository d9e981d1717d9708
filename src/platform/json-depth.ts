/**
 * How deeply a caller's JSON may nest objects and arrays. No document of the API nests more than a
 * handful of levels; a deeper one is refused before it is parsed. Nesting in the thousands is what
 * breaks the embedded database: PostgreSQL's JSON parser recurses once per level, and in PGlite that
 * recursion runs on the Node thread's own stack, whose overflow PGlite swallows, leaving the engine
 * half-way through a statement (the next statement can spin forever). See README.md, "Health, readiness and timeouts".
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether JSON text nests objects and arrays deeper than `max` (brackets inside strings do not count). */
export function nestsDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}
