import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, capturedLog, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// One line per request; an open dashboard's polling (a session's successful reads) at debug, so
// that at the default level (info) the log says what changed and what failed.
const { log, entries } = capturedLog('debug');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ log });
});
afterAll(() => t.close());

/** The level (pino's number: debug 20, info 30, error 50) of the line logged for this request. */
const levelOf = (method: string, url: string) => {
  const lines = entries.filter((entry) => {
    const request = entry.request as { method: string; url: string } | undefined;
    return request?.method === method && request.url === url;
  });
  expect(lines).toHaveLength(1);
  return lines[0]!.level;
};

describe('the request log', () => {
  it("logs a dashboard session's successful reads at debug, and its changes, its failures and API keys' reads at info", async () => {
    const { token } = await signUp(t.app);
    const key = await createKey(t.app, token);
    const get = (url: string, auth: string) => t.app.inject({ method: 'GET', url, headers: bearer(auth) });

    await get('/api/v1/agents?poll=session', token);
    await get('/api/v1/agents?poll=key', key.key);
    await get('/api/v1/agents/00000000-0000-7000-8000-000000000000', token);
    await t.app.inject({ method: 'POST', url: '/api/v1/agents', headers: bearer(token), payload: { name: 'Logged' } });

    expect(levelOf('GET', '/api/v1/agents?poll=session')).toBe(20);
    expect(levelOf('GET', '/api/v1/agents?poll=key')).toBe(30);
    expect(levelOf('GET', '/api/v1/agents/00000000-0000-7000-8000-000000000000')).toBe(30);
    expect(levelOf('POST', '/api/v1/agents')).toBe(30);
  });
});
