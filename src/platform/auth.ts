import type { FastifyReply, FastifyRequest } from 'fastify';
import { tooManyFailures } from './auth-failures.ts';
import { appError } from './errors.ts';
import { isUnsafeMethod, type SessionCookies } from './session-cookie.ts';

/**
 * Who may call a route (seed §5, contract §2):
 * - `tenant`: an API key of a tenant or a dashboard session (the default);
 * - `dashboard`: dashboard sessions only;
 * - `public`: no credentials (sign-up, login, provider callbacks, health).
 */
export type AuthMode = 'tenant' | 'dashboard' | 'public';

export type Principal =
  | { kind: 'apiKey'; keyId: string; tenantId: string; agentId: string | null }
  | { kind: 'session'; userId: string; tenantId: string; sessionId: string; expiresAt: Date };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export interface Authenticator {
  /** `address`: the client's, whose invalid keys are counted (`throttled`: too many of them lately). */
  apiKey(
    token: string,
    address: string,
  ): Promise<
    | { status: 'valid'; key: { keyId: string; tenantId: string | null; agentId: string | null } }
    | { status: 'invalid' }
    | { status: 'expired' }
    | { status: 'throttled'; retryAfterSeconds: number }
  >;
  session(token: string): Promise<{ userId: string; tenantId: string; sessionId: string; expiresAt: Date } | null>;
}

const INVALID_KEY = () => appError('INVALID_API_KEY');
/** An Authorization header offering an API key (the scheme's name in any case, the key's prefix as issued). */
const offersApiKey = (header: string) => /^Bearer\s+(\S+)/i.exec(header)?.[1]!.startsWith('aok_') === true;

/**
 * Resolves the caller before anything else runs, so a bad credential is a 401 whatever the body.
 * An Authorization header (or a WebSocket's bearer subprotocol) wins; without one, the dashboard's
 * session cookie is read, and then a request that changes something must carry the session's CSRF
 * token and a WebSocket must be opened from this service's own origin.
 */
export function authHook(authenticator: Authenticator, cookies: SessionCookies, dashboardOnly: (path: string) => boolean) {
  return async function authenticate(request: FastifyRequest, reply: FastifyReply) {
    request.principal = null;
    let mode = request.routeOptions.config.auth ?? 'tenant';
    if (request.is404) {
      // Unknown routes answer 404 whoever asks: the gateway routes before any service
      // authenticates. Except under a dashboard-only prefix, where an API key is answered as that
      // prefix's routes answer it: checked (401 when invalid or expired), then refused (403).
      if (!(offersApiKey(authorizationOf(request) ?? '') && dashboardOnly(request.url.split('?')[0]!))) return;
      mode = 'dashboard';
    }
    if (mode === 'public') return;

    const header = authorizationOf(request);
    if (!header) {
      const cookie = cookies.read(request);
      if (!cookie) throw appError('AUTHENTICATION_REQUIRED');
      const session = await authenticator.session(cookie);
      if (!session) {
        // The browser would otherwise keep offering a dead session; the page falls back to its log-in.
        cookies.clear(reply);
        throw appError('INVALID_SESSION');
      }
      if (isWebSocketUpgrade(request)) {
        // A WebSocket is not bound by the same-origin policy: another site's page could open one
        // riding on the cookie (cross-site WebSocket hijacking), so its Origin must be ours.
        if (!cookies.sameOrigin(request)) throw appError('CROSS_ORIGIN_WEBSOCKET', { origin: request.headers.origin ?? 'none' });
      } else if (isUnsafeMethod(request.method) && !cookies.csrfMatches(request, cookie)) {
        throw appError('CSRF_TOKEN_INVALID', { cookie: cookies.csrfName });
      }
      request.principal = { kind: 'session', ...session };
      return;
    }
    const match = /^Bearer\s+(\S.*)$/i.exec(header);
    if (!match) {
      if (header.includes('aok_')) throw INVALID_KEY();
      throw appError('AUTHENTICATION_REQUIRED');
    }
    const token = match[1]!.trim();
    // "Bearer Bearer aok_…": the word was typed into a runner that adds it already (seed §5.7).
    if (/^bearer\b/i.test(token) || /\s/.test(token)) throw INVALID_KEY();

    if (token.startsWith('aok_')) {
      const check = await authenticator.apiKey(token, request.ip);
      if (check.status === 'throttled') throw tooManyFailures('invalidKey', check.retryAfterSeconds);
      if (check.status === 'invalid') throw INVALID_KEY();
      if (check.status === 'expired') throw appError('API_KEY_EXPIRED');
      if (mode === 'dashboard') throw appError('API_KEY_NOT_ALLOWED');
      const { keyId, tenantId, agentId } = check.key;
      if (!tenantId) throw appError('TENANT_CONTEXT_REQUIRED');
      request.principal = { kind: 'apiKey', keyId, tenantId, agentId };
      return;
    }

    const session = await authenticator.session(token);
    if (!session) throw appError('INVALID_SESSION');
    request.principal = { kind: 'session', ...session };
  };
}

const isWebSocketUpgrade = (request: FastifyRequest) => request.headers.upgrade?.toLowerCase() === 'websocket';

/**
 * A browser cannot set headers on a WebSocket, so an upgrade may offer its token as the
 * subprotocol `bearer.<token>` instead of the Authorization header (as Kubernetes' API does): the
 * token stays out of URLs and logs. The dashboard, whose scripts never see its token, opens its
 * WebSockets with the session cookie instead (and from its own origin, checked above).
 */
export const BEARER_PROTOCOL = 'bearer.';

function authorizationOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization?.trim();
  if (header || !isWebSocketUpgrade(request)) return header;
  const offered = String(request.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((protocol) => protocol.trim())
    .find((protocol) => protocol.startsWith(BEARER_PROTOCOL));
  return offered && `Bearer ${offered.slice(BEARER_PROTOCOL.length)}`;
}

/** The subprotocol a WebSocket answers with: the first one offered that is not a credential (never echo a token). */
export const chosenWebSocketProtocol = (offered: Set<string>): string | false =>
  [...offered].find((protocol) => !protocol.startsWith(BEARER_PROTOCOL)) ?? false;

/** The authenticated caller of a `tenant` or `dashboard` route. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`Route ${request.routeOptions.url} reads the principal but is public`);
  return request.principal;
}
