import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Deps } from './context.ts';
import { appError, sendError } from './errors.ts';

/**
 * Liveness and readiness, the same in every role: `/healthz` answers while the process and its
 * event loop run (a blocked loop answers nothing, which is the signal), `/readyz` once the
 * database answers (within READY_TIMEOUT_MS) and the job queue is started.
 */
export function healthRoutes(app: FastifyInstance, deps: Pick<Deps, 'db' | 'jobs' | 'config'>, config: object = {}): void {
  const ping = databasePing(deps.db, deps.config.readyTimeoutMs);
  // Answered on the event loop itself: a probe with a timeout (a few seconds) fails when the loop is stuck.
  app.get('/healthz', { config, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config, schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    if (!(await ping())) return sendError(appError('DATABASE_UNAVAILABLE'), request, reply);
    const jobsReady = await deps.jobs.ready().catch(() => false);
    if (!jobsReady) return sendError(appError('JOB_QUEUE_UNAVAILABLE'), request, reply);
    return { status: 'ok' };
  });
}

/** The worker role's small HTTP server: only the two probes (WORKER_HEALTH_PORT). */
export async function startWorkerHealth(
  deps: Pick<Deps, 'db' | 'jobs' | 'log' | 'config'>,
  options: { port: number; host: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ loggerInstance: deps.log as FastifyBaseLogger, logController: new LogController({ disableRequestLogging: true }) });
  healthRoutes(app, deps);
  const address = await app.listen({ port: options.port, host: options.host });
  deps.log.info({ address }, 'worker health endpoint listening');
  return { url: address, close: () => app.close() };
}

/**
 * Whether the database answers `SELECT 1` within `timeoutMs`. A database that does not answer (a
 * busy pool, PGlite's one connection held, a server that hangs) is not ready, answered at the
 * deadline rather than when it recovers; while a ping is still out, the next probe waits on the
 * same one instead of queueing another.
 */
function databasePing(db: Deps['db'], timeoutMs: number): () => Promise<boolean> {
  let pending: Promise<boolean> | undefined;
  return async () => {
    pending ??= db.query('SELECT 1').then(
      () => true,
      () => false,
    );
    const current = pending;
    void current.finally(() => {
      if (pending === current) pending = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([current, deadline]);
    } finally {
      clearTimeout(timer);
    }
  };
}
