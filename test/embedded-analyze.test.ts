import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyzeChangedTables } from '../src/platform/embedded-analyze.ts';
import { bearer, signUp, createKey, startTestApp, type TestApp } from './harness.ts';

// PGlite has no autovacuum: the embedded runtime analyzes changed tables itself.
describe.skipIf(!!process.env.DATABASE_URL)('analyze on the embedded database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('analyzes a table once enough of it changed, and then the page query walks the index', async () => {
    const { key } = await createKey(t.app, (await signUp(t.app)).token);
    const list = (await t.app.inject({ method: 'POST', url: '/api/v1/contact-lists', headers: bearer(key), payload: { name: 'Big' } })).json();
    const contacts = Array.from({ length: 1000 }, (_, i) => ({ phoneNumber: `+1415555${String(i).padStart(4, '0')}` }));
    for (let batch = 0; batch < 3; batch++) {
      const payload = { contacts: contacts.map((c) => ({ phoneNumber: c.phoneNumber.replace('+1415', `+1${batch + 2}12`) })) };
      expect((await t.app.inject({ method: 'POST', url: `/api/v1/contact-lists/${list.id}/contacts/bulk`, headers: bearer(key), payload })).json().imported).toBe(1000);
    }
    const plan = async () =>
      (await t.runtime.db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT * FROM contacts WHERE tenant_id = $1 AND list_id = $2 ORDER BY created_at, id LIMIT 25`,
        [list.tenantId, list.id],
      )).rows.map((row) => row['QUERY PLAN']).join('\n');

    const estimatedRows = async () => (await t.runtime.db.query<{ n: number }>(`SELECT reltuples::int AS n FROM pg_class WHERE oid = 'contacts'::regclass`)).rows[0]!.n;
    expect(await estimatedRows()).toBe(-1); // never analyzed: the planner guesses
    expect(await analyzeChangedTables(t.runtime.db)).toContain('public.contacts');
    expect(await estimatedRows()).toBe(3000);
    expect(await plan()).toMatch(/Index Scan using contacts_list_page_idx/);
    expect(await plan()).not.toMatch(/Sort/);
    expect(await analyzeChangedTables(t.runtime.db)).not.toContain('public.contacts');
  });
});
