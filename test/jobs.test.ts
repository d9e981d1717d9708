import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

async function until<T>(what: string, probe: () => T | undefined | false, deadlineMs = 20_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

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

    await until('the committed job', () => seen.includes('committed'));
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
});
