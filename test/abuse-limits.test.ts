import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.ts';
import { manualClock } from '../src/platform/clock.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// Small limits so a test reaches them in a few requests; each test speaks from its own address.
const clock = manualClock('2026-03-02T09:00:00.000Z');
let t: TestApp;
/** A second API process on the same database: memory of its own, counters shared. */
let second: FastifyInstance;
beforeAll(async () => {
  t = await startTestApp({
    clock,
    env: {
      LOGIN_FAILURES_PER_ACCOUNT: '3',
      LOGIN_FAILURES_PER_ADDRESS: '5',
      INVALID_API_KEYS_PER_ADDRESS: '4',
      AUTH_FAILURE_WINDOW_SECONDS: '900',
      WEBHOOK_RATE_LIMIT_PER_SECOND: '3',
    },
  });
  second = await buildApp(t.runtime);
  await second.ready();
});
afterAll(async () => {
  await second?.close();
  await t?.close();
});

const login = (app: FastifyInstance, from: string, email: string, password: string) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: from, payload: { email, password } });

const RATE_LIMITED = { statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' };

describe('failed sign-ins', () => {
  it('refuses an account after LOGIN_FAILURES_PER_ACCOUNT failures, even with the right password, until the window ends', async () => {
    const owner = await signUp(t.app);
    for (let attempt = 1; attempt <= 3; attempt++) {
      // From different addresses: the account's own counter refuses.
      const wrong = await login(t.app, `198.51.100.${attempt}`, owner.email, 'wrong password');
      expect(wrong.statusCode, `attempt ${attempt}`).toBe(401);
    }
    const refused = await login(t.app, '198.51.100.9', owner.email, owner.password);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('900');
    expect(refused.json()).toMatchObject({
      ...RATE_LIMITED,
      message: 'Too many failed sign-ins for this account or from this address; try again in 15 minutes, or reset the password.',
    });
    // The other API process counts the same failures; the e-mail's case does not matter.
    const elsewhere = await login(second, '198.51.100.10', owner.email.toUpperCase(), owner.password);
    expect(elsewhere.statusCode).toBe(429);

    clock.advance(600_000);
    expect((await login(t.app, '198.51.100.9', owner.email, owner.password)).headers['retry-after']).toBe('300');
    clock.advance(300_000);
    expect((await login(t.app, '198.51.100.9', owner.email, owner.password)).statusCode).toBe(200);
  });

  it('refuses an address after LOGIN_FAILURES_PER_ADDRESS failures across accounts; a success clears the account counter only', async () => {
    const owner = await signUp(t.app);
    const from = '203.0.113.20';
    // Two failures then a success: the account starts again, the address keeps its two.
    for (let i = 0; i < 2; i++) expect((await login(t.app, from, owner.email, 'nope')).statusCode).toBe(401);
    expect((await login(t.app, from, owner.email, owner.password)).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) expect((await login(t.app, from, owner.email, 'nope')).statusCode).toBe(401);
    expect((await login(t.app, from, 'nobody@example.com', 'nope')).statusCode).toBe(401); // fifth from the address
    const refused = await login(t.app, from, owner.email, owner.password);
    expect(refused).toMatchObject({ statusCode: 429 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another address still signs the same account in (it has two failures of three).
    expect((await login(t.app, '203.0.113.21', owner.email, owner.password)).statusCode).toBe(200);
  });
});

describe('invalid API keys', () => {
  it('refuses an address after INVALID_API_KEYS_PER_ADDRESS invalid keys, in every process, with Retry-After', async () => {
    const owner = await signUp(t.app);
    const { key } = await createKey(t.app, owner.token);
    const from = '192.0.2.44';
    const call = (app: FastifyInstance, token: string, address = from) =>
      app.inject({ method: 'GET', url: '/api/v1/agents', remoteAddress: address, headers: bearer(token) });
    const guess = `aok_${'A'.repeat(43)}`;
    for (let attempt = 1; attempt <= 4; attempt++) expect((await call(t.app, guess)).statusCode, `attempt ${attempt}`).toBe(401);
    const refused = await call(t.app, guess);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('900');
    expect(refused.json()).toMatchObject({
      ...RATE_LIMITED,
      message: 'Too many requests with an invalid API key from this address; check the key, and try again in 15 minutes.',
    });
    // A valid key from that address still works: clients behind one NAT or proxy are not locked out by another's mistakes.
    expect((await call(t.app, key)).statusCode).toBe(200);
    expect((await call(t.app, guess)).statusCode).toBe(429);
    // The other process refuses it at its first failure from that address (the count is shared).
    expect((await call(second, guess)).statusCode).toBe(429);
    // Other addresses are not affected.
    expect((await call(t.app, key, '192.0.2.45')).statusCode).toBe(200);
    expect((await call(t.app, guess, '192.0.2.45')).statusCode).toBe(401);
    clock.advance(900_000);
    expect((await call(t.app, key)).statusCode).toBe(200);
  });
});

describe('clients behind a proxy (TRUST_PROXY)', () => {
  const guess = `aok_${'B'.repeat(43)}`;
  const call = (app: FastifyInstance, remoteAddress: string, forwardedFor?: string) =>
    app.inject({
      method: 'GET',
      url: '/api/v1/agents',
      remoteAddress,
      headers: { ...bearer(guess), ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    });

  it('counts each client named by a trusted proxy on its own, and believes no one else', async () => {
    const behindProxy = await buildApp({ ...t.runtime, config: { ...t.runtime.config, trustProxy: ['192.0.2.10'] } });
    await behindProxy.ready();
    try {
      for (let attempt = 1; attempt <= 4; attempt++) expect((await call(behindProxy, '192.0.2.10', '198.51.100.1')).statusCode).toBe(401);
      expect((await call(behindProxy, '192.0.2.10', '198.51.100.1')).statusCode).toBe(429);
      // Another client through the same proxy, and the proxy's own address, are not refused.
      expect((await call(behindProxy, '192.0.2.10', '198.51.100.2')).statusCode).toBe(401);
      expect((await call(behindProxy, '192.0.2.10')).statusCode).toBe(401);
      // An address that is not the proxy cannot name another client: its own address counts.
      for (let attempt = 1; attempt <= 4; attempt++)
        expect((await call(behindProxy, '192.0.2.11', `198.51.100.${10 + attempt}`)).statusCode).toBe(401);
      expect((await call(behindProxy, '192.0.2.11', '198.51.100.99')).statusCode).toBe(429);
    } finally {
      await behindProxy.close();
    }
  });

  it('ignores X-Forwarded-For when no proxy is trusted (the default), so a client cannot escape its count', async () => {
    for (let attempt = 1; attempt <= 4; attempt++) expect((await call(t.app, '192.0.2.20', `203.0.113.${attempt}`)).statusCode).toBe(401);
    expect((await call(t.app, '192.0.2.20', '203.0.113.99')).statusCode).toBe(429);
  });
});

describe('provider webhooks', () => {
  it('limits a provider webhook per address (WEBHOOK_RATE_LIMIT_PER_SECOND), in the error shape with Retry-After', async () => {
    // Unsigned, so each one that passes the limit is refused by the signature check (403).
    const send = (address: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/telephony/twilio/status',
        remoteAddress: address,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'CallSid=CA1&CallStatus=completed',
      });
    // Twenty at once: at most three a second pass, whatever the machine's speed (twenty would take seven seconds).
    const answers = await Promise.all(Array.from({ length: 20 }, () => send('198.18.0.7')));
    const limited = answers.filter((answer) => answer.statusCode === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.json()).toMatchObject({ ...RATE_LIMITED, message: expect.stringContaining('at most 3 a second') });
    expect(limited[0]!.headers['retry-after']).toBeDefined();
    expect(answers.filter((answer) => answer.statusCode !== 429).every((answer) => answer.statusCode === 403)).toBe(true);
    // Another address has its own count.
    expect((await send('198.18.0.8')).statusCode).toBe(403);
  });
});

describe('changing a password', () => {
  it('ends every other session of the user and keeps the one that changed it', async () => {
    const owner = await signUp(t.app);
    const other = (await login(t.app, '198.51.100.77', owner.email, owner.password)).json().accessToken as string;
    const keys = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(token) });
    expect((await keys(other)).statusCode).toBe(200);

    const changePassword = (currentPassword: string, newPassword: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/password',
        headers: bearer(owner.token),
        payload: { currentPassword, newPassword },
      });
    expect((await changePassword(owner.password, 'a new and longer passphrase')).statusCode).toBe(204);
    expect((await keys(owner.token)).statusCode).toBe(200);
    const ended = await keys(other);
    expect(ended.statusCode).toBe(401);
    expect(ended.json()).toMatchObject({ code: 'INVALID_SESSION' });
    // In the other API process too: the version is in the database.
    expect((await second.inject({ method: 'GET', url: '/api/v1/api-keys', headers: bearer(other) })).statusCode).toBe(401);

    // A new sign-in works with the new password only, and survives until the next change.
    expect((await login(t.app, '198.51.100.78', owner.email, owner.password)).statusCode).toBe(401);
    const fresh = (await login(t.app, '198.51.100.78', owner.email, 'a new and longer passphrase')).json().accessToken as string;
    expect((await keys(fresh)).statusCode).toBe(200);
    expect((await changePassword('a new and longer passphrase', 'yet another passphrase here')).statusCode).toBe(204);
    expect((await keys(fresh)).statusCode).toBe(401);
    expect((await keys(owner.token)).statusCode).toBe(200);
  });
});
