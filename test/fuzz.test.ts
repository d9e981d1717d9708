import type fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answerProblem,
  fuzzSeed,
  fuzzTarget,
  sampleRequests,
  UNREACHABLE_PROVIDERS,
  type FuzzRequest,
  type FuzzRoute,
} from './fuzz-requests.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

/**
 * Every route of the app, fed hostile paths, query strings, headers and bodies, as a tenant (API
 * key), as another tenant (session) and as nobody: no answer is a 5xx, every error is in the one
 * error shape, and the app still answers /healthz and a real request afterwards. Deterministic:
 * FUZZ_SEED replays a run, FUZZ_REQUESTS makes it longer.
 */
const SEED = fuzzSeed(20_261_126);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 1_000);

let t: TestApp;
let routes: FuzzRoute[];
let arbitrary: fc.Arbitrary<FuzzRequest>;
let key: string;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '10000000', ...UNREACHABLE_PROVIDERS } });
  key = (await createKey(t.app, (await signUp(t.app)).token)).key;
  const session = (await signUp(t.app)).token;
  ({ routes, arbitrary } = await fuzzTarget(
    async (method, url, authorization, body) => {
      const response = await t.app.inject({
        method: method as 'GET',
        url,
        headers: authorization ? { authorization } : {},
        ...(body ? { payload: body } : {}),
      });
      return { status: response.statusCode, body: response.json() };
    },
    key,
    session,
  ));
});
afterAll(() => t.close());

describe('fuzzing every route', () => {
  it('finds every route of the API in the OpenAPI document', () => {
    const paths = new Set(routes.map((route) => `${route.method} ${route.path}`));
    for (const expected of [
      'GET /api/v1/contact-lists',
      'POST /api/v1/contact-lists/{id}/upload',
      'POST /api/v1/knowledge-bases/{id}/sources',
      'GET /healthz',
    ])
      expect(paths).toContain(expected);
    expect(routes.length).toBeGreaterThan(80);
  });

  it('answers hostile requests with no 5xx, every error in the error shape, and stays responsive', async () => {
    console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} replays it), ${REQUESTS} requests over ${routes.length} routes`);
    const requests = sampleRequests(arbitrary, SEED, REQUESTS);
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    for (const [index, request] of requests.entries()) {
      const response = await t.app.inject({
        method: request.method as 'GET',
        url: request.url,
        headers: request.headers,
        ...(request.body !== undefined ? { payload: request.body } : {}),
      });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      const problem = answerProblem(response.statusCode, response.headers['content-type'] as string | undefined, response.body);
      if (problem)
        problems.push(
          `#${index} ${request.method} ${request.url.slice(0, 200)} ${JSON.stringify(request.headers)} ${(request.body ?? '').slice(0, 200)}\n  ${problem}`,
        );
      if (index % 100 === 99) expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    }
    console.log(`answers by status: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`);
    expect(problems.slice(0, 10).join('\n')).toBe('');
    const after = await t.app.inject({ method: 'GET', url: '/api/v1/contact-lists', headers: bearer(key) });
    expect(after.statusCode).toBe(200);
  }, 120_000);
});
