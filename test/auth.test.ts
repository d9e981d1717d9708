import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../src/platform/clock.ts';
import { createApiKey } from '../src/modules/identity/service.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Seed §5 and contract §2, row by row.
const clock = manualClock('2026-11-23T10:00:00.000Z');
let t: TestApp;
let owner: Awaited<ReturnType<typeof signUp>>;

beforeAll(async () => {
  t = await startTestApp({ clock });
  owner = await signUp(t.app);
});
afterAll(() => t.close());

const profile = (authorization?: string) =>
  t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: authorization === undefined ? {} : { authorization } });

async function expectError(response: Awaited<ReturnType<typeof profile>>, status: number, message: string) {
  expect(response.statusCode).toBe(status);
  const body = response.json();
  expect(body.message).toBe(message);
  expect(body.statusCode).toBe(status);
  expect(body.requestId).toBe(response.headers['x-request-id']);
}

describe('API keys (seed §5)', () => {
  it('accepts a valid key and names its tenant, with user null', async () => {
    const { key } = await createKey(t.app, owner.token);
    const response = await profile(`Bearer ${key}`);
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.success).toBe(true);
    expect(body.data.user).toBeNull();
    expect(body.data.tenant.id).toBe(owner.tenantId);
  });

  it('answers 401 "Invalid API key" for a key that does not exist', async () => {
    await expectError(await profile(`Bearer aok_${'A'.repeat(43)}`), 401, 'Invalid API key');
  });

  it('answers 401 "Invalid API key" for a mistyped key', async () => {
    const { key } = await createKey(t.app, owner.token);
    await expectError(await profile(`Bearer ${key.slice(0, -1)}`), 401, 'Invalid API key');
    await expectError(await profile(`Bearer ${key}x`), 401, 'Invalid API key');
    await expectError(await profile(`Bearer ${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`), 401, 'Invalid API key');
  });

  it('answers 401 "Invalid API key" when Bearer is given twice', async () => {
    const { key } = await createKey(t.app, owner.token);
    await expectError(await profile(`Bearer Bearer ${key}`), 401, 'Invalid API key');
    await expectError(await profile(`Bearer bearer ${key}`), 401, 'Invalid API key');
  });

  it('answers 401 "Invalid API key" at once after revocation, even for a cached key', async () => {
    const { id, key } = await createKey(t.app, owner.token);
    expect((await profile(`Bearer ${key}`)).statusCode).toBe(200);
    expect((await profile(`Bearer ${key}`)).statusCode).toBe(200);
    const revoke = await t.app.inject({ method: 'DELETE', url: `/api/v1/api-keys/${id}`, headers: bearer(owner.token) });
    expect(revoke.statusCode).toBe(204);
    expect(revoke.body).toBe('');
    await expectError(await profile(`Bearer ${key}`), 401, 'Invalid API key');
    // "All later requests with it fail with 401": a client that keeps trying, or a suite of
    // tests from one address, is not turned to 429 by the default limit of invalid keys.
    for (let request = 1; request <= 100; request++) expect((await profile(`Bearer ${key}`)).statusCode, `request ${request}`).toBe(401);
  });

  it('answers 401 "API key has expired" once the expiry has passed, also for a cached key', async () => {
    const expiresAt = new Date(clock.now().getTime() + 60_000).toISOString();
    const { key } = await createKey(t.app, owner.token, { expiresAt });
    expect((await profile(`Bearer ${key}`)).statusCode).toBe(200);
    clock.advance(59_999);
    expect((await profile(`Bearer ${key}`)).statusCode).toBe(200);
    clock.advance(1);
    await expectError(await profile(`Bearer ${key}`), 401, 'API key has expired');
  });

  it('answers 403 "Tenant context required" for a key without a tenant', async () => {
    const platformKey = await createApiKey(t.runtime, null, { name: 'operator' });
    await expectError(await profile(`Bearer ${platformKey.key}`), 403, 'Tenant context required');
  });

  it('answers 403 "API key authentication is not allowed for this route" on dashboard-only routes', async () => {
    const { key } = await createKey(t.app, owner.token);
    for (const [method, url] of [
      ['GET', '/api/v1/api-keys'],
      ['POST', '/api/v1/api-keys'],
      ['DELETE', '/api/v1/api-keys/00000000-0000-4000-8000-000000000000'],
      ['POST', '/api/v1/auth/password'],
      // Everything under the prefixes, also where no route is: not a 404 for a key.
      ['GET', '/api/v1/api-keys/00000000-0000-4000-8000-000000000000'],
      ['PUT', '/api/v1/api-keys'],
      ['GET', '/api/v1/integrations/whatsapp/anything'],
    ] as const) {
      const response = await t.app.inject({ method, url, headers: bearer(key), payload: method === 'POST' ? {} : undefined });
      await expectError(response, 403, 'API key authentication is not allowed for this route');
    }
  });

  it('checks a key before refusing it under a dashboard-only prefix where no route is: invalid or expired is a 401', async () => {
    const unknownKey = `aok_${'x'.repeat(43)}`;
    const { key: expiring } = await createKey(t.app, owner.token, { expiresAt: new Date(clock.now().getTime() + 1000).toISOString() });
    clock.advance(1000);
    const unrouted = '/api/v1/api-keys/00000000-0000-4000-8000-000000000000';
    await expectError(await t.app.inject({ method: 'GET', url: unrouted, headers: bearer(unknownKey) }), 401, 'Invalid API key');
    await expectError(await t.app.inject({ method: 'GET', url: unrouted, headers: bearer(expiring) }), 401, 'API key has expired');
    // Elsewhere an unknown path stays a 404 whoever asks.
    const elsewhere = await t.app.inject({ method: 'GET', url: '/api/v1/campaigns/x/nothing-here', headers: bearer(unknownKey) });
    expect(elsewhere.statusCode).toBe(404);
  });

  it('stores only a hash of the key and a display prefix', async () => {
    const created = await createKey(t.app, owner.token);
    expect(created.key).toMatch(/^aok_[A-Za-z0-9_-]{43}$/);
    expect(created.keyPrefix).toBe(created.key.slice(0, 12));
    const { rows } = await t.runtime.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [created.id]);
    const stored = JSON.stringify(rows[0]);
    expect(stored).not.toContain(created.key);
    expect(stored).not.toContain(created.key.slice(12));
  });
});

describe('sessions (contract §2)', () => {
  it('answers 401 "Authentication required" without an Authorization header', async () => {
    await expectError(await profile(), 401, 'Authentication required');
    await expectError(await profile(''), 401, 'Authentication required');
  });

  it('answers 401 "Invalid session token" for a token that is not a valid session', async () => {
    await expectError(await profile('Bearer not-a-jwt'), 401, 'Invalid session token');
    // One character inside the signature changed: every bit of it counts there, unlike the last
    // character's spare bits, which a decoder may ignore (the last two replaced by 'xx' left a token
    // ending 'xw' valid, about one run in a thousand).
    const at = owner.token.length - 10;
    const tampered = `${owner.token.slice(0, at)}${owner.token[at] === 'A' ? 'B' : 'A'}${owner.token.slice(at + 1)}`;
    await expectError(await profile(`Bearer ${tampered}`), 401, 'Invalid session token');
  });

  it('answers 401 "Invalid session token" once the session has expired', async () => {
    const { token } = await signUp(t.app);
    clock.advance(12 * 3600 * 1000 + 1000);
    await expectError(await profile(`Bearer ${token}`), 401, 'Invalid session token');
  });

  it('logs in with e-mail and password and returns the user in the profile', async () => {
    const person = await signUp(t.app, { name: 'Ada' });
    const login = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: person.email.toUpperCase(), password: person.password },
    });
    expect(login.statusCode).toBe(200);
    const session = login.json();
    expect(session.expiresIn).toBe(43200);
    const response = await profile(`Bearer ${session.accessToken}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().data.user).toMatchObject({ id: person.user.id, email: person.email, name: 'Ada', tenantId: person.tenantId });
  });

  it('refuses a wrong password with 401 and one message for unknown e-mails too', async () => {
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: owner.email, password: 'wrong password' },
    });
    const unknown = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'nobody@example.com', password: 'wrong password' },
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json().message).toBe(unknown.json().message);
  });

  it('refuses a second sign-up with the same e-mail with 409', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signup',
      payload: { tenantName: 'Again', email: owner.email, password: 'another password' },
    });
    expect(response.statusCode).toBe(409);
    expect(response.json().code).toBe('EMAIL_TAKEN');
  });

  it('changes the password for a session, after which only the new one logs in', async () => {
    const person = await signUp(t.app);
    const change = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/password',
      headers: bearer(person.token),
      payload: { currentPassword: person.password, newPassword: 'a brand new secret' },
    });
    expect(change.statusCode).toBe(204);
    const old = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: person.email, password: person.password },
    });
    expect(old.statusCode).toBe(401);
    const fresh = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: person.email, password: 'a brand new secret' },
    });
    expect(fresh.statusCode).toBe(200);
  });
});
