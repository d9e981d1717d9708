import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, fetch } from 'undici';
import { appError } from './errors.ts';

/**
 * The one HTTP client for URLs that users give us (knowledge sources, webhooks). It refuses
 * loopback, private, link-local, unique-local, cloud-metadata and other non-public addresses:
 * for IP literals before connecting, for names at connect time on the very address the socket
 * uses (so a name cannot resolve to a public address when checked and a private one when used),
 * and again on every redirect (at most `maxRedirects`). It bounds time and size and can insist
 * on content types.
 */
export interface SafeFetchOptions {
  /** ALLOW_PRIVATE_URLS: lifts the address rule (local testing only). */
  allowPrivate: boolean;
  /** Private addresses allowed all the same (an operator's own intranet server). */
  allowedAddresses?: readonly string[];
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  /** Accepted media types (`text/html`, `application/pdf`, …); any when absent. */
  accept?: readonly string[];
  /** Name resolution; the system resolver by default (tests map names to fixtures). */
  lookup?: (hostname: string) => Promise<LookupAddress[]>;
}

export interface SafeResponse {
  status: number;
  url: string;
  contentType: string;
  headers: Headers;
  body: Buffer;
}

export type UnsafeReason = 'SCHEME' | 'ADDRESS' | 'REDIRECTS' | 'TIMEOUT' | 'TOO_LARGE' | 'CONTENT_TYPE' | 'NETWORK';

export class UnsafeUrlError extends Error {
  constructor(
    readonly reason: UnsafeReason,
    message: string,
  ) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

const DEFAULTS = { timeoutMs: 10_000, maxBytes: 10 * 1024 * 1024, maxRedirects: 5 };
// The cloud metadata services answer on these whatever their range is called.
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200']);

const RANGE_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a unique-local address',
  unspecified: 'an unspecified address',
  carrierGradeNat: 'a carrier-grade NAT address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
  deprecatedSiteLocal: 'a site-local address',
  teredo: 'a Teredo tunnel address',
  rfc6052: 'a local-use NAT64 address',
};

/**
 * The IPv4 address an IPv6 address carries, by the transition scheme that puts it there:
 * IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), IPv4-compatible
 * (`::a.b.c.d`, deprecated but still routed to the IPv4 address by some stacks), NAT64's
 * well-known prefix (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`). Each of them reaches the
 * IPv4 address it embeds, so the IPv4 address decides.
 */
function embeddedIPv4(address: ipaddr.IPv6): { v4: ipaddr.IPv4; scheme: string } | null {
  const bytes = address.toByteArray();
  const v4 = (from: number) => new ipaddr.IPv4(bytes.slice(from, from + 4));
  const range = address.range();
  if (range === 'ipv4Mapped') return { v4: v4(12), scheme: 'IPv4-mapped' };
  if (range === 'rfc6145') return { v4: v4(12), scheme: 'IPv4-translated' };
  if (range === 'rfc6052' && address.match(ipaddr.parseCIDR('64:ff9b::/96'))) return { v4: v4(12), scheme: 'NAT64' };
  if (range === '6to4') return { v4: v4(2), scheme: '6to4' };
  if (range === 'unicast' && bytes.slice(0, 12).every((byte) => byte === 0)) return { v4: v4(12), scheme: 'IPv4-compatible' };
  return null;
}

/** The kind of address that may not be fetched ("a loopback address"), or null for a public unicast one. */
function refusedKind(address: ipaddr.IPv4 | ipaddr.IPv6): string | null {
  if (METADATA_ADDRESSES.has(address.toString())) return 'a cloud metadata address';
  const range = address.range();
  if (range === 'unicast') return null;
  return RANGE_NAMES[range] ?? `a ${range} address`;
}

/**
 * Why an address may not be fetched, or null when it is a public unicast address. Any spelling
 * ipaddr.js parses is accepted (`0x7f.1`, `2130706433`, `0177.0.0.1`, `::ffff:7f00:1`); an IPv6
 * address that embeds an IPv4 address is judged by the IPv4 address.
 */
export function addressProblem(address: string): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(address);
  const normalized = parsed.toString();
  const embedded = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : null;
  if (embedded) {
    const kind = refusedKind(embedded.v4);
    return kind && `${normalized} is ${kind} (${embedded.scheme} ${embedded.v4.toString()})`;
  }
  const kind = refusedKind(parsed);
  return kind && `${normalized} is ${kind}`;
}

/** "10.1.2.3 is a private address" → "private address"; "… (IPv4-mapped 10.1.2.3)" loses the address too. */
const kindOf = (problem: string | null) => (problem ?? '').replace(/^\S+ is (an? )?/, '').replace(/ \(.*\)$/, '');

/** Refuses a saved URL with a 400 naming its field (`webhookUrl`, `url`, …) when savedUrlProblem finds a problem. */
export async function refusePrivateUrl(url: string, field: string, rule: SavedUrlRule): Promise<void> {
  const problem = await savedUrlProblem(url, rule);
  if (problem) throw appError('VALIDATION_FAILED.privateUrl', { field, problem }, [{ path: `/${field}`, message: problem }]);
}

/** A name none of whose addresses may be fetched, named by kind only: the addresses would let a tenant map internal DNS. */
const nameRefusal = (hostname: string, problems: (string | null)[]) =>
  `${hostname} resolves only to addresses that may not be fetched (${[...new Set(problems.map(kindOf))].join(', ') || 'none found'})`;

const systemLookup = (hostname: string) =>
  new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );

/** A name that means this machine whatever DNS says (RFC 6761): refused without asking a resolver. */
const isLocalhostName = (hostname: string) => /(^|\.)localhost\.?$/i.test(hostname);

export interface SavedUrlRule {
  /** ALLOW_PRIVATE_URLS: no address rule (local testing only). */
  allowPrivate: boolean;
  allowedAddresses?: readonly string[];
  /** Name resolution; the system resolver by default. */
  lookup?: (hostname: string) => Promise<LookupAddress[]>;
  /** How long to wait for the resolver (1.5 s by default). */
  timeoutMs?: number;
}

/**
 * Why a URL a user saves (a webhook, a knowledge page, a custom tool, a model server) could never
 * be fetched under the address rule, or null. Said when the URL is saved, so the mistake is
 * answered at once instead of failing every delivery later; delivery checks again on the address
 * it connects to, so this is a courtesy and not the defence:
 * - an IP literal in any spelling (the URL parser has normalised `0x7f.1`, `2130706433`, `127.1`)
 *   and the name `localhost` (or `*.localhost`) are judged without a resolver;
 * - any other name is resolved (bounded by `timeoutMs`) and refused when none of its addresses may
 *   be fetched, the very rule delivery applies. A name that does not resolve, or not in time, is
 *   accepted: it proves nothing, and delivery decides.
 * The sentence names the kind of address, never the addresses a name resolves to.
 */
export async function savedUrlProblem(url: string, rule: SavedUrlRule): Promise<string | null> {
  if (rule.allowPrivate) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null; // the caller's own format check answers for that
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const allowed = new Set(rule.allowedAddresses ?? []);
  if (isIP(host)) return allowed.has(host) ? null : addressProblem(host);
  if (isLocalhostName(host)) return `${host} is this machine (a loopback address)`;
  const resolve = rule.lookup ?? systemLookup;
  let timer: NodeJS.Timeout | undefined;
  const addresses = await Promise.race([
    resolve(host).catch(() => null),
    new Promise<null>((done) => (timer = setTimeout(() => done(null), rule.timeoutMs ?? 1_500))),
  ]).finally(() => clearTimeout(timer));
  if (!addresses || addresses.length === 0) return null;
  const problems = addresses.map((entry) => (allowed.has(entry.address) ? null : addressProblem(entry.address)));
  return problems.some((problem) => problem === null) ? null : nameRefusal(host, problems);
}

/** A name that resolved only to refused addresses; the connection's error (or its cause) is this. */
class RefusedName extends Error {}

function refusalIn(error: unknown): string | undefined {
  for (let current = error; current instanceof Error; current = current.cause) if (current instanceof RefusedName) return current.message;
  return undefined;
}

/**
 * A socket's `lookup` (net.connect's option) that resolves names through `resolve` and gives only
 * addresses `refuse` lets through: the address checked is the address used.
 */
function checkingLookup(refuse: (address: string) => string | null, resolve: (hostname: string) => Promise<LookupAddress[]>) {
  return (
    hostname: string,
    lookupOptions: object,
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter((entry) => refuse(entry.address) === null);
        if (usable.length === 0) {
          const reason = nameRefusal(
            hostname,
            addresses.map((entry) => refuse(entry.address)),
          );
          return callback(new RefusedName(reason), '', 4);
        }
        // Node asks for every address when it races IPv4 and IPv6 (autoSelectFamily).
        if ((lookupOptions as { all?: boolean }).all) return callback(null, usable);
        callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: Error) => callback(error, '', 4),
    );
  };
}

/**
 * An HTTP agent whose every connection resolves its name through `resolve` and connects only to an
 * address `refuse` lets through. A kept-alive connection is reused only for the origin (and so the
 * address) it was opened, and checked, for.
 */
function addressCheckingAgent(refuse: (address: string) => string | null, resolve: (hostname: string) => Promise<LookupAddress[]>): Agent {
  return new Agent({ connect: { lookup: checkingLookup(refuse, resolve) as never } });
}

/**
 * For a client that opens its own sockets (a WebSocket to a tenant's model server): why `url`'s
 * host, an IP literal, may not be reached (null when it may, or is a name), and a `lookup` that
 * connects a name only to public addresses (ALLOW_PRIVATE_URLS aside).
 */
export function publicOnlySocket(url: string, options: { allowPrivate?: boolean } = {}) {
  const refuse = (address: string) => (options.allowPrivate ? null : addressProblem(address));
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return { problem: isIP(host) ? refuse(host) : null, lookup: checkingLookup(refuse, systemLookup) };
}

/**
 * A `fetch` for a client library (a tenant's model server through the OpenAI SDK) that streams
 * answers as they come, under the same address rule as safeFetch: IP literals are refused before
 * connecting, names on the address the socket uses. Redirects are not followed (an API answers
 * where it is asked). One agent for the fetch's life, so connections are reused.
 */
export function publicOnlyFetch(options: Pick<SafeFetchOptions, 'allowPrivate' | 'allowedAddresses' | 'lookup'>): typeof globalThis.fetch {
  const allowed = new Set(options.allowedAddresses ?? []);
  const refuse = (address: string) => (options.allowPrivate || allowed.has(address) ? null : addressProblem(address));
  const dispatcher = addressCheckingAgent(refuse, options.lookup ?? systemLookup);
  const guarded = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UnsafeUrlError('SCHEME', `Only http and https URLs can be fetched, not ${url.protocol.replace(':', '')}.`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const problem = isIP(host) ? refuse(host) : null;
    if (problem) throw new UnsafeUrlError('ADDRESS', `Refused ${url.origin}: ${problem}.`);
    return fetch(url, { ...(init as object), redirect: 'manual', dispatcher } as Parameters<typeof fetch>[1]);
  };
  return guarded as unknown as typeof globalThis.fetch;
}

/**
 * One agent per address rule for the process's life, so connections to a receiver are kept alive
 * between requests (a webhook receiver gets many). A custom `lookup` (tests) gets an agent of its
 * own, closed after the request.
 */
const sharedAgents = new Map<string, Agent>();

function agentFor(options: SafeFetchOptions, refuse: (address: string) => string | null): { dispatcher: Agent; shared: boolean } {
  if (options.lookup) return { dispatcher: addressCheckingAgent(refuse, options.lookup), shared: false };
  const rule = `${options.allowPrivate}|${[...new Set(options.allowedAddresses ?? [])].sort().join(',')}`;
  let dispatcher = sharedAgents.get(rule);
  if (!dispatcher) sharedAgents.set(rule, (dispatcher = addressCheckingAgent(refuse, systemLookup)));
  return { dispatcher, shared: true };
}

export async function safeFetch(url: string, options: SafeFetchOptions): Promise<SafeResponse> {
  const { timeoutMs, maxBytes, maxRedirects } = { ...DEFAULTS, ...options };
  const allowed = new Set(options.allowedAddresses ?? []);
  const refuse = (address: string) => (options.allowPrivate || allowed.has(address) ? null : addressProblem(address));
  const { dispatcher, shared } = agentFor(options, refuse);
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    let current = new URL(url);
    for (let hop = 0; ; hop++) {
      if (current.protocol !== 'http:' && current.protocol !== 'https:')
        throw new UnsafeUrlError('SCHEME', `Only http and https URLs can be fetched, not ${current.protocol.replace(':', '')}.`);
      const host = current.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host)) {
        const problem = refuse(host);
        if (problem) throw new UnsafeUrlError('ADDRESS', `Refused ${current.origin}: ${problem}.`);
      }
      let response;
      try {
        response = await fetch(current, {
          method: options.method ?? 'GET',
          headers: options.headers,
          body: options.body,
          redirect: 'manual',
          signal,
          dispatcher,
        });
      } catch (error) {
        const refusal = refusalIn(error);
        if (refusal) throw new UnsafeUrlError('ADDRESS', `Refused ${current.origin}: ${refusal}.`);
        if (signal.aborted) throw new UnsafeUrlError('TIMEOUT', `${current.origin} did not answer within ${timeoutMs} ms.`);
        throw new UnsafeUrlError(
          'NETWORK',
          `Could not reach ${current.origin}: ${(error as Error & { cause?: Error }).cause?.message ?? (error as Error).message}.`,
        );
      }
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel();
        if (hop >= maxRedirects) throw new UnsafeUrlError('REDIRECTS', `More than ${maxRedirects} redirects from ${url}.`);
        current = new URL(location, current);
        continue;
      }
      const contentType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (options.accept && response.status < 300 && !options.accept.includes(contentType)) {
        await response.body?.cancel();
        throw new UnsafeUrlError(
          'CONTENT_TYPE',
          `${current.href} is ${contentType || 'of no stated type'}, not one of ${options.accept.join(', ')}.`,
        );
      }
      const declared = Number(response.headers.get('content-length') ?? 0);
      if (declared > maxBytes) {
        await response.body?.cancel();
        throw new UnsafeUrlError('TOO_LARGE', `${current.href} is ${declared} bytes, more than the ${maxBytes} allowed.`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of response.body ?? []) {
          size += (chunk as Uint8Array).byteLength;
          if (size > maxBytes) throw new UnsafeUrlError('TOO_LARGE', `${current.href} is more than the ${maxBytes} bytes allowed.`);
          chunks.push(Buffer.from(chunk as Uint8Array));
        }
      } catch (error) {
        if (error instanceof UnsafeUrlError) throw error;
        if (signal.aborted) throw new UnsafeUrlError('TIMEOUT', `${current.origin} did not finish answering within ${timeoutMs} ms.`);
        throw new UnsafeUrlError('NETWORK', `The answer from ${current.origin} broke off: ${(error as Error).message}.`);
      }
      return {
        status: response.status,
        url: current.href,
        contentType,
        headers: response.headers as unknown as Headers,
        body: Buffer.concat(chunks),
      };
    }
  } finally {
    if (!shared) await dispatcher.close().catch(() => undefined);
  }
}
