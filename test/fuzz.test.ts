import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answerProblem,
  fuzzSeed,
  requestArbitrary,
  routesOf,
  sampleRequests,
  UNREACHABLE_PROVIDERS,
  type FuzzRoute,
} from './fuzz-requests.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

/**
 * Every route of the app, fed hostile paths, query strings, headers and bodies, as a tenant (API
 * key and session) and as nobody: no answer is a 5xx, every error is in the one error shape, and the
 * app still answers /healthz and a real request afterwards. Deterministic: FUZZ_SEED replays a run.
 */
const SEED = fuzzSeed(20_261_126);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 1_000);

let t: TestApp;
let routes: FuzzRoute[];
let ids: string[];
let credentials: (string | undefined)[];
let key: string;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '10000000', ...UNREACHABLE_PROVIDERS } });
  const owner = await signUp(t.app);
  key = (await createKey(t.app, owner.token)).key;
  const create = async (url: string, payload: object) => {
    const response = await t.app.inject({ method: 'POST', url, headers: bearer(key), payload });
    if (response.statusCode !== 201) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
    return (response.json() as { id: string }).id;
  };
  const list = await create('/api/v1/contact-lists', { name: 'Fuzz list' });
  const contact = await create(`/api/v1/contact-lists/${list}/contacts`, { phoneNumber: '+14155550100' });
  const base = await create('/api/v1/knowledge-bases', { name: 'Fuzz base' });
  ids = [list, contact, base];
  // An API key most of the time, the dashboard session now and then, and nobody.
  credentials = [`Bearer ${key}`, `Bearer ${key}`, `Bearer ${key}`, `Bearer ${owner.token}`, undefined];
  routes = routesOf((await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json());
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
    const requests = sampleRequests(requestArbitrary(routes, ids, credentials), SEED, REQUESTS);
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
