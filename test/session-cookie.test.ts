import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildApp } from '../src/app.ts';
import { BROWSER_CALL_PROTOCOL } from '../src/modules/media/schemas.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

// The dashboard's session lives in an httpOnly, SameSite=Strict cookie that page scripts cannot
// read; a cookie-signed request that changes something needs the session's CSRF token, a
// cookie-signed WebSocket our own Origin. Bearer tokens and API keys work as before.
let t: TestApp;
let origin: string;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
  origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => t.close());

type Reply = Awaited<ReturnType<TestApp['app']['inject']>>;
interface SetCookie {
  name: string;
  value: string;
  path?: string;
  maxAge?: number;
  expires?: Date;
  httpOnly?: boolean;
  secure?: boolean;
  sameSite?: string;
}
const cookiesOf = (response: Reply) => Object.fromEntries((response.cookies as SetCookie[]).map((cookie) => [cookie.name, cookie]));

/** Logs in as a fresh owner, as the dashboard does: the cookies the service set, and the body. */
async function logIn(app = t.app) {
  const owner = await signUp(app);
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: owner.email, password: owner.password },
  });
  expect(response.statusCode).toBe(200);
  const cookies = cookiesOf(response);
  return { owner, response, cookies, session: cookies.callforge_session!.value, csrf: cookies.callforge_csrf!.value };
}

const cookieHeader = (session: string) => ({ cookie: `callforge_session=${session}` });
const createAgent = (headers: Record<string, string>, name = `Agent ${Math.random()}`) =>
  t.app.inject({ method: 'POST', url: '/api/v1/agents', headers, payload: { name } });

function expectError(response: Reply, status: number, code: string) {
  expect(response.statusCode).toBe(status);
  const body = response.json();
  expect(body).toMatchObject({ statusCode: status, code, requestId: response.headers['x-request-id'] });
  expect(typeof body.message).toBe('string');
  return body as { message: string };
}

describe('the session cookie', () => {
  it('is set on log-in and sign-up, httpOnly and SameSite=Strict, while the body keeps the token for API clients', async () => {
    const { response, cookies, session, csrf } = await logIn();
    expect(response.json()).toMatchObject({ accessToken: session, expiresIn: 43200, user: { email: expect.any(String) } });
    expect(cookies.callforge_session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/', maxAge: 43200 });
    // Over plain http (PUBLIC_URL's default) a Secure cookie would be dropped by the browser.
    expect(cookies.callforge_session!.secure).toBeFalsy();
    // The CSRF token is for the page to read; it is not the session.
    expect(cookies.callforge_csrf).toMatchObject({ sameSite: 'Strict', path: '/', maxAge: 43200 });
    expect(cookies.callforge_csrf!.httpOnly).toBeFalsy();
    expect(csrf).not.toContain(session);

    const signup = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signup',
      payload: { tenantName: 'Cookie Co', email: `cookie-${Date.now()}@example.com`, password: 'correct horse battery' },
    });
    expect(signup.statusCode).toBe(201);
    expect(cookiesOf(signup).callforge_session).toMatchObject({ value: signup.json().accessToken, httpOnly: true, sameSite: 'Strict' });
  });

  it('signs in safe requests by itself', async () => {
    const { owner, session } = await logIn();
    const profile = await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: cookieHeader(session) });
    expect(profile.statusCode).toBe(200);
    expect(profile.json().data.user.id).toBe(owner.user.id);
  });

  it('answers 403 to a request that changes something without the CSRF token of its session, and accepts it with the token', async () => {
    const { session, csrf } = await logIn();
    const other = await logIn();
    const missing = expectError(await createAgent(cookieHeader(session)), 403, 'CSRF_TOKEN_INVALID');
    expect(missing.message).toContain('X-CSRF-Token');
    expect(missing.message).toContain('callforge_csrf');
    expectError(await createAgent({ ...cookieHeader(session), 'x-csrf-token': `${csrf}x` }), 403, 'CSRF_TOKEN_INVALID');
    // Another session's token (an attacker's own) does not fit this session.
    expectError(await createAgent({ ...cookieHeader(session), 'x-csrf-token': other.csrf }), 403, 'CSRF_TOKEN_INVALID');
    expect((await createAgent({ ...cookieHeader(session), 'x-csrf-token': csrf })).statusCode).toBe(201);
    // Every unsafe method, not only POST.
    const remove = await t.app.inject({ method: 'DELETE', url: `/api/v1/agents/${crypto.randomUUID()}`, headers: cookieHeader(session) });
    expectError(remove, 403, 'CSRF_TOKEN_INVALID');
  });

  it('leaves Bearer tokens and API keys as they were: no CSRF token asked', async () => {
    const { owner } = await logIn();
    expect((await createAgent(bearer(owner.token))).statusCode).toBe(201);
    const { key } = await createKey(t.app, owner.token);
    expect((await createAgent(bearer(key))).statusCode).toBe(201);
    // The Authorization header wins over a cookie of another session the same client holds.
    const stranger = await logIn();
    expect((await createAgent({ ...bearer(key), ...cookieHeader(stranger.session) })).statusCode).toBe(201);
  });

  it('is cleared and refused when its session is no longer valid', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: cookieHeader('not-a-session') });
    expectError(response, 401, 'INVALID_SESSION');
    const cleared = cookiesOf(response);
    for (const name of ['callforge_session', 'callforge_csrf']) {
      expect(cleared[name]!.value).toBe('');
      expect(cleared[name]!.expires!.getTime()).toBeLessThan(Date.now());
    }
  });
});

describe('log-out', () => {
  it('ends the session (its token is refused, as a cookie or as a Bearer) and clears the cookies', async () => {
    const { session, csrf } = await logIn();
    expectError(
      await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: cookieHeader(session) }),
      403,
      'CSRF_TOKEN_INVALID',
    );
    const out = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { ...cookieHeader(session), 'x-csrf-token': csrf },
    });
    expect(out.statusCode).toBe(204);
    const cleared = cookiesOf(out);
    expect(cleared.callforge_session).toMatchObject({ value: '', httpOnly: true });
    expect(cleared.callforge_csrf).toMatchObject({ value: '' });
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: cookieHeader(session) }), 401, 'INVALID_SESSION');
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(session) }), 401, 'INVALID_SESSION');
  });

  it('works for a Bearer session too, only for that session, and not for an API key', async () => {
    const first = await logIn();
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: first.owner.email, password: first.owner.password },
    });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: bearer(first.session) })).statusCode).toBe(204);
    expectError(await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(first.session) }), 401, 'INVALID_SESSION');
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/profile', headers: bearer(second.json().accessToken) })).statusCode).toBe(
      200,
    );
    const { key } = await createKey(t.app, second.json().accessToken);
    expectError(await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: bearer(key) }), 403, 'API_KEY_NOT_ALLOWED');
  });
});

/** The upgrade's answer: status and error body (an accepted upgrade would be a failure here). */
function upgrade(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const socket = new WebSocket(url, [BROWSER_CALL_PROTOCOL], { headers });
    socket.once('open', () => reject(new Error('the upgrade was accepted')));
    socket.once('error', reject);
    socket.once('unexpected-response', (request, response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) });
      });
    });
  });
}

describe('a WebSocket signed in by the cookie', () => {
  // agentId=nope: an upgrade that passes authentication stops at the query's 400, before any call starts.
  const url = () => `${origin.replace(/^http/, 'ws')}/api/v1/test-chats/voice?agentId=nope`;

  it('is let through from our own origin', async () => {
    const { session } = await logIn();
    const answer = await upgrade(url(), { ...cookieHeader(session), origin });
    expect(answer).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
  });

  it('is refused from another origin, or from none (cross-site WebSocket hijacking)', async () => {
    const { session } = await logIn();
    const crossSite = await upgrade(url(), { ...cookieHeader(session), origin: 'https://evil.example' });
    expect(crossSite).toMatchObject({ status: 403, body: { code: 'CROSS_ORIGIN_WEBSOCKET', statusCode: 403 } });
    expect(crossSite.body.message).toContain('https://evil.example');
    expect(await upgrade(url(), cookieHeader(session))).toMatchObject({ status: 403, body: { code: 'CROSS_ORIGIN_WEBSOCKET' } });
  });
});

describe('content security policy', () => {
  it('is sent with the API docs as with the dashboard, and the docs keep no key in the browser', async () => {
    for (const url of ['/docs/', '/docs', '/']) {
      const page = await t.app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
      if (page.statusCode === 302) continue;
      expect(page.statusCode, url).toBe(200);
      const policy = String(page.headers['content-security-policy']);
      expect(policy, url).toContain("script-src 'self'");
      expect(policy, url).toContain("frame-ancestors 'none'");
      expect(policy, url).toContain("object-src 'none'");
      expect(page.headers['x-content-type-options'], url).toBe('nosniff');
    }
    const initializer = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(initializer.body).toContain('"persistAuthorization":false');
  });
});

describe('over https', () => {
  it('names the cookies __Host- and marks them Secure', async () => {
    // The same runtime and database behind an app configured for an https address.
    const secure = await buildApp({ ...t.runtime, config: { ...t.runtime.config, publicUrl: 'https://callforge.example.com' } });
    try {
      const owner = await signUp(secure);
      const response = await secure.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: owner.email, password: owner.password },
      });
      const cookies = cookiesOf(response);
      expect(cookies['__Host-callforge_session']).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict', path: '/' });
      expect(cookies['__Host-callforge_csrf']).toMatchObject({ secure: true, sameSite: 'Strict', path: '/' });
      expect(cookies.callforge_session).toBeUndefined();
      const session = cookies['__Host-callforge_session']!.value;
      const profile = await secure.inject({
        method: 'GET',
        url: '/api/v1/profile',
        headers: { cookie: `__Host-callforge_session=${session}` },
      });
      expect(profile.statusCode).toBe(200);
      // The plain name is not read over https: a subdomain or plain-http page could have planted it.
      const planted = await secure.inject({ method: 'GET', url: '/api/v1/profile', headers: cookieHeader(session) });
      expectError(planted, 401, 'AUTHENTICATION_REQUIRED');
    } finally {
      await secure.close();
    }
  });
});
