import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, openPostgres, type Db, type Queryable } from '../src/platform/db.ts';
import { selectPage, type PagedSelect } from '../src/platform/pagination.ts';
import { createTestDatabase, untilWaitingForLock } from './harness.ts';

/**
 * `selectPage` on a real database (PGlite, or a database of its own on DATABASE_URL's server), on
 * a table of the test's own: the lists of the modules only give it their SQL.
 */
describe('selectPage: a page of a list and its total in one statement', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let db: Db;

  beforeAll(async () => {
    database = await createTestDatabase('callforge_pages');
    db = database ? openPostgres(database.url, 2) : await openPglite(undefined);
    await db.execScript(`
      CREATE TABLE items (id int PRIMARY KEY, kind text NOT NULL, name text, details jsonb, created_at timestamptz NOT NULL);
      -- Inserted in an order other than the lists': a page in scan order would not be the page.
      INSERT INTO items VALUES
        (3, 'fruit', 'cherry', '{"ripe": true}', '2026-01-03T00:00:00Z'),
        (1, 'fruit', 'apple', NULL, '2026-01-05T00:00:00Z'),
        (5, 'stone', NULL, '[1, 2]', '2026-01-01T00:00:00Z'),
        (2, 'fruit', 'banana', '{}', '2026-01-04T00:00:00Z'),
        (4, 'fruit', 'damson', NULL, '2026-01-02T00:00:00Z');
    `);
  });

  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  const itemsOfKind = (kind: string): PagedSelect => ({
    rows: 'SELECT * FROM items WHERE kind = $1 ORDER BY created_at DESC, id DESC',
    total: 'SELECT count(*)::int AS n FROM items WHERE kind = $1',
    params: [kind],
  });

  /** `db`, telling each statement it is asked: the database itself answers. */
  const counted = (statements: string[]): Queryable => ({
    ...db,
    query: <R>(text: string, params?: unknown[]) => {
      statements.push(text);
      return db.query<R>(text, params);
    },
  });

  it('answers the rows exactly as the rows query alone gives them, in its order, and the total of every page, in one statement', async () => {
    const statements: string[] = [];
    const page = await selectPage<Record<string, unknown>>(counted(statements), itemsOfKind('fruit'), { limit: 2, offset: 1 });
    expect(statements).toHaveLength(1);
    expect(page.total).toBe(4);
    expect(page.rows.map((row) => row.id)).toEqual([2, 3]);
    // No column of the helper's own: a mapper that spreads a row into an answer gets the row's columns only.
    const alone = await db.query(`${itemsOfKind('fruit').rows} LIMIT 2 OFFSET 1`, ['fruit']);
    expect(page.rows).toStrictEqual(alone.rows);
    expect(Object.keys(page.rows[0]!)).toEqual(['id', 'kind', 'name', 'details', 'created_at']);

    const everything = await selectPage<{ id: number }>(db, itemsOfKind('fruit'), { limit: 25, offset: 0 });
    expect(everything).toEqual({ rows: [1, 2, 3, 4].map((id) => expect.objectContaining({ id })), total: 4 });
  });

  it('answers no row for a page past the end, with the total still, and none for an empty list', async () => {
    expect(await selectPage(db, itemsOfKind('fruit'), { limit: 2, offset: 4 })).toEqual({ rows: [], total: 4 });
    expect(await selectPage(db, itemsOfKind('fruit'), { limit: 25, offset: 100 })).toEqual({ rows: [], total: 4 });
    expect(await selectPage(db, itemsOfKind('vegetable'), { limit: 25, offset: 0 })).toEqual({ rows: [], total: 0 });
    // A list with no parameters of its own: LIMIT and OFFSET are $1 and $2.
    const all: PagedSelect = { rows: 'SELECT id FROM items ORDER BY id', total: 'SELECT count(*)::int AS n FROM items', params: [] };
    expect(await selectPage(db, all, { limit: 2, offset: 3 })).toEqual({ rows: [{ id: 4 }, { id: 5 }], total: 5 });
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'reads the rows and the total in one snapshot: a row committed while the page is read, with the pool busy, is in neither',
    async () => {
      // As the rows and the total once came apart: one of the pool's two connections is busy, and
      // a row is written while the page is being read. The rows part waits on a lock the writer
      // holds, so the write is committed after the page's reading began and before it ends.
      const writer = openPostgres(database!.url, 1);
      let releaseBusy!: () => void;
      let busyHeld!: () => void;
      const held = new Promise<void>((resolve) => (busyHeld = resolve));
      const busy = db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        busyHeld();
        await new Promise<void>((resolve) => (releaseBusy = resolve));
      });
      try {
        await writer.query('SELECT pg_advisory_lock(4242)');
        await held;
        const reading = selectPage<{ id: number }>(
          db,
          {
            rows: `SELECT id FROM items WHERE (SELECT true FROM pg_advisory_xact_lock_shared(4242)) ORDER BY id`,
            total: 'SELECT count(*)::int AS n FROM items',
            params: [],
          },
          { limit: 25, offset: 0 },
        );
        await untilWaitingForLock(writer, 'the page to wait for the writer', 'advisory');
        await writer.query(`INSERT INTO items VALUES (6, 'fruit', 'elderberry', NULL, now())`);
        // Two statements would read the total on the connection freed now, after the write.
        releaseBusy();
        await busy;
        await writer.query('SELECT pg_advisory_unlock(4242)');
        expect(await reading).toEqual({ rows: [1, 2, 3, 4, 5].map((id) => ({ id })), total: 5 });
      } finally {
        await held;
        releaseBusy();
        await busy;
        await writer.query('DELETE FROM items WHERE id = 6');
        await writer.close();
      }
    },
  );
});
