import type { ApiKeyCache } from './api-key-cache.ts';
import type { Clock } from './clock.ts';
import type { Db, Queryable } from './db.ts';
import type { JobQueue } from './jobs.ts';
import type { Logger } from './logger.ts';
import type { ServerKeys } from './secrets.ts';

/**
 * Everything a process shares: built once in main (or the test harness) and passed down.
 * Platform knows no module, nor the service's settings (config.ts stands above it), so whoever adds
 * a process-wide field declares it by augmenting this interface: config.ts adds `config` (here and
 * to TenantCtx), the knowledge module `knowledge`.
 */
export interface Deps {
  db: Db;
  jobs: JobQueue;
  clock: Clock;
  log: Logger;
  serverKeys: ServerKeys;
  apiKeyCache: ApiKeyCache;
}

/** What a service function works with on behalf of one tenant. */
export interface TenantCtx {
  tenantId: string;
  db: Queryable;
  clock: Clock;
  jobs: JobQueue;
  /** Seals and opens provider secrets at rest. */
  serverKeys: ServerKeys;
}

export const tenantCtx = (deps: Deps, tenantId: string): TenantCtx => ({
  tenantId,
  db: deps.db,
  clock: deps.clock,
  jobs: deps.jobs,
  config: deps.config,
  serverKeys: deps.serverKeys,
});

/**
 * The one way to open a transaction: `work` gets the same context bound to it, so whatever it calls
 * (another module's service, a job enqueued with `{ tx: txCtx.db }`) commits or rolls back together.
 * Inside a transaction it joins the open one.
 */
export const withTransaction = <C extends { db: Queryable }, T>(ctx: C, work: (txCtx: C) => Promise<T>): Promise<T> =>
  ctx.db.transaction((tx) => work({ ...ctx, db: tx }));
