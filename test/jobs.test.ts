import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobQueue } from '../src/platform/jobs.ts';
import { startTestApp, until, type TestApp } from './harness.ts';

let t: TestApp;
beforeAll(async () => {
  // A short lease, so that a job outliving it is seen within a test.
  t = await startTestApp({ env: { JOBS_RECOVERY_SECONDS: '3' } });
});
afterAll(() => t.close());

describe('job queue (transactional enqueue on pg-boss)', () => {
  it('runs a job enqueued in a committed transaction and never one from a rolled-back transaction', async () => {
    const seen: string[] = [];
    await t.runtime.jobs.work([{ name: 'test-echo', handle: async (data: { tag: string }) => void seen.push(data.tag) }]);

    await t.runtime.db
      .transaction(async (tx) => {
        await t.runtime.jobs.send('test-echo', { tag: 'rolled-back' }, { tx });
        throw new Error('abort');
      })
      .catch(() => undefined);
    await t.runtime.db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await t.runtime.jobs.send('test-echo', { tag: 'committed' }, { tx });
    });

    await until('the committed job', () => seen.includes('committed'), 20_000);
    const stored = await t.runtime.db.query(`SELECT data FROM pgboss.job WHERE name = 'test-echo' AND data->>'tag' = 'rolled-back'`);
    expect(stored.rowCount).toBe(0);
    expect(seen).toEqual(['committed']);
  });

  it('retries a failing job with growing delays until it succeeds', async () => {
    const attempts: { at: number; retryCount: number }[] = [];
    await t.runtime.jobs.work([
      {
        name: 'test-flaky',
        retryLimit: 3,
        retryDelaySeconds: 1,
        handle: async (_data: object, meta) => {
          attempts.push({ at: Date.now(), retryCount: meta.retryCount });
          if (attempts.length < 3) throw new Error('provider unavailable');
        },
      },
    ]);
    await t.runtime.jobs.send('test-flaky', {});
    await until('three attempts', () => attempts.length >= 3, 30_000);
    const [a, b, c] = attempts as [(typeof attempts)[0], (typeof attempts)[0], (typeof attempts)[0]];
    expect([a.retryCount, b.retryCount, c.retryCount]).toEqual([0, 1, 2]);
    expect(b.at - a.at).toBeGreaterThanOrEqual(1000);
    expect(c.at - b.at).toBeGreaterThan(b.at - a.at);
  });

  it('fails only the job that threw in a batch; the others of the batch complete once', async () => {
    const handled: number[] = [];
    await t.runtime.jobs.work([
      {
        name: 'test-batch',
        retryLimit: 0,
        batchSize: 10,
        handle: async (data: { n: number }) => {
          handled.push(data.n);
          if (data.n === 3) throw new Error('this one is broken');
        },
      },
    ]);
    await t.runtime.db.transaction(async (tx) => {
      for (let n = 1; n <= 5; n++) await t.runtime.jobs.send('test-batch', { n }, { tx });
    });
    const states = async () =>
      (
        await t.runtime.db.query<{ n: number; state: string }>(
          `SELECT (data->>'n')::int AS n, state FROM pgboss.job WHERE name = 'test-batch' ORDER BY 1`,
        )
      ).rows;
    let settled: { n: number; state: string }[] = [];
    const deadline = Date.now() + 20_000;
    while (!(settled = await states()).every((job) => job.state === 'completed' || job.state === 'failed')) {
      if (Date.now() > deadline) throw new Error(`jobs not settled: ${JSON.stringify(settled)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(settled).toEqual([1, 2, 3, 4, 5].map((n) => ({ n, state: n === 3 ? 'failed' : 'completed' })));
    expect(handled.sort()).toEqual([1, 2, 3, 4, 5]);
  });
  it('runs the jobs of a parallel batch at once, and still fails only the job that threw', async () => {
    // Every job waits until all five have started: handled one after another, the first would wait alone.
    let started = 0;
    let allStarted!: () => void;
    const barrier = new Promise<void>((resolve) => (allStarted = resolve));
    const handled: number[] = [];
    await t.runtime.jobs.work([
      {
        name: 'test-parallel',
        retryLimit: 0,
        batchSize: 10,
        parallel: true,
        handle: async (data: { n: number }) => {
          if (++started === 5) allStarted();
          const alone = new Promise((_, reject) => setTimeout(() => reject(new Error('the batch ran one job at a time')), 15_000).unref());
          await Promise.race([barrier, alone]);
          handled.push(data.n);
          if (data.n === 3) throw new Error('this one is broken');
        },
      },
    ]);
    await t.runtime.db.transaction(async (tx) => {
      for (let n = 1; n <= 5; n++) await t.runtime.jobs.send('test-parallel', { n }, { tx });
    });
    const states = async () =>
      (
        await t.runtime.db.query<{ n: number; state: string }>(
          `SELECT (data->>'n')::int AS n, state FROM pgboss.job WHERE name = 'test-parallel' ORDER BY 1`,
        )
      ).rows;
    await until(
      'the batch settled',
      async () => (await states()).every((job) => job.state === 'completed' || job.state === 'failed'),
      30_000,
    );
    expect(await states()).toEqual([1, 2, 3, 4, 5].map((n) => ({ n, state: n === 3 ? 'failed' : 'completed' })));
    expect(handled.sort()).toEqual([1, 2, 3, 4, 5]);
  });
});

describe('job queue with a long polling interval', () => {
  let slow: TestApp;
  beforeAll(async () => {
    slow = await startTestApp({ env: { JOBS_POLL_SECONDS: '60' } });
  });
  afterAll(() => slow.close());

  it('drains a backlog batch after batch without waiting a polling interval between them', async () => {
    const seen = new Set<number>();
    const backlog = { name: 'test-backlog', batchSize: 5, handle: async (data: { n: number }) => void seen.add(data.n) };
    await slow.runtime.jobs.define([backlog]);
    await slow.runtime.db.transaction(async (tx) => {
      for (let n = 0; n < 45; n++) await slow.runtime.jobs.send('test-backlog', { n }, { tx });
    });
    await slow.runtime.jobs.work([backlog]);
    // 45 jobs in batches of 5 are 9 fetches: with a 60 s pause after each this would take 8 minutes.
    await until('all 45 jobs', () => seen.size === 45, 20_000);
  });

  it('never gives away a job its live worker is still running, however long past the lease it runs', async () => {
    const runs: number[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    await t.runtime.jobs.work([
      {
        name: 'test-slow',
        retryLimit: 3,
        retryDelaySeconds: 1,
        handle: async () => {
          runs.push(Date.now());
          await released;
        },
      },
    ]);
    const id = await t.runtime.jobs.send('test-slow', {});
    await until('the slow job to start', () => runs.length === 1, 20_000);
    // Twice the lease and more than a sweep (a third of it) later, by the database's clock.
    const job = () =>
      t.runtime.db.query<{ state: string; age: number }>(
        `SELECT state, extract(epoch FROM now() - started_on)::float8 AS age FROM pgboss.job WHERE name = 'test-slow' AND id = $1`,
        [id],
      );
    const late = await until(
      'the job to run past twice its lease',
      async () => {
        const row = (await job()).rows[0];
        return row && (row.state !== 'active' || row.age > 7) && row;
      },
      30_000,
    );
    expect(late.state).toBe('active');
    release();
    await until('the slow job to complete', async () => (await job()).rows[0]?.state === 'completed', 20_000);
    expect(runs).toHaveLength(1);
  });

  it("fetches a backlog's next batch in the fetch's own order, reading the batch and not the whole backlog", async () => {
    await t.runtime.jobs.define([{ name: 'test-backlog', handle: async () => undefined }]);
    await t.runtime.jobs.sendMany(Array.from({ length: 3000 }, (_, i) => ({ name: 'test-backlog', data: { i } })));
    await t.runtime.db.query('ANALYZE pgboss.job');
    // The select of pg-boss 10's fetch (plans.js, fetchNextJob).
    const { rows } = await t.runtime.db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id, singleton_key, policy FROM pgboss.job
       WHERE name = 'test-backlog' AND state < 'active' AND start_after < now()
       ORDER BY priority DESC, created_on, id LIMIT 50 FOR UPDATE SKIP LOCKED`,
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toMatch(/Index Scan using \S*name_priority_created_on_id\S*/);
    expect(plan).not.toMatch(/Sort/);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('job leases on PostgreSQL', () => {
  it('renews the leases it can without waiting for a job row another statement holds', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const started = new Set<number>();
    const held = {
      name: 'test-held',
      batchSize: 2,
      parallel: true,
      handle: async (data: { n: number }) => {
        started.add(data.n);
        await released;
      },
    };
    await t.runtime.jobs.define([held]);
    const ids = await t.runtime.db.transaction(async (tx) => [
      await t.runtime.jobs.send('test-held', { n: 1 }, { tx }),
      await t.runtime.jobs.send('test-held', { n: 2 }, { tx }),
    ]);
    await t.runtime.jobs.work([held]);
    await until('both jobs to start', () => started.size === 2, 20_000);
    const expiry = async (id: string | null) =>
      (await t.runtime.db.query<{ expire_in: string }>(`SELECT expire_in::text FROM pgboss.job WHERE name = 'test-held' AND id = $1`, [id]))
        .rows[0]!.expire_in;
    // Another statement holds the first job's row, as pg-boss does while it completes a batch: a
    // renewal that waited for it (and locked the rows in another order) could deadlock with it.
    await t.runtime.db.transaction(async (tx) => {
      await tx.query(`SELECT 1 FROM pgboss.job WHERE name = 'test-held' AND id = $1 FOR UPDATE`, [ids[0]]);
      const before = await expiry(ids[1]!);
      await until('the other lease to be renewed meanwhile', async () => (await expiry(ids[1]!)) !== before, 10_000);
    });
    release();
    await until(
      'both jobs to complete',
      async () => (await t.runtime.db.query(`SELECT 1 FROM pgboss.job WHERE name = 'test-held' AND state = 'completed'`)).rowCount === 2,
      20_000,
    );
  });
});

describe.skipIf(!process.env.DATABASE_URL)('stopping the job queue on PostgreSQL', () => {
  it('waits for a fetch in flight, and runs and completes its jobs before it returns', async () => {
    const logged: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
    const queue = await startJobQueue(t.runtime.db, {
      databaseUrl: t.databaseUrl,
      supervise: false,
      pollSeconds: 0.5,
      maintenanceSeconds: 3600,
      recoverySeconds: 3,
      log,
    });
    let stopReturned = false;
    const handled: boolean[] = [];
    const job = {
      name: 'test-stop',
      handle: async () => {
        await t.runtime.db.query('SELECT 1');
        handled.push(stopReturned);
      },
    };
    await queue.define([job]);
    const id = await queue.send('test-stop', {});
    const { rows } = await t.runtime.db.query<{ partition_name: string }>(
      `SELECT partition_name FROM pgboss.queue WHERE name = 'test-stop'`,
    );
    const partition = `pgboss.${rows[0]!.partition_name}`;
    let stopping: Promise<void> | undefined;
    // The queue's table is held: the worker's first fetch waits, in flight, while stop() is called.
    await t.runtime.db.transaction(async (tx) => {
      await tx.query(`LOCK TABLE ${partition} IN ACCESS EXCLUSIVE MODE`);
      await queue.work([job]);
      await until(
        'the fetch to wait for the table',
        async () =>
          (await t.runtime.db.query('SELECT 1 FROM pg_locks WHERE relation = $1::regclass AND NOT granted', [partition])).rowCount! > 0,
        10_000,
      );
      stopping = queue.stop().then(() => void (stopReturned = true));
    });
    await stopping;
    expect(handled).toEqual([false]);
    const state = await t.runtime.db.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE name = 'test-stop' AND id = $1`, [id]);
    expect(state.rows).toEqual([{ state: 'completed' }]);
    expect(logged).toEqual([]);
  });
});
