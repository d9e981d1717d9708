import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';

// Issue 8: the API process serves the dashboard at / to browsers, and nothing else changes for
// API clients: / still describes the service as JSON and unknown paths keep the gateway's 404.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('serving the dashboard', () => {
  it('answers the page to a browser, with a strict content security policy, and JSON to anyone else', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toMatch(/<script type="module" src="\/assets\/app\.js\?v=[\w-]+"><\/script>/);
    const json = await t.app.inject({ method: 'GET', url: '/', headers: { accept: 'application/json' } });
    expect(json.json()).toMatchObject({ service: 'callforge', api: '/api/v1', dashboard: '/' });
    const unknown = await t.app.inject({ method: 'GET', url: '/campaigns', headers: { accept: 'text/html' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().message).toBe('No gateway route for GET /campaigns');
  });

  it('serves the script and the style gzipped when asked, cacheable, and 304 for a known version', async () => {
    for (const [path, type] of [
      ['/assets/app.js', 'text/javascript; charset=utf-8'],
      ['/assets/app.css', 'text/css; charset=utf-8'],
    ] as const) {
      const plain = await t.app.inject({ method: 'GET', url: path });
      expect(plain.statusCode).toBe(200);
      expect(plain.headers['content-type']).toBe(type);
      expect(plain.headers['cache-control']).toContain('immutable');
      const zipped = await t.app.inject({ method: 'GET', url: path, headers: { 'accept-encoding': 'gzip, br' } });
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(zipped.rawPayload).toString()).toBe(plain.body);
      const again = await t.app.inject({ method: 'GET', url: path, headers: { 'if-none-match': plain.headers.etag as string } });
      expect(again.statusCode).toBe(304);
    }
  });

  it("serves the browser call's capture worklet as a script of its own, revalidated by its etag", async () => {
    const worklet = await t.app.inject({ method: 'GET', url: '/assets/capture-worklet.js' });
    expect(worklet.statusCode).toBe(200);
    expect(worklet.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(worklet.headers['cache-control']).toBe('no-cache');
    expect(worklet.body).toContain('registerProcessor("callforge-capture"');
    // Its own code only: the dashboard's script is not bundled into it.
    expect(worklet.body.length).toBeLessThan(2000);
    const again = await t.app.inject({
      method: 'GET',
      url: '/assets/capture-worklet.js',
      headers: { 'if-none-match': worklet.headers.etag as string },
    });
    expect(again.statusCode).toBe(304);
  });
});
