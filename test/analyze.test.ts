import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANALYZE_LOCK, analyzeChangedTables, needsOwnUpkeep, vacuumDeadTables } from '../src/platform/analyze.ts';
import { bearer, signUp, createKey, startTestApp, type TestApp } from './harness.ts';

// PGlite has no autovacuum, and a server may run with it off: then the runtime analyzes changed
// tables itself. The timer is set out of reach here; the test calls the round itself.
/** A server's backends flush their counts about a second after their transactions; wait for them. */
async function waitForCountedChanges(t: TestApp, table: string, changes: number) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    await t.runtime.db.query('SELECT pg_stat_force_next_flush()');
    const { rows } = await t.runtime.db.query<{ n: number }>(
      'SELECT n_mod_since_analyze::int AS n FROM pg_stat_user_tables WHERE relname = $1',
      [table],
    );
    if ((rows[0]?.n ?? 0) >= changes) return;
    if (Date.now() > deadline) throw new Error(`${table}: ${rows[0]?.n} of ${changes} changes counted after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The dead rows of a table the statistics count, once the backends flushed them. */
async function waitForDeadRows(t: TestApp, table: string, dead: number) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    await t.runtime.db.query('SELECT pg_stat_force_next_flush()');
    const { rows } = await t.runtime.db.query<{ n: number }>('SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relname = $1', [
      table,
    ]);
    if ((rows[0]?.n ?? 0) >= dead) return rows[0]!.n;
    if (Date.now() > deadline) throw new Error(`${table}: ${rows[0]?.n} of ${dead} dead rows counted after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('analyze of changed tables', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { ANALYZE_SECONDS: '86400' } });
  });
  afterAll(() => t.close());

  it('is needed on the embedded database, and on a server only when its autovacuum is off', async () => {
    const db = t.runtime.db;
    if (db.engine === 'pglite') return expect(await needsOwnUpkeep(db)).toBe(true);
    const { rows } = await db.query<{ autovacuum: string }>('SHOW autovacuum');
    expect(await needsOwnUpkeep(db)).toBe(rows[0]!.autovacuum === 'off');
  });

  it('analyzes a table once enough of it changed, and then the page query walks the index', async (ctx) => {
    if (!(await needsOwnUpkeep(t.runtime.db))) ctx.skip(); // the server's autovacuum would race this test
    const { key } = await createKey(t.app, (await signUp(t.app)).token);
    const list = (
      await t.app.inject({ method: 'POST', url: '/api/v1/contact-lists', headers: bearer(key), payload: { name: 'Big' } })
    ).json();
    const contacts = Array.from({ length: 1000 }, (_, i) => ({ phoneNumber: `+1415555${String(i).padStart(4, '0')}` }));
    for (let batch = 0; batch < 3; batch++) {
      const payload = { contacts: contacts.map((c) => ({ phoneNumber: c.phoneNumber.replace('+1415', `+1${batch + 2}12`) })) };
      expect(
        (
          await t.app.inject({ method: 'POST', url: `/api/v1/contact-lists/${list.id}/contacts/bulk`, headers: bearer(key), payload })
        ).json().imported,
      ).toBe(1000);
    }
    const plan = async () =>
      (
        await t.runtime.db.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN SELECT * FROM contacts WHERE tenant_id = $1 AND list_id = $2 ORDER BY created_at, id LIMIT 25`,
          [list.tenantId, list.id],
        )
      ).rows
        .map((row) => row['QUERY PLAN'])
        .join('\n');

    const estimatedRows = async () =>
      (await t.runtime.db.query<{ n: number }>(`SELECT reltuples::int AS n FROM pg_class WHERE oid = 'contacts'::regclass`)).rows[0]!.n;
    expect(await estimatedRows()).toBe(-1); // never analyzed: the planner guesses
    await waitForCountedChanges(t, 'contacts', 3000);
    expect(await analyzeChangedTables(t.runtime.db)).toContain('public.contacts');
    expect(await estimatedRows()).toBe(3000);
    expect(await plan()).toMatch(/Index Scan using contacts_list_page_idx/);
    expect(await plan()).not.toMatch(/Sort/);
    expect(await analyzeChangedTables(t.runtime.db)).not.toContain('public.contacts');
  });

  it.skipIf(!process.env.DATABASE_URL)('leaves the round to the process that holds it', async () => {
    await t.runtime.db.query(
      "INSERT INTO tenants (id, name, slug) SELECT gen_random_uuid(), 'T' || i, 'analyze-lock-' || i FROM generate_series(1, 200) i",
    );
    await waitForCountedChanges(t, 'tenants', 200);
    const other = new pg.Client({ connectionString: t.databaseUrl });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock($1)', [ANALYZE_LOCK]);
      expect(await analyzeChangedTables(t.runtime.db)).toEqual([]);
      await other.query('COMMIT');
      expect(await analyzeChangedTables(t.runtime.db)).toContain('public.tenants');
    } finally {
      await other.end();
    }
  });

  it('vacuums a table once 50 rows and a fifth of it are dead, not before', async (ctx) => {
    if (!(await needsOwnUpkeep(t.runtime.db))) ctx.skip(); // the server's autovacuum would race this test
    const db = t.runtime.db;
    await db.query(
      "INSERT INTO tenants (id, name, slug) SELECT gen_random_uuid(), 'V' || i, 'vacuum-' || i FROM generate_series(1, 300) i",
    );
    await vacuumDeadTables(db); // a clean start: whatever the earlier tests left dead
    await db.query("DELETE FROM tenants WHERE slug LIKE 'vacuum-%' AND substr(slug, 8)::int <= 40");
    expect(await waitForDeadRows(t, 'tenants', 40)).toBe(40);
    expect(await vacuumDeadTables(db)).not.toContain('public.tenants'); // 40 dead: under 50
    await db.query("DELETE FROM tenants WHERE slug LIKE 'vacuum-%'");
    await waitForDeadRows(t, 'tenants', 300);
    expect(await vacuumDeadTables(db)).toContain('public.tenants');
    const { rows } = await db.query<{ n: number }>("SELECT n_dead_tup::int AS n FROM pg_stat_user_tables WHERE relname = 'tenants'");
    expect(rows[0]!.n).toBe(0);
    expect(await vacuumDeadTables(db)).not.toContain('public.tenants');
  });

  it.skipIf(!process.env.DATABASE_URL)('vacuums without the statement timeout, and the pool keeps its timeout after', async () => {
    const db = t.runtime.db;
    const timeout = async () => (await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout;
    const before = await timeout();
    expect(before).not.toBe('0');
    await db.maintain('VACUUM tenants');
    // The pool hands out its most recently returned connection first: the one the vacuum used.
    for (let i = 0; i < 3; i++) expect(await timeout()).toBe(before);
  });
});
