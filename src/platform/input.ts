import type { FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { appError, validationError, type AppError } from './errors.ts';

/**
 * The refusals every request passes before any route sees it: what no schema can say once for all
 * routes, and what would otherwise reach the database or the stack as a 500.
 */

/**
 * Objects and arrays nest at most this deep in a JSON body; deeper is refused before parsing. No
 * document of the API nests more than a handful of levels. Nesting in the thousands is what broke
 * the embedded database: PostgreSQL's JSON parser recurses once per level, and in PGlite that
 * recursion runs on the Node thread's own stack, whose overflow PGlite swallowed, leaving the
 * engine half-way through a statement (see docs/operations.md, "Readiness, timeouts and the embedded database").
 */
export const MAX_JSON_DEPTH = 64;

/** Whether JSON text nests objects and arrays deeper than `max`; one pass over the text, no recursion. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (++depth > max) return true;
    } else if (c === '}' || c === ']') depth--;
  }
  return false;
}

/**
 * A JSON request body: empty text is no body (a state action such as POST /campaigns/{id}/resume
 * sends none); prototype keys are dropped; nesting deeper than MAX_JSON_DEPTH is refused, since
 * parsers, validators and PostgreSQL's jsonb all recurse over it.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw appError('INVALID_JSON.tooDeep', { max: MAX_JSON_DEPTH });
  try {
    return sjson.parse(text, { protoAction: 'remove', constructorAction: 'remove' });
  } catch {
    throw appError('INVALID_JSON');
  }
}

const pointer = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

// With the u flag a surrogate pair is one code point, so only half a pair alone matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * What PostgreSQL's text and jsonb cannot hold: U+0000, and half a UTF-16 surrogate pair alone (a
 * JSON escape such as "\ud800" is no character: jsonb refuses it, text would turn it into U+FFFD).
 */
function unstorableIn(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'must not contain half a UTF-16 surrogate pair (such as \\ud800 alone)';
  return undefined;
}

const EVERY_LONE_SURROGATE = /\p{Surrogate}/gu;

/**
 * Text from outside the API (a provider's, a model's, a tenant's server's), storable: U+0000 and
 * half a surrogate pair alone become U+FFFD. API input with them is refused instead; such text
 * cannot be refused (the person said it, the model wrote it), and one such character must not fail
 * the write of a whole transcript, report or status. The text itself when it has neither.
 */
export function storableText(text: string): string {
  return unstorableIn(text) === undefined ? text : text.replaceAll('\u0000', '\uFFFD').replace(EVERY_LONE_SURROGATE, '\uFFFD');
}

/**
 * `value` with every string and property name storableText (a provider webhook's reading); arrays
 * and plain objects are copied only when something changed, anything else (a Date) is kept as it is.
 */
export function storableValue<T>(value: T): T {
  if (unstorableText(value) === undefined) return value;
  return storableCopy(value) as T;
}

function storableCopy(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableCopy);
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [storableText(key), storableCopy(child)]));
}

/**
 * JSON text from a model (a tool call's arguments) whose parsed strings are all storable: an
 * escape such as "\u0000" is no unstorable character in the text, only once parsed. Text that is no
 * JSON is cleaned as text (it is stored as it is).
 */
export function storableJsonText(json: string): string {
  if (!json.includes('\\u')) return storableText(json);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return storableText(json);
  }
  const storable = storableValue(parsed);
  return storable === parsed ? json : JSON.stringify(storable);
}

/**
 * The JSON Pointer of the first string (or property name) in `value` that the database cannot
 * store, and why (in the words of a validation detail); undefined when all can be. Iterative.
 */
export function unstorableText(value: unknown): { path: string; problem: string } | undefined {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = unstorableIn(item);
      if (problem) return { path, problem };
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}/${i}`]);
    } else if (item !== null && typeof item === 'object') {
      const entries = Object.entries(item);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const at = `${path}/${pointer(key)}`;
        const problem = unstorableIn(key);
        if (problem) return { path: at, problem };
        stack.push([child, at]);
      }
    }
  }
  return undefined;
}

const PARTS = [
  ['params', 'params'],
  ['query', 'querystring'],
  ['body', 'body'],
] as const;

/** No path parameter, query parameter or body value (nor property name) may carry what no column can store; the refusal names the field. */
function refuseUnstorableText(request: FastifyRequest): AppError | undefined {
  for (const [property, part] of PARTS) {
    const found = unstorableText(request[property]);
    if (found) return validationError([{ instancePath: found.path, keyword: 'unstorable', message: found.problem, params: {} }], part);
  }
  return undefined;
}

/** A multipart body cannot be read without the boundary its Content-Type names. */
function refuseMultipartWithoutBoundary(request: FastifyRequest): AppError | undefined {
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || !/^\s*multipart\//i.test(type)) return undefined;
  return /;\s*boundary\s*=\s*("[^"]+"|[^;\s]+)/i.test(type) ? undefined : appError('INVALID_MULTIPART.noBoundary');
}

/** The preValidation hook the app runs for every route: refuses input no route could store. */
export async function refuseUnstorableInput(request: FastifyRequest): Promise<void> {
  const error = refuseMultipartWithoutBoundary(request) ?? refuseUnstorableText(request);
  if (error) throw error;
}
