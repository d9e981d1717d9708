import { FAVICON_SVG, LOGO_SVG } from '../src/platform/brand.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREFIXES } from '../src/gateway.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
let owner: Awaited<ReturnType<typeof signUp>>;

beforeAll(async () => {
  t = await startTestApp();
  owner = await signUp(t.app);
});
afterAll(() => t.close());

function expectErrorShape(body: Record<string, unknown>, status: number, code: string) {
  expect(body).toMatchObject({ statusCode: status, code });
  expect(typeof body.error).toBe('string');
  expect(typeof body.message).toBe('string');
  expect(typeof body.requestId).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|SELECT |INSERT /);
}

describe('gateway (contract §10)', () => {
  it('answers an unknown prefix with "No gateway route for <METHOD> <path>"', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/unknown-thing/42?x=1', headers: bearer(owner.token) });
    expect(response.statusCode).toBe(404);
    expectErrorShape(response.json(), 404, 'NO_GATEWAY_ROUTE');
    expect(response.json().message).toBe('No gateway route for GET /api/v1/unknown-thing/42');
  });

  it('answers a path outside /api/v1 the same way, without asking for credentials', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/v2/profile' });
    expect(response.statusCode).toBe(404);
    expect(response.json().message).toBe('No gateway route for POST /api/v2/profile');
  });

  it("answers a known prefix's unknown route with the owning module's own 404", async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/profile/nothing-here', headers: bearer(owner.token) });
    expect(response.statusCode).toBe(404);
    expectErrorShape(response.json(), 404, 'ROUTE_NOT_FOUND');
    expect(response.json().message).not.toMatch(/^No gateway route/);
    expect(response.json().message).toContain('identity');
  });

  it('names every prefix of the seed and the contract', () => {
    for (const prefix of [
      'whatsapp',
      'sms-agent',
      'campaigns',
      'contact-lists',
      'knowledge-bases',
      'analytics',
      'profile',
      'agents',
      'call-logs',
      'api-keys',
      'integrations',
      'auth',
      'voice-numbers',
      'messages',
      'simulator',
    ]) {
      expect(PREFIXES[prefix], prefix).toBeDefined();
    }
  });

  it('serves /healthz and /readyz outside /api/v1', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ok' });
  });

  it('publishes OpenAPI 3.1 with the bearer scheme and interactive docs', async () => {
    const spec = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(spec.openapi).toBe('3.1.0');
    expect(spec.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    // The dashboard's sign-in too: the session cookie (plain-named over http), with its CSRF header.
    expect(spec.components.securitySchemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'callforge_session' });
    expect(spec.components.securitySchemes.sessionCookie.description).toContain('X-CSRF-Token');
    expect(spec.security).toEqual([{ apiKey: [] }, { sessionCookie: [] }]);
    expect(spec.paths['/api/v1/profile'].get).toBeDefined();
    expect(spec.paths['/api/v1/api-keys'].post).toBeDefined();
    const docs = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toContain('text/html');
  });

  it('says what the items of every array schema are (Spectral: array-items)', async () => {
    const spec = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as object;
    const without: string[] = [];
    const visit = (node: unknown, where: string) => {
      if (Array.isArray(node)) node.forEach((child, i) => visit(child, `${where}/${i}`));
      else if (node && typeof node === 'object') {
        const record = node as Record<string, unknown>;
        if (record.type === 'array' && record.items === undefined && record.prefixItems === undefined) without.push(where);
        for (const [key, child] of Object.entries(record)) visit(child, `${where}/${key}`);
      }
    };
    visit(spec, '');
    expect(without).toEqual([]);
    const { paths } = spec as {
      paths: Record<
        string,
        { get: { responses: Record<string, { content: Record<string, { schema: { items: { properties: object } } }> }> } }
      >;
    };
    const records = paths['/api/v1/campaigns/{id}/compliance-records']!.get.responses['200']!.content['application/json']!.schema;
    expect(records.items.properties).toHaveProperty('hash');
  });

  it("brands the interactive docs as callforge's: title, tab icon and top-bar logo", async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/docs/' })).body;
    expect(html).toContain('<title>callforge API docs</title>');
    expect(html).toContain('href="./static/theme/favicon.svg"');
    expect(html).not.toContain('favicon-32x32.png');
    const icon = await t.app.inject({ method: 'GET', url: '/docs/static/theme/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toContain('image/svg+xml');
    expect(icon.body).toBe(FAVICON_SVG);
    const initializer = (await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })).body;
    expect(initializer).toContain(`data:image/svg+xml;base64,${Buffer.from(LOGO_SVG).toString('base64')}`);
  });
});

describe('errors (contract §1)', () => {
  const signup = (payload: string, contentType = 'application/json') =>
    t.app.inject({ method: 'POST', url: '/api/v1/auth/signup', payload, headers: { 'content-type': contentType } });

  it('refuses malformed JSON with 400 INVALID_JSON', async () => {
    const response = await signup('{"tenantName": "x",');
    expect(response.statusCode).toBe(400);
    expectErrorShape(response.json(), 400, 'INVALID_JSON');
  });

  it('refuses an unknown property with 400 naming it in details', async () => {
    const response = await signup(JSON.stringify({ tenantName: 'x', email: 'u@example.com', password: '12345678', plan: 'gold' }));
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expectErrorShape(body, 400, 'VALIDATION_FAILED');
    expect(body.details).toEqual([{ path: '/plan', message: 'is not an accepted property' }]);
    expect(body.message).toBe("Field 'plan' is not an accepted property.");
  });

  it('refuses a wrong type with 400 instead of coercing it', async () => {
    const response = await signup(JSON.stringify({ tenantName: 123, email: 'u@example.com', password: '12345678' }));
    expect(response.statusCode).toBe(400);
    expect(response.json().details).toEqual([{ path: '/tenantName', message: 'must be a string' }]);
  });

  it('refuses a missing required field and a bad format with a sentence naming the field', async () => {
    const missing = await signup(JSON.stringify({ email: 'u@example.com', password: '12345678' }));
    expect(missing.json().message).toBe("Field 'tenantName' is required.");
    const badEmail = await signup(JSON.stringify({ tenantName: 'x', email: 'not-an-email', password: '12345678' }));
    expect(badEmail.json().message).toBe("Field 'email' must be a valid email.");
  });

  it('validates query parameters with their own wording', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/api-keys?limit=201', headers: bearer(owner.token) });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toBe("Query parameter 'limit' must be at most 200.");
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/api-keys?limit=200', headers: bearer(owner.token) })).statusCode).toBe(200);
  });

  it('refuses an unsupported content type with 415', async () => {
    const response = await signup('tenantName=x', 'text/plain');
    expect(response.statusCode).toBe(415);
    expectErrorShape(response.json(), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses a body over the limit with 413', async () => {
    const response = await signup(JSON.stringify({ tenantName: 'x'.repeat(1_100_000) }));
    expect(response.statusCode).toBe(413);
    expectErrorShape(response.json(), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('refuses a malformed path id with 400, not 500', async () => {
    const response = await t.app.inject({ method: 'DELETE', url: '/api/v1/api-keys/not-a-uuid', headers: bearer(owner.token) });
    expect(response.statusCode).toBe(400);
    expect(response.json().message).toBe("Path parameter 'id' must be a valid uuid.");
  });

  it('echoes a caller x-request-id and uses it in the error body', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: { 'x-request-id': 'trace-123' } });
    expect(response.headers['x-request-id']).toBe('trace-123');
    expect(response.json().requestId).toBe('trace-123');
    const generated = await t.app.inject({ method: 'GET', url: '/healthz' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('API keys routes (contract §2)', () => {
  it('creates a key with webhook URL and agent, shows key and secret once, and lists without them', async () => {
    const agentId = (
      await t.app.inject({ method: 'POST', url: '/api/v1/agents', headers: bearer(owner.token), payload: { name: 'CRM agent' } })
    ).json().id;
    const created = await createKey(t.app, owner.token, {
      name: 'CRM',
      webhookUrl: 'https://crm.example.com/hooks',
      agentId,
      expiresAt: '2099-01-31',
    });
    expect(created).toMatchObject({
      name: 'CRM',
      webhookUrl: 'https://crm.example.com/hooks',
      agentId,
      status: 'ACTIVE',
      expiresAt: '2099-02-01T00:00:00.000Z',
    });
    expect(created.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(owner.token) });
    expect(list.statusCode).toBe(200);
    const listed = list.json().data.find((k: { id: string }) => k.id === created.id);
    expect(listed).toMatchObject({ id: created.id, keyPrefix: created.keyPrefix, webhookUrl: 'https://crm.example.com/hooks' });
    expect(JSON.stringify(list.json())).not.toContain(created.key);
    expect(listed.webhookSecret).toBeUndefined();
    expect(listed.key).toBeUndefined();
  });

  it('refuses an expiry in the past through the API', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/api-keys',
      headers: bearer(owner.token),
      payload: { name: 'old', expiresAt: '2001-01-01T00:00:00Z' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().details[0].path).toBe('/expiresAt');
  });

  it('keeps tenants apart: another tenant can neither list nor revoke a key (404)', async () => {
    const created = await createKey(t.app, owner.token);
    const other = await signUp(t.app);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(other.token) });
    expect(list.json().data.map((k: { id: string }) => k.id)).not.toContain(created.id);
    const revoke = await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${created.id}`, headers: bearer(other.token) });
    expect(revoke.statusCode).toBe(404);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(created.key) })).statusCode).toBe(200);
  });

  it('paginates keys with total, page and limit', async () => {
    const person = await signUp(t.app);
    for (let i = 0; i < 3; i++) await createKey(t.app, person.token, { name: `k${i}` });
    const page2 = (await t.app.inject({ method: 'GET', url: '/api/v1/api-keys?page=2&limit=2', headers: bearer(person.token) })).json();
    expect(page2).toMatchObject({ total: 3, page: 2, limit: 2 });
    expect(page2.data).toHaveLength(1);
    expect(page2.data[0].name).toBe('k0');
  });
});

describe('profile (seed §2.10)', () => {
  it('returns the envelope with tenant, onboarding flags and the wallet as a decimal string', async () => {
    const person = await signUp(t.app, { country: 'GB', currency: 'GBP' });
    const body = (await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(person.token) })).json();
    expect(body.success).toBe(true);
    expect(body.message).toBe('Profile retrieved successfully');
    expect(body.data.tenant).toMatchObject({ id: person.tenantId, country: 'GB', currency: 'GBP', status: 'ACTIVE' });
    expect(body.data.tenant.slug).toMatch(/^tenant-\d+/);
    expect(body.data.onboarding).toEqual({ hasIntegration: false, hasFlow: false, hasTestedCall: false, completed: false });
    expect(body.data.wallet).toMatchObject({ balance: '10.0000', currency: 'GBP', lowBalanceThreshold: '5.0000' });
  });

  it('gives new tenants the configured starting credit', async () => {
    const other = await (await import('./harness.ts')).startTestApp({ env: { STARTING_CREDIT: '2.5' } });
    try {
      const person = await signUp(other.app);
      const body = (await other.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(person.token) })).json();
      expect(body.data.wallet.balance).toBe('2.5000');
    } finally {
      await other.close();
    }
  });
});
