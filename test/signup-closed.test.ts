import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant } from '../src/modules/identity/service.ts';
import { startTestApp, type TestApp } from './harness.ts';

// An operator may close sign-up (SIGNUP_ENABLED=0): nobody signs up over HTTP, the first user
// included; tenants are then made with `callforge tenant create` and log in as usual.
describe('sign-up switched off', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SIGNUP_ENABLED: '0' } });
  });
  afterAll(() => t.close());

  it('refuses every sign-up with 403 SIGNUP_DISABLED, the first one included', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signup',
      payload: { tenantName: 'First', email: 'first@example.com', password: 'correct horse battery' },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({
      statusCode: 403,
      code: 'SIGNUP_DISABLED',
      message: 'Sign-up is switched off on this server; ask its operator for an account.',
    });
  });

  it("still lets an operator's tenant log in", async () => {
    await createTenant(t.runtime.db, t.runtime.config, {
      tenantName: 'Made by the CLI',
      email: 'ops@example.com',
      password: 'correct horse battery',
    });
    const login = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: 'ops@example.com', password: 'correct horse battery' },
    });
    expect(login.statusCode).toBe(200);
  });
});
