import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from './clock.ts';
import type { Db } from './db.ts';
import { appError } from './errors.ts';

/** The tables the platform owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['idempotency_keys'] as const;

/**
 * `Idempotency-Key` on any POST (contract §1): the same key with the same request replays the
 * first response for `ttlHours`; with a different request it is refused with 422. Responses of 5xx
 * are not kept, so a retry after a server failure runs again. A secret the response shows once
 * (route config `shownOnce`) is not kept either: an API key's value "can never be retrieved again",
 * and only its hash is stored, so its replay comes without it.
 */
declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: { scope: string; key: string };
  }
  interface FastifyContextConfig {
    /**
     * Fields of the route's response that are shown once (a new API key, a signing secret, a
     * session token): they are never kept with the response, so a replay answers without them.
     */
    shownOnce?: readonly string[];
  }
}

// A claim whose request never finished (a crashed process) stops blocking retries after this.
const ABANDONED_AFTER_MS = 60_000;

interface StoredResponse {
  request_hash: string;
  status_code: number | null;
  content_type: string | null;
  response_body: string | null;
  created_at: Date;
}

function scopeOf(request: FastifyRequest): string {
  const principal = request.principal;
  return principal ? `tenant:${principal.tenantId}` : `ip:${request.ip}`;
}

function requestHash(request: FastifyRequest): string {
  const body = String(request.headers['content-type'] ?? '').startsWith('multipart/')
    ? `multipart:${request.headers['content-length'] ?? ''}`
    : JSON.stringify(request.body ?? null);
  return createHash('sha256').update(`${request.method} ${request.url}\n${body}`).digest('hex');
}

export function registerIdempotency(app: FastifyInstance, db: Db, clock: Clock, ttlHours: number) {
  const claim = async (scope: string, key: string, hash: string) => {
    const { rowCount } = await db.query(
      'INSERT INTO idempotency_keys (scope, key, request_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (scope, key) DO NOTHING',
      [scope, key, hash, clock.now()],
    );
    return rowCount === 1;
  };

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return;
    const key = request.headers['idempotency-key'];
    if (key === undefined) return;
    if (typeof key !== 'string' || key.length === 0 || key.length > 255) {
      throw appError('INVALID_IDEMPOTENCY_KEY');
    }
    const scope = scopeOf(request);
    const hash = requestHash(request);
    if (await claim(scope, key, hash)) {
      request.idempotency = { scope, key };
      return;
    }
    const { rows } = await db.query<StoredResponse>(
      'SELECT request_hash, status_code, content_type, response_body, created_at FROM idempotency_keys WHERE scope = $1 AND key = $2',
      [scope, key],
    );
    const stored = rows[0];
    const age = stored ? clock.now().getTime() - stored.created_at.getTime() : Infinity;
    const stale = age > ttlHours * 3_600_000 || (stored?.status_code === null && age > ABANDONED_AFTER_MS);
    if (!stored || stale) {
      if (stored)
        await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND created_at = $3', [scope, key, stored.created_at]);
      if (await claim(scope, key, hash)) {
        request.idempotency = { scope, key };
        return;
      }
      throw appError('IDEMPOTENCY_KEY_IN_USE');
    }
    if (stored.request_hash !== hash) {
      throw appError('IDEMPOTENCY_KEY_REUSED');
    }
    if (stored.status_code === null) {
      throw appError('IDEMPOTENCY_KEY_IN_USE');
    }
    reply.code(stored.status_code).header('idempotent-replayed', 'true');
    if (stored.content_type) reply.header('content-type', stored.content_type);
    return reply.send(stored.response_body ?? undefined);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claimed = request.idempotency;
    if (!claimed) return payload;
    request.idempotency = undefined;
    if (reply.statusCode >= 500) {
      await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [claimed.scope, claimed.key]);
      return payload;
    }
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    const body = withoutShownOnce(text, request.routeOptions.config.shownOnce);
    await db.query('UPDATE idempotency_keys SET status_code = $3, content_type = $4, response_body = $5 WHERE scope = $1 AND key = $2', [
      claimed.scope,
      claimed.key,
      reply.statusCode,
      String(reply.getHeader('content-type') ?? ''),
      body,
    ]);
    return payload;
  });
}

/** The stored copy of a JSON response: the shown-once fields taken off. */
function withoutShownOnce(body: string | null, shownOnce: readonly string[] | undefined): string | null {
  if (body === null || !shownOnce || shownOnce.length === 0) return body;
  let record: unknown;
  try {
    record = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return body;
  const kept = { ...(record as Record<string, unknown>) };
  for (const field of shownOnce) delete kept[field];
  return JSON.stringify(kept);
}
