import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem, safeFetch, UnsafeUrlError } from '../src/platform/safe-fetch.ts';
import { listenOnLoopback } from '../src/providers/fake-server.ts';

// The address rule is on in every test here (allowPrivate: false). The fixture server listens on
// 127.0.0.1, which only `allowedAddresses` opens, so the redirect cases can start from it.
let origin: string;
let port: string;
let close: () => Promise<void>;
const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/page': (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>Opening hours</h1>'),
  '/to-metadata': (_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end(),
  '/to-private-name': (_req, res) => res.writeHead(301, { location: `http://intranet.example.test:${port}/page` }).end(),
  '/to-page': (_req, res) => res.writeHead(307, { location: '/page' }).end(),
  '/big': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(2048)),
  '/pdf': (_req, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end('%PDF-1.7'),
  '/slow': () => undefined, // never answers
};

beforeAll(async () => {
  const server = createServer((req, res) => {
    const chain = /^\/chain\/(\d+)$/.exec(req.url ?? '');
    if (chain && Number(chain[1]) < 5) return void res.writeHead(302, { location: `/chain/${Number(chain[1]) + 1}` }).end();
    if (chain) return void res.writeHead(200, { 'content-type': 'text/plain' }).end('end of the chain');
    (routes[req.url ?? ''] ?? ((_q: IncomingMessage, r: ServerResponse) => r.writeHead(404).end()))(req, res);
  });
  ({ url: origin, close } = await listenOnLoopback(server));
  port = new URL(origin).port;
});
afterAll(() => close());

/** A public-looking name for the fixture: it resolves to 127.0.0.1, which these calls allow. */
const names: Record<string, LookupAddress[]> = {
  'docs.example.test': [{ address: '127.0.0.1', family: 4 }],
  'intranet.example.test': [{ address: '10.1.2.3', family: 4 }],
};
const fixture = {
  allowPrivate: false,
  allowedAddresses: ['127.0.0.1'],
  lookup: async (host: string) => names[host] ?? Promise.reject(new Error(`getaddrinfo ENOTFOUND ${host}`)),
};
const publicLooking = (path: string) => `http://docs.example.test:${port}${path}`;

async function refusal(promise: Promise<unknown>): Promise<UnsafeUrlError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnsafeUrlError);
  return error as UnsafeUrlError;
}

describe('the address rule', () => {
  it.each([
    ['http://127.0.0.1/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://10.0.0.1/', 'private'],
    ['http://192.168.1.20/', 'private'],
    ['http://172.16.0.1/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
    ['http://169.254.10.1/', 'link-local'],
    ['http://[fd12:3456::1]/', 'unique-local'],
    ['http://[fe80::1]/', 'link-local'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://0.0.0.0/', 'unspecified'],
  ])('refuses %s (%s) before connecting', async (url, kind) => {
    const error = await refusal(safeFetch(url, { allowPrivate: false }));
    expect(error.reason).toBe('ADDRESS');
    expect(error.message).toContain(kind);
  });

  it('refuses a name that resolves to loopback, on the address the connection would use', async () => {
    const error = await refusal(safeFetch(`http://localhost:${port}/page`, { allowPrivate: false }));
    expect(error).toMatchObject({
      reason: 'ADDRESS',
      message: 'Refused http://localhost:' + port + ': localhost resolves only to addresses that may not be fetched (loopback address).',
    });
  });

  it('refuses a public-looking URL that redirects to a private one, on every hop', async () => {
    expect(await refusal(safeFetch(publicLooking('/to-metadata'), fixture))).toMatchObject({
      reason: 'ADDRESS',
      message: expect.stringContaining('169.254.169.254 is a cloud metadata address'),
    });
    expect(await refusal(safeFetch(publicLooking('/to-private-name'), fixture))).toMatchObject({
      reason: 'ADDRESS',
      message: expect.stringContaining('intranet.example.test resolves only to addresses that may not be fetched (private address)'),
    });
  });

  it('classifies public addresses as fetchable', () => {
    expect(addressProblem('93.184.216.34')).toBeNull();
    expect(addressProblem('2606:2800:220:1:248:1893:25c8:1946')).toBeNull();
  });

  it('lets ALLOW_PRIVATE_URLS reach loopback fixtures', async () => {
    const response = await safeFetch(`${origin}/page`, { allowPrivate: true });
    expect(response).toMatchObject({ status: 200, contentType: 'text/html' });
    expect(response.body.toString()).toBe('<h1>Opening hours</h1>');
  });
});

describe('bounds', () => {
  it('follows a redirect to an allowed address and reports the final URL', async () => {
    const response = await safeFetch(publicLooking('/to-page'), fixture);
    expect(response).toMatchObject({ status: 200, url: publicLooking('/page') });
  });

  it('follows at most maxRedirects (default 5) redirects', async () => {
    // /chain/0 redirects 5 times before it answers.
    expect((await safeFetch(publicLooking('/chain/0'), fixture)).body.toString()).toBe('end of the chain');
    expect(await refusal(safeFetch(publicLooking('/chain/0'), { ...fixture, maxRedirects: 4 }))).toMatchObject({
      reason: 'REDIRECTS',
      message: expect.stringContaining('More than 4 redirects'),
    });
  });

  it('refuses a body over maxBytes, a content type not accepted, and a server that does not answer in time', async () => {
    expect((await refusal(safeFetch(publicLooking('/big'), { ...fixture, maxBytes: 2047 }))).reason).toBe('TOO_LARGE');
    expect((await safeFetch(publicLooking('/big'), { ...fixture, maxBytes: 2048 })).body.length).toBe(2048);
    expect(await refusal(safeFetch(publicLooking('/page'), { ...fixture, accept: ['application/pdf'] }))).toMatchObject({
      reason: 'CONTENT_TYPE',
      message: expect.stringContaining('text/html'),
    });
    expect((await safeFetch(publicLooking('/pdf'), { ...fixture, accept: ['application/pdf'] })).contentType).toBe('application/pdf');
    expect((await refusal(safeFetch(publicLooking('/slow'), { ...fixture, timeoutMs: 200 }))).reason).toBe('TIMEOUT');
  });

  it('refuses schemes other than http and https', async () => {
    expect((await refusal(safeFetch('file:///etc/passwd', { allowPrivate: true }))).reason).toBe('SCHEME');
    expect((await refusal(safeFetch('ftp://example.com/x', { allowPrivate: true }))).reason).toBe('SCHEME');
  });
});
