/**
 * Hostile requests for every route: the generator shared by the fuzz test (test/fuzz.test.ts, in
 * process) and the soak (bench/soak.ts, over HTTP against the real service). Routes and their
 * schemas come from the service's own OpenAPI document, so a new route is fuzzed without a word
 * here; bodies and query strings are near-valid objects of the route's schema with hostile values
 * mixed in (NUL, huge numbers, deep nesting, unicode, arrays where scalars belong), so that some
 * get past validation to the service and the database.
 */
import fc from 'fast-check';
import { PROVIDER_SETTINGS } from '../src/providers/registry.ts';

type Schema = Record<string, unknown>;

export interface FuzzRoute {
  method: string;
  /** OpenAPI style: /api/v1/agents/{id} */
  path: string;
  query?: Schema;
  body?: Schema;
  multipart?: boolean;
}

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

interface OpenApiOperation {
  parameters?: { in: string; name: string; schema?: Schema }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every operation of an OpenAPI document, plus the routes it hides (health, readiness, the document, the dashboard). */
export function routesOf(openapi: { paths: Record<string, Record<string, OpenApiOperation>> }): FuzzRoute[] {
  const routes: FuzzRoute[] = [];
  for (const [path, operations] of Object.entries(openapi.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (!METHODS.includes(method)) continue;
      const queryParams = (operation.parameters ?? []).filter((p) => p.in === 'query');
      const content = operation.requestBody?.content ?? {};
      routes.push({
        method: method.toUpperCase(),
        path,
        ...(queryParams.length > 0
          ? { query: { type: 'object', properties: Object.fromEntries(queryParams.map((p) => [p.name, p.schema ?? {}])) } }
          : {}),
        ...(content['application/json']?.schema ? { body: content['application/json'].schema } : {}),
        ...(content['multipart/form-data'] ? { multipart: true } : {}),
      });
    }
  }
  for (const path of ['/healthz', '/readyz', '/api/v1/openapi.json', '/']) routes.push({ method: 'GET', path });
  return routes;
}

// ---------------------------------------------------------------------------------------------
// Values.

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '%00',
  '\uD800',
  '\uFFFF',
  '𝕏😀',
  'ﬀ\u202E\u200B',
  "' OR 1=1 --",
  '"; DROP TABLE tenants; --',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  '{{systemPrompt}}',
  '1e18',
  '-1',
  'NaN',
  'Infinity',
  'null',
  'true',
  '[]',
  '{}',
  '__proto__',
  'x'.repeat(5_000),
  '+14155550100',
  'user@example.com',
  '00000000-0000-0000-0000-000000000000',
  '2026-02-30T00:00:00.000Z',
  'http://127.0.0.1:9/x',
];
const HOSTILE_NUMBERS = [0, -1, 1, 1.5, -0.5, 2 ** 31, 2 ** 53 + 2, 1e18, 1e20, -1e20, 1e308, Number.MAX_SAFE_INTEGER];
const HOSTILE_QUERY_NUMBERS = ['1e18', '1e20', 'Infinity', '-Infinity', 'NaN', '-1', '0', '1.5', '0x10', '9007199254740993', '', ' 1'];

const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => `${s}\u0000${s}`) },
);
const hostileNumber = fc.oneof(fc.constantFrom(...HOSTILE_NUMBERS), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
/** JSON nested `depth` levels deep, as text (too deep for any parser that recurses). */
const deepJson = (depth: number) => `{"metadata":${'['.repeat(depth)}${']'.repeat(depth)}}`;
const anyJson = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  hostileString,
  hostileNumber,
  fc.constant(null),
  fc.dictionary(hostileString, hostileString, { maxKeys: 4 }),
);

/** A value for `schema`: usually one that fits it (so that validation passes now and then), sometimes a hostile one. */
function valueFor(schema: Schema | undefined, ids: string[], depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return anyJson;
  const options: fc.Arbitrary<unknown>[] = [];
  const hostile: fc.Arbitrary<unknown>[] = [anyJson];
  const s = schema as {
    type?: string | string[];
    enum?: unknown[];
    const?: unknown;
    anyOf?: Schema[];
    oneOf?: Schema[];
    format?: string;
    pattern?: string;
    properties?: Record<string, Schema>;
    items?: Schema;
    minimum?: number;
    maximum?: number;
    minLength?: number;
    maxLength?: number;
    minItems?: number;
    maxItems?: number;
  };
  if (s.enum) options.push(fc.constantFrom(...s.enum));
  if ('const' in s) options.push(fc.constant(s.const));
  for (const branch of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) options.push(valueFor(branch, ids, depth + 1));
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  for (const type of types) {
    if (type === 'string') {
      hostile.push(hostileString);
      if (s.enum || 'const' in s) continue;
      if (s.format === 'uuid') options.push(fc.oneof(fc.constantFrom(...ids), fc.uuid()));
      else if (s.format === 'email') options.push(fc.emailAddress());
      else if (s.format === 'date-time')
        options.push(fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4e12) }).map((d) => d.toISOString()));
      else if (s.format === 'uri') options.push(fc.constantFrom('http://127.0.0.1:9/x', 'https://127.0.0.1:9/y'));
      else if (s.pattern) options.push(fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length <= (s.maxLength ?? Infinity)));
      else
        options.push(
          fc.string({
            unit: 'grapheme',
            minLength: s.minLength ?? 0,
            maxLength: Math.max(s.minLength ?? 0, Math.min(s.maxLength ?? 30, 30)),
          }),
        );
    } else if (type === 'integer' || type === 'number') {
      hostile.push(hostileNumber);
      const low = s.minimum ?? -1000;
      const high = Math.min(s.maximum ?? low + 1000, low + 1e6);
      options.push(
        type === 'integer' ? fc.integer({ min: Math.ceil(low), max: Math.floor(high) }) : fc.double({ min: low, max: high, noNaN: true }),
      );
    } else if (type === 'boolean') options.push(fc.boolean());
    else if (type === 'null') options.push(fc.constant(null));
    else if (type === 'array')
      options.push(
        fc.array(valueFor(s.items, ids, depth + 1), {
          minLength: s.minItems ?? 0,
          maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)),
        }),
      );
    else if (type === 'object') options.push(objectFor(s, ids, depth + 1));
  }
  if (options.length === 0) return anyJson;
  return fc.oneof({ weight: 12, arbitrary: fc.oneof(...options) }, { weight: 1, arbitrary: fc.oneof(...hostile) });
}

/** An object of `schema`'s properties, each present or not, now and then with one it does not know. */
function objectFor(schema: Schema, ids: string[], depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const shape = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, valueFor(property, ids, depth)]));
  const known = fc.record(shape, { requiredKeys: Object.keys(properties).filter((name) => required.has(name)) });
  return fc.oneof(
    { weight: 8, arbitrary: known },
    { weight: 1, arbitrary: fc.record(shape, { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.tuple(known, hostileString, anyJson).map(([object, key, value]) => ({ ...object, [key]: value })) },
  );
}

// ---------------------------------------------------------------------------------------------
// Requests.

/** Percent-encodes a value's UTF-8 bytes; a lone surrogate, which encodeURIComponent refuses, becomes U+FFFD. */
const percent = (text: string) =>
  [...Buffer.from(text, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte)) && byte < 0x80
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
const encode = (value: unknown) => percent(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

function queryString(route: FuzzRoute, ids: string[]): fc.Arbitrary<string> {
  const schema = route.query ?? { type: 'object', properties: { page: { type: 'integer' }, limit: { type: 'integer' } } };
  const properties = Object.keys((schema.properties ?? {}) as object);
  const pagination = fc.tuple(fc.constantFrom('page', 'limit'), fc.constantFrom(...HOSTILE_QUERY_NUMBERS)).map(([k, v]) => `${k}=${v}`);
  const field = fc.tuple(fc.constantFrom(...properties, 'search', 'x'), fc.oneof(hostileString, fc.constantFrom(...HOSTILE_QUERY_NUMBERS)));
  const asArray = fc
    .tuple(fc.constantFrom(...properties, 'page'), hostileString, hostileString)
    .map(([k, a, b]) => `${k}=${encode(a)}&${k}=${encode(b)}`);
  const fromSchema = objectFor(schema, ids, 0).map((object) =>
    Object.entries(object)
      .map(([k, v]) => `${encode(k)}=${encode(v)}`)
      .join('&'),
  );
  const raw = fc.constantFrom('%00', 'a=%00', '%zz=1', 'page[]=1', 'a[b][c]=1', '&&&', '=', 'page=1&page=2', `x=${'y'.repeat(3_000)}`);
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant('') },
    { weight: 3, arbitrary: pagination },
    { weight: 3, arbitrary: field.map(([k, v]) => `${encode(k)}=${encode(v)}`) },
    { weight: 2, arbitrary: asArray },
    { weight: 3, arbitrary: fromSchema },
    { weight: 1, arbitrary: raw },
  );
}

function pathFor(route: FuzzRoute, ids: string[]): fc.Arbitrary<string> {
  const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant(route.path);
  const param = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ids) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: hostileString.map(percent) },
    { weight: 1, arbitrary: fc.constantFrom('%00', '%zz', '%E0%A4%A', '..', '%2F', 'x'.repeat(150), 'twilio', 'whatsapp') },
  );
  return fc.array(param, { minLength: names.length, maxLength: names.length }).map((values) => {
    let path = route.path;
    names.forEach((name, i) => (path = path.replace(`{${name}}`, values[i] || 'x')));
    return path;
  });
}

const BOUNDARY = 'fuzzboundary7MA4YWxkTrZu0gW';
const multipart = (parts: string) => `--${BOUNDARY}\r\n${parts}\r\n--${BOUNDARY}--\r\n`;
const filePart = (name: string, fileName: string, type: string, content: string) =>
  `Content-Disposition: form-data; name="${name}"; filename="${fileName}"\r\nContent-Type: ${type}\r\n\r\n${content}`;

function bodyFor(route: FuzzRoute, ids: string[]): fc.Arbitrary<{ type?: string; body?: string }> {
  const json = (value: unknown) => ({ type: 'application/json', body: JSON.stringify(value) });
  const options: fc.WeightedArbitrary<{ type?: string; body?: string }>[] = [
    { weight: 2, arbitrary: anyJson.map(json) },
    { weight: 1, arbitrary: fc.constantFrom(70, 10_000).map((depth) => ({ type: 'application/json', body: deepJson(depth) })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        { type: 'application/json', body: '{"a":' },
        { type: 'application/json', body: '{"__proto__":{"x":1},"constructor":{"prototype":{}}}' },
        { type: 'application/json', body: '' },
        { type: 'application/json; charset=utf-16', body: '{}' },
        { type: 'text/plain', body: 'hello' },
        { type: 'application/x-www-form-urlencoded', body: 'a=1&b=%00' },
        { type: 'application/xml', body: '<a/>' },
        { type: 'multipart/form-data', body: 'no boundary' },
        { type: `multipart/form-data; boundary=${BOUNDARY}`, body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"` },
        { type: `multipart/form-data; boundary=${BOUNDARY}`, body: `--${BOUNDARY}\r\ngarbage\r\n\r\n` },
        { type: undefined, body: undefined },
      ),
    },
  ];
  if (route.body) options.push({ weight: 6, arbitrary: valueFor(route.body, ids).map(json) });
  if (route.multipart) {
    const csv = fc
      .array(fc.tuple(fc.oneof(fc.constant('+14155550100'), hostileString), hostileString), { maxLength: 5 })
      .map((rows) => `phone,name\n${rows.map(([p, n]) => `"${p.replaceAll('"', '""')}","${n.replaceAll('"', '""')}"`).join('\n')}`);
    const upload = fc.tuple(csv, fc.constantFrom('a.csv', 'a.txt', 'a.md', 'a.pdf', '\u0000.csv', '../x.html'));
    options.push({
      weight: 6,
      arbitrary: fc.tuple(upload, hostileString, fc.boolean()).map(([[content, fileName], sourceName, cut]) => {
        const text = multipart(
          `Content-Disposition: form-data; name="sourceType"\r\n\r\nfile\r\n--${BOUNDARY}\r\n` +
            `Content-Disposition: form-data; name="sourceName"\r\n\r\n${sourceName}\r\n--${BOUNDARY}\r\n` +
            filePart('file', fileName, 'text/plain', content),
        );
        return { type: `multipart/form-data; boundary=${BOUNDARY}`, body: cut ? text.slice(0, Math.floor(text.length / 2)) : text };
      }),
    });
  }
  return fc.oneof(...options);
}

/**
 * Requests for `routes`: the route's own method mostly, the path's parameters one of `ids` (real
 * resources), a random UUID or something hostile; each with one of `credentials` (an
 * `authorization` header, or none).
 */
export function requestArbitrary(routes: FuzzRoute[], ids: string[], credentials: (string | undefined)[]): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...routes).chain((route) =>
    fc
      .record({
        method: fc.oneof(
          { weight: 9, arbitrary: fc.constant(route.method) },
          { weight: 1, arbitrary: fc.constantFrom(...METHODS, 'options') },
        ),
        path: pathFor(route, ids),
        query: queryString(route, ids),
        body:
          route.method === 'GET' || route.method === 'DELETE'
            ? fc.oneof(fc.constant<{ type?: string; body?: string }>({}), bodyFor(route, ids))
            : bodyFor(route, ids),
        authorization: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...credentials) },
          { weight: 1, arbitrary: fc.constantFrom('Bearer aok_0000', 'Basic Zm9vOmJhcg==', 'Bearer ', 'Bearer \u00e9') },
        ),
        idempotencyKey: fc.option(fc.constantFrom('k1', '', 'x'.repeat(300)), { freq: 8 }),
        requestId: fc.option(fc.constantFrom('trace-1', '\u00e9', 'x'.repeat(200)), { freq: 8 }),
      })
      .map(({ method, path, query, body, authorization, idempotencyKey, requestId }) => {
        const headers: Record<string, string> = {};
        if (authorization !== undefined) headers.authorization = authorization;
        if (body.type !== undefined) headers['content-type'] = body.type;
        if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
        if (requestId !== null) headers['x-request-id'] = requestId;
        const upper = method.toUpperCase();
        const hasBody = body.body !== undefined && upper !== 'GET';
        return { method: upper, url: query ? `${path}?${query}` : path, headers, ...(hasBody ? { body: body.body } : {}) };
      }),
  );
}

/** One JSON request to the service under fuzz (in process or over HTTP); answers the status and the parsed body. */
export type Call = (
  method: string,
  url: string,
  authorization: string | undefined,
  body?: object,
) => Promise<{ status: number; body: unknown }>;

/**
 * What a fuzz run needs from a service with a tenant's `key` and another tenant's `session`: real
 * resources for path parameters (a contact list, a contact, a knowledge base), the routes from the
 * OpenAPI document, and the requests' generator, which signs with the key mostly, with the session
 * now and then (whose tenant owns none of the resources), and sometimes with nothing.
 */
export async function fuzzTarget(call: Call, key: string, session: string) {
  const create = async (url: string, body: object) => {
    const answer = await call('POST', url, `Bearer ${key}`, body);
    if (answer.status !== 201) throw new Error(`POST ${url} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return (answer.body as { id: string }).id;
  };
  const list = await create('/api/v1/contact-lists', { name: 'Fuzz list' });
  const contact = await create(`/api/v1/contact-lists/${list}/contacts`, { phoneNumber: '+14155550100' });
  const base = await create('/api/v1/knowledge-bases', { name: 'Fuzz base' });
  const routes = routesOf((await call('GET', '/api/v1/openapi.json', undefined)).body as Parameters<typeof routesOf>[0]);
  const credentials = [`Bearer ${key}`, `Bearer ${key}`, `Bearer ${key}`, `Bearer ${session}`, undefined];
  return { routes, arbitrary: requestArbitrary(routes, [list, contact, base], credentials) };
}

/** `count` requests drawn with `seed`: the same seed, the same requests. */
export function sampleRequests(arbitrary: fc.Arbitrary<FuzzRequest>, seed: number, count: number): FuzzRequest[] {
  return fc.sample(arbitrary, { seed, numRuns: count });
}

/**
 * Every provider API (Twilio, WhatsApp, Deepgram, …) pointed at a closed port on this machine: no
 * fuzzed request reaches the outside world, and a provider call fails at once as unreachable.
 */
export const UNREACHABLE_PROVIDERS: Record<string, string> = Object.fromEntries(
  Object.keys(PROVIDER_SETTINGS)
    .filter((name) => name.endsWith('_URL'))
    .map((name) => [name, 'http://127.0.0.1:9']),
);

/**
 * What is wrong with an answer, or undefined: a 5xx, or an error (4xx) whose body is not the one
 * error shape {statusCode, error, code, message, requestId[, details]}. The one 5xx allowed is 502
 * PROVIDER_ERROR, the honest answer when a provider is unreachable (UNREACHABLE_PROVIDERS), which
 * a tenant can reach by connecting one.
 */
export function answerProblem(status: number, contentType: string | undefined, body: string): string | undefined {
  if (status >= 500 && !(status === 502 && body.includes('"code":"PROVIDER_ERROR"'))) return `answered ${status}: ${body.slice(0, 300)}`;
  if (status < 400) return undefined;
  if (!contentType?.startsWith('application/json'))
    return `answered ${status} as ${contentType ?? 'no content type'}: ${body.slice(0, 200)}`;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return `answered ${status} with a body that is not JSON: ${body.slice(0, 200)}`;
  }
  const shaped =
    parsed.statusCode === status &&
    typeof parsed.error === 'string' &&
    typeof parsed.code === 'string' &&
    /^[A-Z][A-Z0-9_]*$/.test(parsed.code) &&
    typeof parsed.message === 'string' &&
    parsed.message.length > 0 &&
    typeof parsed.requestId === 'string' &&
    (parsed.details === undefined || Array.isArray(parsed.details));
  return shaped ? undefined : `answered ${status} outside the error shape: ${body.slice(0, 300)}`;
}

/** A seed from the environment (FUZZ_SEED) or the clock; printed by the caller so a failure can be replayed. */
export function fuzzSeed(fallback: number): number {
  const given = process.env.FUZZ_SEED;
  return given !== undefined && given !== '' ? Number(given) : fallback;
}
