import PgBoss from 'pg-boss';
import type { Db, Queryable } from './db.ts';
import type { Logger } from './logger.ts';

/**
 * Background work on pg-boss, in the same PostgreSQL as the data. `send` with `tx` writes the job
 * in the caller's transaction: it exists if and only if the change that needs it committed.
 */
export interface JobDefinition<T = unknown> {
  name: string;
  /** Retries after a failure, each `retryDelaySeconds` doubled (pg-boss backoff). */
  retryLimit?: number;
  retryDelaySeconds?: number;
  expireInSeconds?: number;
  /** Parallel handlers of this queue in one worker process. */
  concurrency?: number;
  /** Jobs fetched at once by each handler (default 20); each is handled and settled on its own. */
  batchSize?: number;
  /**
   * A recurring job: sent on this cron schedule (UTC) with `{}`, once across all processes, by the
   * job queue's timekeeper in every worker (pg-boss keeps the schedule in the database).
   */
  cron?: string;
  handle(data: T, meta: { id: string; retryCount: number }): Promise<void>;
}

export interface SendOptions {
  tx?: Queryable;
  startAfter?: Date;
  singletonKey?: string;
}

export interface JobQueue {
  send<T extends object>(name: string, data: T, options?: SendOptions): Promise<string | null>;
  /** Registers and starts handlers (worker role). */
  work(definitions: JobDefinition<never>[]): Promise<void>;
  /** Makes sure queues exist so any role can send to them. */
  define(definitions: JobDefinition<never>[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startJobQueue(
  db: Db,
  options: { databaseUrl?: string; supervise: boolean; pollSeconds: number; maintenanceSeconds: number; log: Logger },
): Promise<JobQueue> {
  // Maintenance expires the jobs of workers that died mid-job, so another worker retries them.
  const supervision = { supervise: options.supervise, schedule: options.supervise, maintenanceIntervalSeconds: options.maintenanceSeconds };
  const boss =
    db.engine === 'postgres' && options.databaseUrl
      ? new PgBoss({ connectionString: options.databaseUrl, max: 4, ...supervision, application_name: 'callforge-jobs' })
      : new PgBoss({ db: db.jobsAdapter() as PgBoss.Db, ...supervision });
  boss.on('error', (error) => options.log.error({ err: error }, 'job queue error'));
  await boss.start();

  const define = async (definitions: JobDefinition<never>[]) => {
    for (const definition of definitions) {
      // Processes starting together on a fresh database race to create a queue: the loser sees
      // a unique violation or a deadlock, and tries again until the queue exists.
      for (let attempt = 1; !(await boss.getQueue(definition.name)); attempt++) {
        await boss
          .createQueue(definition.name, {
            name: definition.name,
            retryLimit: definition.retryLimit ?? 5,
            retryDelay: definition.retryDelaySeconds ?? 5,
            retryBackoff: true,
            expireInSeconds: definition.expireInSeconds ?? 300,
          })
          .catch((error: unknown) => {
            if (attempt >= 5) throw error;
          });
      }
    }
  };

  return {
    async send(name, data, sendOptions = {}) {
      const { tx, startAfter, singletonKey } = sendOptions;
      return boss.send(name, data, {
        ...(startAfter ? { startAfter } : {}),
        ...(singletonKey ? { singletonKey } : {}),
        ...(tx ? { db: db.jobsAdapter(tx) as PgBoss.Db } : {}),
      });
    },
    define,
    async work(definitions) {
      await define(definitions);
      for (const definition of definitions) {
        if (definition.cron) await boss.schedule(definition.name, definition.cron, {}, { tz: 'UTC' });
        for (let i = 0; i < (definition.concurrency ?? 1); i++) {
          const worker: { id?: string } = {};
          worker.id = await boss.work(
            definition.name,
            { pollingIntervalSeconds: options.pollSeconds, batchSize: definition.batchSize ?? 20, includeMetadata: true },
            async (jobs) => {
              for (const job of jobs) {
                try {
                  await definition.handle(job.data as never, { id: job.id, retryCount: job.retryCount });
                } catch (error) {
                  // Only this job fails (and is retried); the rest of the batch completes.
                  options.log.warn({ err: error, job: job.id, queue: definition.name, retryCount: job.retryCount }, 'job failed');
                  await boss.fail(definition.name, job.id, { message: error instanceof Error ? error.message : String(error) });
                }
              }
              // pg-boss waits a polling interval after every fetch; while jobs keep coming, fetch again at once.
              if (jobs.length > 0 && worker.id) boss.notifyWorker(worker.id);
            },
          );
        }
      }
    },
    stop: () => boss.stop({ graceful: true, wait: true, timeout: 10_000, close: true }),
  };
}
