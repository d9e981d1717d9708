import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Contract §1: Idempotency-Key on POST, per-key rate limits.
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const countKeys = async (token: string) =>
  (await t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(token) })).json().total as number;

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body, creating one record', async () => {
    const person = await signUp(t.app);
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/api-keys',
        headers: { ...bearer(person.token), 'idempotency-key': 'create-crm-key' },
        payload: { name: 'CRM' },
      });
    const first = await send();
    const second = await send();
    expect(first.statusCode).toBe(201);
    expect(second.statusCode).toBe(201);
    // The key's value is shown once: the replay is the same record without it.
    const { key, ...record } = first.json();
    expect(key).toMatch(/^aok_/);
    expect(second.json()).toEqual(record);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(await countKeys(person.token)).toBe(1);
  });

  it('never keeps a secret shown once with the response it replays: API key, webhook secret, tool signing secret', async () => {
    const person = await signUp(t.app);
    const post = (url: string, payload: object) =>
      t.app.inject({ method: 'POST', url, headers: { ...bearer(person.token), 'idempotency-key': `once-${url}` }, payload });
    const keyed = { name: 'CRM', webhookUrl: 'https://crm.example.com/hooks' };
    const created = await post('/api/v1/api-keys', keyed);
    expect(created.statusCode).toBe(201);
    const { key, webhookSecret } = created.json();
    expect(webhookSecret).toMatch(/^whsec_/);
    const agent = await post('/api/v1/agents', { name: 'Front desk' });
    expect(agent.statusCode).toBe(201);
    const { toolSigningSecret } = agent.json();
    expect(toolSigningSecret).toMatch(/^whsec_/);

    const keyReplay = await post('/api/v1/api-keys', keyed);
    expect(keyReplay.json()).toEqual({ ...created.json(), key: undefined, webhookSecret: undefined });
    expect(keyReplay.json()).not.toHaveProperty('key');
    const agentReplay = await post('/api/v1/agents', { name: 'Front desk' });
    expect(agentReplay.json().id).toBe(agent.json().id);
    expect(agentReplay.json()).not.toHaveProperty('toolSigningSecret');

    const { rows } = await t.runtime.db.query<{ response_body: string }>('SELECT response_body FROM idempotency_keys');
    const stored = rows.map((row) => row.response_body).join('\n');
    for (const secret of [key, webhookSecret, toolSigningSecret]) expect(stored).not.toContain(secret);
    expect(stored).toContain(agent.json().id);
  });

  it('answers 422 when the same key comes with a different body', async () => {
    const person = await signUp(t.app);
    const headers = { ...bearer(person.token), 'idempotency-key': 'k-1' };
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: 'one' } })).statusCode).toBe(201);
    const other = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: 'two' } });
    expect(other.statusCode).toBe(422);
    expect(other.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await countKeys(person.token)).toBe(1);
  });

  it('scopes keys by tenant: another tenant using the same key gets its own result', async () => {
    const a = await signUp(t.app);
    const b = await signUp(t.app);
    const post = (token: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/api-keys',
        headers: { ...bearer(token), 'idempotency-key': 'shared' },
        payload: { name: 'x' },
      });
    const first = await post(a.token);
    const second = await post(b.token);
    expect(second.statusCode).toBe(201);
    expect(second.json().id).not.toBe(first.json().id);
  });

  it('does not store validation failures, so a corrected request with the key runs', async () => {
    const person = await signUp(t.app);
    const headers = { ...bearer(person.token), 'idempotency-key': 'fix-me' };
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: '' } });
    expect(bad.statusCode).toBe(400);
    const good = await t.app.inject({ method: 'POST', url: '/api/v1/api-keys', headers, payload: { name: 'fixed' } });
    expect(good.statusCode).toBe(201);
  });
});

describe('rate limits', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '5' } });
  });
  afterAll(() => limited.close());

  it('answers 429 with Retry-After once a key has used its requests per minute, and counts per key', async () => {
    const person = await signUp(limited.app);
    const first = await createKey(limited.app, person.token);
    const second = await createKey(limited.app, person.token);
    const profile = (key: string) => limited.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(key) });
    for (let i = 0; i < 5; i++) expect((await profile(first.key)).statusCode).toBe(200);
    const refused = await profile(first.key);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.json()).toMatchObject({ statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' });
    expect(refused.json().message).toContain('5 per minute');
    expect((await profile(second.key)).statusCode).toBe(200);
  });

  it('does not limit health checks', async () => {
    for (let i = 0; i < 8; i++) expect((await limited.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
