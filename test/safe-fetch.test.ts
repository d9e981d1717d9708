import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem, safeFetch, savedUrlProblem, UnsafeUrlError } from '../src/platform/safe-fetch.ts';
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
/** The fixture's options with every name resolving to `addresses`. */
const resolvingTo = (...addresses: [string, 4 | 6][]) => ({
  ...fixture,
  lookup: async (): Promise<LookupAddress[]> => addresses.map(([address, family]) => ({ address, family })),
});
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
    // Other spellings of loopback: the URL parser normalises the IPv4 ones, the rule reads the IPv6 ones.
    ['http://[::127.0.0.1]/', 'loopback address (IPv4-compatible 127.0.0.1)'],
    ['http://[::ffff:7f00:1]/', 'loopback address (IPv4-mapped 127.0.0.1)'],
    ['http://[::ffff:0:7f00:1]/', 'loopback address (IPv4-translated 127.0.0.1)'],
    ['http://2130706433/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://0x7f000001/', 'loopback'],
    ['http://127.1/', 'loopback'],
    ['http://0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    // Transition prefixes that carry a private IPv4 address, and the ones that route nowhere public.
    ['http://[64:ff9b::10.0.0.1]/', 'private address (NAT64 10.0.0.1)'],
    ['http://[64:ff9b::169.254.169.254]/', 'cloud metadata address (NAT64 169.254.169.254)'],
    ['http://[64:ff9b:1::a00:1]/', 'local-use NAT64'],
    ['http://[2002:c0a8:101::1]/', 'private address (6to4 192.168.1.1)'],
    ['http://[2002:7f00:1::]/', 'loopback address (6to4 127.0.0.1)'],
    ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo'],
    // Other ranges that are not the public internet.
    ['http://[fc00::1]/', 'unique-local'],
    ['http://[fec0::1]/', 'site-local'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://100.64.0.1/', 'carrier-grade NAT'],
    ['http://100.100.100.200/', 'cloud metadata'],
    ['http://198.18.0.1/', 'reserved'],
    ['http://192.0.0.8/', 'reserved'],
    ['http://240.0.0.1/', 'reserved'],
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

  it('classifies public addresses as fetchable, in every spelling, and judges an embedded IPv4 address by itself', () => {
    expect(addressProblem('93.184.216.34')).toBeNull();
    expect(addressProblem('2606:2800:220:1:248:1893:25c8:1946')).toBeNull();
    expect(addressProblem('::ffff:93.184.216.34')).toBeNull();
    expect(addressProblem('64:ff9b::93.184.216.34')).toBeNull(); // NAT64 of a public address reaches that address
    expect(addressProblem('2002:5db8:d822::1')).toBeNull(); // 6to4 of 93.184.216.34
    // Spellings the resolver might hand back, not only the URL parser's.
    expect(addressProblem('2130706433')).toContain('loopback');
    expect(addressProblem('0x7f.1')).toContain('loopback');
    expect(addressProblem('0177.0.0.1')).toContain('loopback');
    expect(addressProblem('::7f00:1')).toContain('loopback');
  });

  it('refuses a name whose addresses are private in any spelling, at connect time', async () => {
    const spelled = resolvingTo(['::ffff:7f00:1', 6], ['64:ff9b::a00:1', 6]);
    expect(await refusal(safeFetch('http://sneaky.example.test/', spelled))).toMatchObject({
      reason: 'ADDRESS',
      message:
        'Refused http://sneaky.example.test: sneaky.example.test resolves only to addresses that may not be fetched (loopback address, private address).',
    });
  });

  it('connects a name with a public and a private address only to the public one (a rebinding answer gains nothing)', async () => {
    // 127.0.0.1 is allowed here, so it stands for the public address; 10.1.2.3 is never tried.
    const mixed = resolvingTo(['10.1.2.3', 4], ['127.0.0.1', 4]);
    const response = await safeFetch(`http://mixed.example.test:${port}/page`, mixed);
    expect(response.status).toBe(200);
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

describe('the check when a URL is saved', () => {
  const rule = { allowPrivate: false, lookup: fixture.lookup };

  it.each([
    ['http://127.0.0.1/hook', '127.0.0.1 is a loopback address'],
    ['http://0x7f.1/hook', '127.0.0.1 is a loopback address'],
    ['https://[::127.0.0.1]/hook', '::7f00:1 is a loopback address (IPv4-compatible 127.0.0.1)'],
    ['https://[64:ff9b::192.168.0.1]/', '64:ff9b::c0a8:1 is a private address (NAT64 192.168.0.1)'],
    ['http://localhost:3000/hook', 'localhost is this machine (a loopback address)'],
    ['http://api.localhost/hook', 'api.localhost is this machine (a loopback address)'],
    ['http://intranet.example.test/hook', 'intranet.example.test resolves only to addresses that may not be fetched (private address)'],
  ])('refuses %s', async (url, problem) => {
    expect(await savedUrlProblem(url, rule)).toBe(problem);
  });

  it('accepts a public address, a name with a public address, and a name that does not resolve (delivery decides)', async () => {
    expect(await savedUrlProblem('https://93.184.216.34/hook', rule)).toBeNull();
    const lookup = async (host: string): Promise<LookupAddress[]> =>
      host === 'public.example.test' ? [{ address: '93.184.216.34', family: 4 }] : Promise.reject(new Error('ENOTFOUND'));
    expect(await savedUrlProblem('https://public.example.test/hook', { ...rule, lookup })).toBeNull();
    expect(await savedUrlProblem('https://nowhere.example.test/hook', { ...rule, lookup })).toBeNull();
    // A resolver that never answers is given up on.
    expect(
      await savedUrlProblem('https://slow.example.test/', { ...rule, lookup: () => new Promise(() => undefined), timeoutMs: 50 }),
    ).toBeNull();
  });

  it('lets ALLOW_PRIVATE_URLS and the allowed addresses through', async () => {
    expect(await savedUrlProblem('http://127.0.0.1/hook', { allowPrivate: true })).toBeNull();
    expect(await savedUrlProblem('http://docs.example.test/', { ...rule, allowedAddresses: ['127.0.0.1'] })).toBeNull();
  });
});
