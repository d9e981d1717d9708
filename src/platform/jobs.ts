import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { SESSION_OPTIONS, type Db, type Queryable } from './db.ts';
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
  /**
   * How long one batch of this queue may run: pg-boss fails the batch's jobs (to be retried) when
   * its handler outlives this, running or not (default 300). It is not how long a dead worker's
   * jobs wait: a fetched job's lease is JOBS_RECOVERY_SECONDS, renewed by its live worker.
   */
  expireInSeconds?: number;
  /** Parallel handlers of this queue in one worker process. */
  concurrency?: number;
  /** Jobs fetched at once by each handler (default 20); each is handled and settled on its own. */
  batchSize?: number;
  /**
   * Handles a fetched batch's jobs all at once instead of one after another: for handlers that
   * mostly wait on a provider or a receiver. A batch then lasts as long as its slowest job rather
   * than the sum of them, so it stays well within expireInSeconds however slow the far end is.
   */
  parallel?: boolean;
  /**
   * A recurring job: sent on this cron schedule (UTC) with `{}`, once across all processes, by the
   * job queue's timekeeper in every worker (pg-boss keeps the schedule in the database).
   */
  cron?: string;
  handle(data: T, meta: { id: string; retryCount: number }): Promise<void>;
}

/**
 * A failure the handler expected (a receiver or provider that did not answer as hoped), thrown so
 * the job queue retries it: logged as one line with its reason, without a stack trace, which
 * says nothing about a far end being down and would otherwise fill the log on every retry.
 */
export class RetryLater extends Error {
  override name = 'RetryLater';
}

export interface SendOptions {
  tx?: Queryable;
  startAfter?: Date;
  singletonKey?: string;
}

export interface JobQueue {
  send<T extends object>(name: string, data: T, options?: SendOptions): Promise<string | null>;
  /** Several jobs in one statement (with `tx`, in the caller's transaction). */
  sendMany(jobs: { name: string; data: object }[], options?: { tx?: Queryable }): Promise<void>;
  /** Registers and starts handlers (worker role). */
  work(definitions: JobDefinition<never>[]): Promise<void>;
  /** Makes sure queues exist so any role can send to them. */
  define(definitions: JobDefinition<never>[]): Promise<void>;
  /** Whether the queue is started and its database answers (a worker's readiness). */
  ready(): Promise<boolean>;
  stop(): Promise<void>;
}

/**
 * The job queue's timings that follow from the recovery time: a held job's lease is renewed every
 * third of it, and the queue looks for expired leases as often, in every supervising process.
 */
export function recoveryTimings(recoverySeconds: number): { heartbeatMs: number; sweepMs: number } {
  const third = Math.max(1000, Math.floor((recoverySeconds * 1000) / 3));
  return { heartbeatMs: third, sweepMs: third };
}

/**
 * pg-boss fetches a queue's next jobs by priority and age, but indexes its waiting jobs by queue
 * and start time: every fetch read and sorted the whole backlog (2.5 ms a fetch with 5,000
 * post-call jobs waiting, a quarter of the database's time while they drained). This index has the
 * fetch's order, so a fetch reads its batch and stops. Made on the partitioned table, it is made
 * on every queue's partition too, present and future; made again if an upgrade of pg-boss dropped it.
 */
const FETCH_ORDER_INDEX = 'job_fetch_order_idx';
const CREATE_FETCH_ORDER_INDEX = `CREATE INDEX IF NOT EXISTS ${FETCH_ORDER_INDEX} ON pgboss.job
  (name, priority DESC, created_on, id) INCLUDE (start_after) WHERE state < 'active'`;

/**
 * pg-boss 10 has no heartbeat: a held job's lease is renewed by moving its expiry in the database,
 * counted from its start. pg-boss's own in-process timeout reads the expiry fetched with the job
 * (the queue's expireInSeconds), so the short lease never cuts a live handler short. Rows another
 * statement holds (a batch being completed) are skipped, never waited for: a renewal locking a
 * batch's rows in one order while its completion locks them in another deadlocked.
 */
const RENEW_LEASES = `UPDATE pgboss.job SET expire_in = (now() - started_on) + make_interval(secs => $3)
  WHERE name = $1 AND id IN (SELECT id FROM pgboss.job WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'active' FOR UPDATE SKIP LOCKED)`;

/** How long stop() waits for handlers and statements in flight before it closes the queue anyway. */
const STOP_TIMEOUT_MS = 10_000;

export async function startJobQueue(
  db: Db,
  options: {
    databaseUrl?: string;
    supervise: boolean;
    pollSeconds: number;
    maintenanceSeconds: number;
    /** How long a dead worker's jobs wait before another worker takes them (JOBS_RECOVERY_SECONDS). */
    recoverySeconds: number;
    log: Logger;
  },
): Promise<JobQueue> {
  // Maintenance archives and drops old jobs; the sweep below expires the jobs of dead workers.
  const supervision = { supervise: options.supervise, schedule: options.supervise, maintenanceIntervalSeconds: options.maintenanceSeconds };
  // On a server pg-boss has a pool of its own, without the statement timeout. Its statements are
  // counted in flight, a worker's fetch among them: stop() waits for them.
  const ownPool =
    db.engine === 'postgres' && options.databaseUrl
      ? new pg.Pool({ connectionString: options.databaseUrl, max: 4, application_name: 'callforge-jobs', options: SESSION_OPTIONS })
      : undefined;
  ownPool?.on('error', (error) => options.log.error({ err: error }, 'job queue error'));
  const statements = ownPool ? { executeSql: (text: string, values?: unknown[]) => ownPool.query(text, values) } : db.jobsAdapter();
  let inFlight = 0;
  const counted = {
    async executeSql(text: string, values?: unknown[]) {
      inFlight++;
      try {
        return await statements.executeSql(text, values);
      } finally {
        inFlight--;
      }
    },
  };
  const boss = new PgBoss({ db: counted as PgBoss.Db, ...supervision });
  boss.on('error', (error) => options.log.error({ err: error }, 'job queue error'));
  await boss.start();
  // Processes starting together race to make it: the loser sees a unique violation or a deadlock, and tries again.
  for (let attempt = 1; ; attempt++) {
    try {
      await boss.getDb().executeSql(CREATE_FETCH_ORDER_INDEX, []);
      break;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
  let started = true;
  const { heartbeatMs, sweepMs } = recoveryTimings(options.recoverySeconds);
  const timers: NodeJS.Timeout[] = [];
  const repeat = (ms: number, task: () => Promise<void>, what: string) => {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      task()
        .catch((error: unknown) => options.log.warn({ err: error }, what))
        .finally(() => (running = false));
    }, ms);
    timer.unref();
    timers.push(timer);
  };

  // Jobs this process holds, by queue: their leases are renewed while they run.
  const held = new Map<string, { ids: Set<string> }>();
  const renewLeases = (name: string, ids: string[]) => boss.getDb().executeSql(RENEW_LEASES, [name, ids, options.recoverySeconds]);
  repeat(
    heartbeatMs,
    async () => {
      for (const [name, { ids }] of held) if (ids.size > 0) await renewLeases(name, [...ids]);
    },
    'job queue heartbeat failed',
  );
  if (options.supervise) {
    // Every supervising process looks for expired leases from its start, not after a maintenance interval.
    await boss.expire();
    repeat(sweepMs, () => boss.expire(), 'job queue expiry sweep failed');
  }

  const define = async (definitions: JobDefinition<never>[]) => {
    for (const definition of definitions) {
      // Processes starting together on a fresh database race to create a queue: the loser sees
      // a unique violation or a deadlock, and tries again until the queue exists.
      const settings = {
        name: definition.name,
        retryLimit: definition.retryLimit ?? 5,
        retryDelay: definition.retryDelaySeconds ?? 5,
        retryBackoff: true,
        expireInSeconds: definition.expireInSeconds ?? 300,
      };
      for (let attempt = 1; !(await boss.getQueue(definition.name)); attempt++) {
        await boss.createQueue(definition.name, settings).catch((error: unknown) => {
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
    async sendMany(jobs, { tx } = {}) {
      if (jobs.length === 0) return;
      await boss.insert(jobs, tx ? { db: db.jobsAdapter(tx) as PgBoss.Db } : {});
    },
    define,
    async work(definitions) {
      await define(definitions);
      for (const definition of definitions) {
        const holding = { ids: new Set<string>() };
        held.set(definition.name, holding);
        if (definition.cron) await boss.schedule(definition.name, definition.cron, {}, { tz: 'UTC' });
        const handleJob = async (job: PgBoss.JobWithMetadata<unknown>) => {
          try {
            await definition.handle(job.data as never, { id: job.id, retryCount: job.retryCount });
          } catch (error) {
            // Only this job fails (and is retried); the rest of the batch completes.
            const about = { job: job.id, queue: definition.name, retryCount: job.retryCount };
            if (error instanceof RetryLater) options.log.warn({ ...about, reason: error.message }, `job failed: ${error.message}`);
            else options.log.warn({ ...about, err: error }, 'job failed');
            await boss.fail(definition.name, job.id, { message: error instanceof Error ? error.message : String(error) });
          }
        };
        const handleBatch = async (jobs: PgBoss.JobWithMetadata<unknown>[]) => {
          if (definition.parallel) await Promise.all(jobs.map(handleJob));
          else for (const job of jobs) await handleJob(job);
        };
        const batchSize = definition.batchSize ?? 20;
        for (let i = 0; i < (definition.concurrency ?? 1); i++) {
          const worker: { id?: string } = {};
          worker.id = await boss.work(
            definition.name,
            { pollingIntervalSeconds: options.pollSeconds, batchSize, includeMetadata: true },
            async (jobs) => {
              for (const job of jobs) holding.ids.add(job.id);
              try {
                // The lease starts at once: a worker killed from here on holds these jobs for seconds, not minutes.
                if (jobs.length > 0)
                  await renewLeases(
                    definition.name,
                    jobs.map((job) => job.id),
                  );
                await handleBatch(jobs);
              } finally {
                for (const job of jobs) holding.ids.delete(job.id);
              }
              // pg-boss waits a polling interval after every fetch. A full batch says a backlog is
              // likely: fetch again at once. A partial one drained the queue: jobs that trickle in
              // meanwhile gather for the next poll, one fetch for many rather than one each.
              if (jobs.length === batchSize && worker.id) boss.notifyWorker(worker.id);
            },
          );
        }
      }
    },
    async ready() {
      if (!started) return false;
      await boss.getDb().executeSql('SELECT 1', []);
      return true;
    },
    async stop() {
      started = false;
      for (const timer of timers) clearInterval(timer);
      // pg-boss's graceful stop waits for the jobs its workers hold, not for a fetch in flight: that
      // fetch's jobs would reach a handler after the database closed. So the workers' loops are
      // stopped first, and the queue settles: no statement in flight, no handler running. From a
      // fetch's answer to its handler is one chain of promises, so a poll never falls between them.
      const deadline = Date.now() + STOP_TIMEOUT_MS;
      const settled = async () => {
        while ((inFlight > 0 || [...held.values()].some(({ ids }) => ids.size > 0)) && Date.now() < deadline) await sleep(10);
      };
      for (const name of held.keys()) await boss.offWork(name);
      await settled();
      await boss.stop({ graceful: true, wait: true, timeout: STOP_TIMEOUT_MS, close: false });
      await settled();
      await ownPool?.end();
    },
  };
}
