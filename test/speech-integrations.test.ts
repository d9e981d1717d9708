import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, signUp, startTestApp, type TestApp } from './harness.ts';
import { apiAs } from './voice-fixtures.ts';

// The speech providers' integrations through HTTP on a real database: a tenant's Deepgram and
// ElevenLabs keys are stored sealed and never returned.
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('speech provider integrations', () => {
  it.each([
    { kind: 'deepgram', apiKey: randomUUID().replaceAll('-', '') + 'abcdefgh' },
    { kind: 'elevenlabs', apiKey: `sk_${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '').slice(0, 16)}` },
  ])('stores the $kind apiKey sealed and never returns it; dashboard sessions only', async ({ kind, apiKey }) => {
    const tenant = await signUp(t.app);
    const { key } = await createKey(t.app, tenant.token);
    const dashboard = apiAs(t.app, tenant.token);

    expect((await apiAs(t.app, key)('PUT', `/integrations/${kind}`, { apiKey })).statusCode).toBe(403);
    expect((await dashboard('GET', `/integrations/${kind}`)).statusCode).toBe(404);

    const put = await dashboard('PUT', `/integrations/${kind}`, { apiKey });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual({
      kind,
      settings: {},
      secretsSet: ['apiKey'],
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    const get = await dashboard('GET', `/integrations/${kind}`);
    expect(get.json()).toEqual(put.json());
    const list = await dashboard('GET', '/integrations');
    for (const body of [put.body, get.body, list.body]) expect(body).not.toContain(apiKey);

    const { rows } = await t.runtime.db.query<{ secrets_sealed: string; settings: unknown }>(
      'SELECT secrets_sealed, settings FROM integrations WHERE tenant_id = $1 AND kind = $2',
      [tenant.tenantId, kind],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.secrets_sealed).not.toContain(apiKey);
    expect(JSON.stringify(rows[0]!.settings)).not.toContain(apiKey);
    expect(JSON.parse(t.runtime.serverKeys.open(rows[0]!.secrets_sealed))).toEqual({ apiKey });

    const short = await dashboard('PUT', `/integrations/${kind}`, { apiKey: 'short' });
    expect(short.statusCode).toBe(400);
    expect(short.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: [expect.objectContaining({ path: '/apiKey' })] });
    expect((await dashboard('PUT', `/integrations/${kind}`, { apiKey, region: 'eu' })).statusCode).toBe(400);
  });
});
