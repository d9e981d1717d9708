import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listContactPages, type ContactPage, type ContactsAsked } from '../src/modules/contacts/repo.ts';
import type { Queryable } from '../src/platform/db.ts';
import { bearer, createKey, signUp, startTestApp, type TestApp } from './harness.ts';

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`'s plan, with the fields these tests read. */
interface PlanNode {
  'Node Type': string;
  'Parent Relationship'?: string;
  'Actual Loops': number;
  /** What the node computes (VERBOSE): `count(*)` for a count, `string_agg(page.contact, ',')` for a page's JSON. */
  Output?: string[];
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
/** The plan's aggregates that compute `what` (`count`, `string_agg`). */
const aggregatesOf = (nodes: PlanNode[], what: string) =>
  nodes.filter((node) => node['Node Type'] === 'Aggregate' && node.Output?.some((output) => output.includes(`${what}(`)));

/**
 * The plan the database ran for the statement `read` makes, through `db`: each statement asked of
 * it is run under EXPLAIN (ANALYZE, FORMAT JSON), so the plan is that of the real statement.
 */
async function planOf(db: Queryable, read: (explaining: Queryable) => Promise<unknown>): Promise<PlanNode[]> {
  const plans: PlanNode[] = [];
  const explaining: Queryable = {
    ...db,
    async query<R>(text: string, params?: unknown[]) {
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(
        `EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) ${text}`,
        params,
      );
      const json = rows[0]!['QUERY PLAN'];
      plans.push((typeof json === 'string' ? (JSON.parse(json) as [{ Plan: PlanNode }]) : json)[0].Plan);
      return { rows: [] as R[], rowCount: 0 };
    },
  };
  await read(explaining);
  expect(plans).toHaveLength(1);
  return nodesOf(plans[0]!);
}

/**
 * The contact page, the hot statement of a big list (issue 38). A user's first list is the whole
 * table, and the planner, which knows the list only as "some list of the table", expected each
 * page to be the whole of it; a count in the select list was charged for every row it expected:
 * 790,000 for a page of a 100,000-contact list filled through the bulk endpoint, over
 * `jit_above_cost`, so every page was compiled by the JIT. These check the causes without timing.
 */
describe('hot statements on a stock PostgreSQL', () => {
  let t: TestApp;
  let ask: Omit<ContactsAsked, 'search'>;

  beforeAll(async () => {
    t = await startTestApp();
    const { key } = await createKey(t.app, (await signUp(t.app)).token);
    const list = (
      await t.app.inject({ method: 'POST', url: '/api/v1/contact-lists', headers: bearer(key), payload: { name: 'First' } })
    ).json<{ id: string; tenantId: string }>();
    // As a user's client fills a list: the bulk endpoint, so the contacts share their created_at.
    const contacts = Array.from({ length: 60 }, (_, i) => ({ phoneNumber: `+1415555${String(i).padStart(4, '0')}`, name: `Person ${i}` }));
    const added = await t.app.inject({
      method: 'POST',
      url: `/api/v1/contact-lists/${list.id}/contacts/bulk`,
      headers: bearer(key),
      payload: { contacts },
    });
    expect(added.json().imported).toBe(60);
    ask = { tenantId: list.tenantId, listId: list.id, page: { page: 1, limit: 25, offset: 0 } };
  });
  afterAll(() => t.close());

  it('a page without a search counts nothing: no subquery run per row, no count; its rows are made one JSON value once per ask', async () => {
    const nodes = await planOf(t.runtime.db, (db) =>
      listContactPages(db, [
        { ...ask, search: undefined },
        { ...ask, search: undefined, page: { page: 2, limit: 25, offset: 25 } },
      ]),
    );
    expect(nodes.filter((node) => node['Parent Relationship'] === 'SubPlan')).toEqual([]);
    expect(aggregatesOf(nodes, 'count')).toEqual([]);
    const pages = aggregatesOf(nodes, 'string_agg');
    expect(pages).toHaveLength(1);
    expect(pages[0]!['Actual Loops']).toBe(2);
  });

  it('a searched page counts its matches once per ask, not once per row of the page', async () => {
    // Every contact matches: a page of 25 rows, and two asks in the batch (one without a search).
    const nodes = await planOf(t.runtime.db, (db) =>
      listContactPages(db, [
        { ...ask, search: 'Person' },
        { ...ask, search: undefined },
      ]),
    );
    expect(nodes.filter((node) => node['Parent Relationship'] === 'SubPlan')).toEqual([]);
    const counts = aggregatesOf(nodes, 'count');
    expect(counts).toHaveLength(1);
    expect(counts[0]!['Actual Loops']).toBe(2);
  });

  it('the answers are the same: the search counted, the list without one its kept count', async () => {
    const [searched, all] = await listContactPages(t.runtime.db, [
      { ...ask, search: 'Person 1' }, // Person 1 and Person 10 to 19
      { ...ask, search: undefined },
    ]);
    const names = (page: ContactPage | undefined) => (JSON.parse(page!.contactsJson) as { name: string }[]).map((contact) => contact.name);
    expect(searched!.total).toBe(11);
    expect(names(searched)).toEqual(['Person 1', ...Array.from({ length: 10 }, (_, i) => `Person 1${i}`)]);
    expect(all!.total).toBe(60);
    expect(names(all)).toEqual(Array.from({ length: 25 }, (_, i) => `Person ${i}`));
  });

  it('a page past the end of its list is empty, and a list that is not there has no page', async () => {
    const [past, missing] = await listContactPages(t.runtime.db, [
      { ...ask, search: undefined, page: { page: 4, limit: 25, offset: 75 } },
      { ...ask, listId: '00000000-0000-4000-8000-000000000000', search: undefined },
    ]);
    expect(past).toEqual({ contactsJson: '[]', total: 60 });
    expect(missing).toBeUndefined();
  });

  it.skipIf(!process.env.DATABASE_URL)('the service reads with the JIT off on every connection of its pool', async () => {
    // Several at once, so that the pool opens several connections.
    const settings = await Promise.all(
      Array.from({ length: 4 }, () => t.runtime.db.transaction(async (tx) => (await tx.query<{ jit: string }>('SHOW jit')).rows[0]!.jit)),
    );
    expect(settings).toEqual(['off', 'off', 'off', 'off']);
  });
});
