import type { FastifyInstance } from 'fastify';

/** Provider callbacks are form-encoded; repeated names keep every value (signatures cover them all). */
export function parseForm(body: string): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const seen = params[name];
    params[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return params;
}

/**
 * Keeps request bodies as received (form or JSON text) in a Fastify scope: provider callbacks are
 * verified by signatures over the exact bytes, so nothing may parse them first.
 */
export function keepRawBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(['application/x-www-form-urlencoded', 'application/json'], { parseAs: 'string' }, (_request, body, done) =>
    done(null, body),
  );
}
