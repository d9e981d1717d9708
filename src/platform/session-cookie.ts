import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from './context.ts';

/**
 * The dashboard's session, held by the browser where page scripts cannot read it: the session
 * token in an httpOnly, SameSite=Strict cookie, beside a readable CSRF token the page echoes in
 * the `X-CSRF-Token` header of every request that changes something. API clients keep sending
 * `Authorization: Bearer …` and never meet either cookie's rules.
 *
 * The CSRF token is an HMAC of the session token under a key only the server holds (a "signed
 * double-submit" token): another site can neither read it (same-origin policy) nor compute it, and
 * it needs no state on the server. When PUBLIC_URL is https the cookies are `Secure` and carry the
 * `__Host-` prefix (no subdomain can plant or overwrite them); over plain http (the embedded
 * default on 127.0.0.1) a browser drops a `Secure` cookie, so they are plain-named and not Secure.
 */
export interface SessionCookies {
  /** The cookie's name: `__Host-callforge_session` over https, `callforge_session` over http. */
  readonly sessionName: string;
  /** The CSRF cookie's name (readable by the page): `__Host-callforge_csrf` or `callforge_csrf`. */
  readonly csrfName: string;
  /** Sets both cookies for a session token just issued (log-in, sign-up). */
  set(reply: FastifyReply, sessionToken: string): void;
  /** Expires both cookies (log-out, or a cookie whose session is no longer valid). */
  clear(reply: FastifyReply): void;
  /** The session token the request's cookie holds, if any. */
  read(request: FastifyRequest): string | undefined;
  /** Whether the request's `X-CSRF-Token` header is the CSRF token of `sessionToken`. */
  csrfMatches(request: FastifyRequest, sessionToken: string): boolean;
  /** Whether the request's Origin is this service's own (its Host, or PUBLIC_URL's origin). */
  sameOrigin(request: FastifyRequest): boolean;
}

export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a request can change state, so that a cookie alone must not authenticate it. */
export const isUnsafeMethod = (method: string) => !SAFE_METHODS.has(method.toUpperCase());

export function sessionCookies(deps: Pick<Deps, 'config' | 'serverKeys'>): SessionCookies {
  const publicOrigin = new URL(deps.config.publicUrl).origin;
  const secure = publicOrigin.startsWith('https:');
  const prefix = secure ? '__Host-' : '';
  const sessionName = `${prefix}callforge_session`;
  const csrfName = `${prefix}callforge_csrf`;
  // Path=/ and no Domain: what the __Host- prefix demands, and the cookie stays with this host.
  const base = { path: '/', sameSite: 'strict', secure } as const;
  const csrfToken = (sessionToken: string) =>
    createHmac('sha256', deps.serverKeys.sessionSigningKey).update('callforge/csrf\0').update(sessionToken).digest('base64url');

  return {
    sessionName,
    csrfName,
    set(reply, sessionToken) {
      const maxAge = deps.config.sessionTtlSeconds;
      reply.setCookie(sessionName, sessionToken, { ...base, httpOnly: true, maxAge });
      reply.setCookie(csrfName, csrfToken(sessionToken), { ...base, httpOnly: false, maxAge });
    },
    clear(reply) {
      reply.clearCookie(sessionName, { ...base, httpOnly: true });
      reply.clearCookie(csrfName, { ...base, httpOnly: false });
    },
    read(request) {
      const value = request.cookies[sessionName];
      return value ? value : undefined;
    },
    csrfMatches(request, sessionToken) {
      const given = request.headers[CSRF_HEADER];
      if (typeof given !== 'string') return false;
      const expected = Buffer.from(csrfToken(sessionToken));
      const actual = Buffer.from(given.trim());
      return actual.length === expected.length && timingSafeEqual(actual, expected);
    },
    sameOrigin(request) {
      const origin = request.headers.origin;
      if (typeof origin !== 'string') return false;
      let parsed: URL;
      try {
        parsed = new URL(origin);
      } catch {
        return false;
      }
      return parsed.origin === publicOrigin || (request.headers.host !== undefined && parsed.host === request.headers.host);
    },
  };
}
