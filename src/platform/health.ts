import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Deps } from './context.ts';
import { appError, sendError } from './errors.ts';

/**
 * Liveness and readiness, the same in every role: `/healthz` answers while the process and its
 * event loop run (a blocked loop answers nothing, which is the signal), `/readyz` once the
 * database answers and the job queue is started.
 */
export function healthRoutes(app: FastifyInstance, deps: Pick<Deps, 'db' | 'jobs'>, config: object = {}): void {
  // Answered on the event loop itself: a probe with a timeout (a few seconds) fails when the loop is stuck.
  app.get('/healthz', { config, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config, schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      await deps.db.query('SELECT 1');
    } catch {
      return sendError(appError('DATABASE_UNAVAILABLE'), request, reply);
    }
    const jobsReady = await deps.jobs.ready().catch(() => false);
    if (!jobsReady) return sendError(appError('JOB_QUEUE_UNAVAILABLE'), request, reply);
    return { status: 'ok' };
  });
}

/** The worker role's small HTTP server: only the two probes (WORKER_HEALTH_PORT). */
export async function startWorkerHealth(
  deps: Pick<Deps, 'db' | 'jobs' | 'log'>,
  options: { port: number; host: string },
): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ loggerInstance: deps.log as FastifyBaseLogger, disableRequestLogging: true });
  healthRoutes(app, deps);
  const address = await app.listen({ port: options.port, host: options.host });
  deps.log.info({ address }, 'worker health endpoint listening');
  return { url: address, close: () => app.close() };
}
