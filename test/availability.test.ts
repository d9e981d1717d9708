import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedDatabaseFailure, isStatementTimeout, openPglite, withoutStatementTimeout } from '../src/platform/db.ts';
import { bearer, createKey, signUp, startTestApp, until, type TestApp } from './harness.ts';

const onPostgres = Boolean(process.env.DATABASE_URL);
const nested = (depth: number) => '{"k":'.repeat(depth) + '1' + '}'.repeat(depth);

/** Holds the database's every connection (PGlite's one, or the pool of one) until released. */
async function holdDatabase(t: TestApp) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const holder = t.runtime.db.transaction(async (tx) => {
    await tx.query('SELECT 1');
    entered();
    await released;
  });
  await inside;
  return async () => {
    release();
    await holder;
  };
}

describe('availability', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    // One connection on PostgreSQL, as PGlite has: a held transaction then blocks every other statement.
    t = await startTestApp({ env: { DB_POOL_SIZE: '1' } });
    key = (await createKey(t.app, (await signUp(t.app)).token)).key;
  });
  afterAll(async () => t?.close());

  it('refuses a JSON body nested deeper than 64 levels with a 400, before it reaches the database', async () => {
    // Nested thousands deep, such a value used to reach PGlite (which it can leave spinning) or fail as a 500.
    for (const depth of [65, 5000, 100_000]) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/contact-lists',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        payload: `{"name":"Deep","metadata":${nested(depth)}}`,
      });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        code: 'INVALID_JSON',
        message: 'The request body nests objects and arrays more than 64 levels deep; flatten it.',
      });
    }
    // Brackets inside strings are text, and a document of ordinary depth is taken.
    const ordinary = await t.app.inject({
      method: 'POST',
      url: '/api/v1/contact-lists',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      payload: `{"name":"Deep","metadata":{"brackets":"${'['.repeat(500)}","nested":${nested(40)}}}`,
    });
    expect(ordinary.statusCode).toBe(201);
  });

  it('answers /readyz 503 while the database does not answer, /healthz 200 all along, and ready again after', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const release = await holdDatabase(t);
    try {
      // Before the fix, this waited for the database: as long as it was held.
      const blocked = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(blocked.statusCode).toBe(503);
      expect(blocked.json()).toMatchObject({
        code: 'DATABASE_UNAVAILABLE',
        message: 'The database is not reachable; the service cannot take requests yet.',
      });
      // A second probe while the first ping is still out waits on that one and answers the same.
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    } finally {
      await release();
    }
    await until('ready again', async () => (await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200);
  });
});

describe.skipIf(onPostgres)('the embedded database', () => {
  it("runs statements on a thread of its own: the service's thread goes on while a long one runs", async () => {
    const db = await openPglite(undefined);
    try {
      let finished = false;
      const sleeping = db.query('SELECT pg_sleep(1)').then(() => (finished = true));
      // Before, PGlite ran on this thread: nothing else ran until the statement had ended.
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(finished).toBe(false);
      await sleeping;
      expect(finished).toBe(true);
    } finally {
      await db.close();
    }
  });

  it('prepares each statement once and keeps at most 1,000 prepared, dropping the least recently used', async () => {
    const db = await openPglite(undefined);
    try {
      const prepared = async () =>
        (await db.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'cf\\_%'")).rows.map(
          (row) => row.statement,
        );
      const before = (await prepared()).length;
      await db.query('SELECT $1::int AS kept', [1]);
      await db.query('SELECT $1::int AS kept', [2]);
      expect((await prepared()).length).toBe(before + 1); // prepared once, run twice
      for (let i = 0; i < 1_000; i++) await db.query(`SELECT ${i}::int AS made_per_call`);
      const kept = await prepared();
      expect(kept.length).toBe(1_000);
      expect(kept).not.toContain('SELECT $1::int AS kept');
      expect(kept).toContain('SELECT 999::int AS made_per_call');
      expect(kept).not.toContain('SELECT 0::int AS made_per_call');
      // A dropped statement is prepared again when it comes back.
      expect((await db.query<{ kept: number }>('SELECT $1::int AS kept', [3])).rows).toEqual([{ kept: 3 }]);
    } finally {
      await db.close();
    }
  });

  it('fails a statement that overflows the stack inside PGlite and takes no other, instead of answering nothing or spinning', async () => {
    const told: unknown[] = [];
    const db = await openPglite(undefined, (failure) => told.push(failure));
    try {
      // PostgreSQL parses JSON recursively; this deep, PGlite overflows its thread's stack and swallows
      // it. Before the guard: no rows, as if it succeeded, and the next statement could spin forever.
      const depth = 50_000;
      const failure = await db
        .query('SELECT jsonb_typeof($1::jsonb) AS type', ['['.repeat(depth) + ']'.repeat(depth)])
        .catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(EmbeddedDatabaseFailure);
      expect((failure as Error).message).toContain('Maximum call stack size exceeded');
      expect(told).toEqual([failure]);
      await expect(db.query('SELECT 1')).rejects.toBe(failure);
      await expect(db.transaction((tx) => tx.query('SELECT 1'))).rejects.toBe(failure);
    } finally {
      await db.close();
    }
  });
});

// PGlite runs a statement to its end on the Node thread: it has no timer to cancel one (measured in
// docs/operations.md, "Readiness, timeouts and the embedded database"), so the statement timeout is PostgreSQL's alone.
describe.skipIf(!onPostgres)('statement timeout on PostgreSQL', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { DB_STATEMENT_TIMEOUT_MS: '500' } });
    key = (await createKey(t.app, (await signUp(t.app)).token)).key;
  });
  afterAll(async () => t?.close());

  it('cancels a statement that runs too long, and lifts the bound where a transaction asks', async () => {
    const failure = await t.runtime.db.query('SELECT pg_sleep(5)').catch((error: unknown) => error);
    expect(isStatementTimeout(failure)).toBe(true);
    const slow = await t.runtime.db.transaction(async (tx) => {
      await withoutStatementTimeout(tx);
      return tx.query<{ done: boolean }>('SELECT true AS done FROM pg_sleep(1)');
    });
    expect(slow.rows).toEqual([{ done: true }]);
    expect((await t.runtime.db.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('answers a request whose statement is cancelled with 503 DATABASE_TIMEOUT, and serves the next', async () => {
    const locker = new pg.Client({ connectionString: t.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE agents IN ACCESS EXCLUSIVE MODE');
      // Before the fix, the list waited for the lock: as long as it was held.
      const blocked = await t.app.inject({ method: 'GET', url: '/api/v1/agents', headers: bearer(key) });
      expect(blocked.statusCode).toBe(503);
      expect(blocked.json()).toMatchObject({
        code: 'DATABASE_TIMEOUT',
        message: 'The database took too long to answer this request; try again in a moment.',
      });
      await locker.query('ROLLBACK');
    } finally {
      await locker.end();
    }
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/agents', headers: bearer(key) })).statusCode).toBe(200);
  });
});

describe.skipIf(!onPostgres)('transactions on PostgreSQL', () => {
  it("runs a transaction's statements asked at once one after another, in order, without the driver's deprecated queue", async () => {
    // In a process of its own: the driver warns once per process, and this one may have warned already.
    const script = `
      import { openPostgres } from './src/platform/db.ts';
      const warnings = [];
      process.on('warning', (warning) => warnings.push(warning.message));
      const db = openPostgres(process.env.DATABASE_URL, 2);
      const seen = await db.transaction(async (tx) => {
        await tx.query('CREATE TEMP TABLE asked (n int) ON COMMIT DROP');
        const answers = await Promise.all([
          tx.query('INSERT INTO asked VALUES (1)'),
          tx.query('INSERT INTO asked VALUES (2)'),
          tx.query('SELECT count(*)::int AS n FROM asked'),
        ]);
        return answers[2].rows[0].n;
      });
      await db.close();
      await new Promise((resolve) => setImmediate(resolve));
      console.log(JSON.stringify({ seen, warnings }));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env },
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({ seen: 2, warnings: [] });
  });
});
