import { updateSet, type Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
import type { ContactFields } from './contact-fields.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['contact_lists', 'contacts'] as const;

export interface ListRow {
  id: string;
  tenant_id: string;
  name: string;
  metadata: Record<string, unknown>;
  contact_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface ContactRow {
  id: string;
  tenant_id: string;
  list_id: string;
  phone_number: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  timezone: string | null;
  /** ISO 8601 in UTC to the millisecond, as the API shows it (made by the database: a page of them costs no parsing). */
  created_at: string;
  updated_at: string;
}

const LIST_COLUMNS = 'l.id, l.tenant_id, l.name, l.metadata, l.contact_count, l.created_at, l.updated_at';
// The times' text takes their columns' names: an ORDER BY beside them must name the columns
// (contacts.created_at), or it sorts by the text and no index serves it.
const isoTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const CONTACT_COLUMNS = `id, tenant_id, list_id, phone_number, name, email, metadata, timezone, ${isoTime('created_at')} AS created_at, ${isoTime('updated_at')} AS updated_at`;
/**
 * A contact as the API shows it (service.ts's `toContact`: the same fields in the same order, the
 * time zone only when set), written as JSON text by the database, so that a page is sent as it
 * comes, neither parsed nor serialised again by the service. Text goes through `to_json` for its
 * escaping; `metadata` is JSON already.
 */
const CONTACT_JSON =
  `'{"id":"' || id || '","tenantId":"' || tenant_id || '","contactListId":"' || list_id || '","phoneNumber":' || to_json(phone_number)` +
  ` || ',"name":' || coalesce(to_json(name)::text, 'null') || ',"email":' || coalesce(to_json(email)::text, 'null')` +
  ` || ',"metadata":' || metadata || coalesce(',"timezone":' || to_json(timezone), '')` +
  ` || ',"createdAt":"' || ${isoTime('created_at')} || '","updatedAt":"' || ${isoTime('updated_at')} || '"}'`;

export async function insertList(
  db: Queryable,
  tenantId: string,
  list: { id: string; name: string; metadata: Record<string, unknown> },
): Promise<ListRow> {
  const { rows } = await db.query<ListRow>(
    `INSERT INTO contact_lists (tenant_id, id, name, metadata) VALUES ($1, $2, $3, $4)
     RETURNING id, tenant_id, name, metadata, contact_count, created_at, updated_at`,
    [tenantId, list.id, list.name, JSON.stringify(list.metadata)],
  );
  return rows[0]!;
}

export async function findList(db: Queryable, tenantId: string, listId: string): Promise<ListRow | undefined> {
  const { rows } = await db.query<ListRow>(`SELECT ${LIST_COLUMNS} FROM contact_lists l WHERE l.tenant_id = $1 AND l.id = $2`, [
    tenantId,
    listId,
  ]);
  return rows[0];
}

export async function listExists(db: Queryable, tenantId: string, listId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM contact_lists WHERE tenant_id = $1 AND id = $2', [tenantId, listId]);
  return rowCount === 1;
}

/** An ILIKE pattern matching `search` anywhere, its wildcards taken literally; null for no search. */
const containing = (search: string | undefined) => (search ? `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null);

export async function listLists(
  db: Queryable,
  tenantId: string,
  search: string | undefined,
  page: Page,
): Promise<{ rows: ListRow[]; total: number }> {
  const pattern = containing(search);
  return selectPage<ListRow>(
    db,
    {
      rows: `SELECT ${LIST_COLUMNS} FROM contact_lists l WHERE l.tenant_id = $1 AND ($2::text IS NULL OR l.name ILIKE $2)
       ORDER BY l.created_at DESC, l.id DESC`,
      total: 'SELECT count(*)::int AS n FROM contact_lists WHERE tenant_id = $1 AND ($2::text IS NULL OR name ILIKE $2)',
      params: [tenantId, pattern],
    },
    page,
  );
}

export async function updateList(
  db: Queryable,
  tenantId: string,
  listId: string,
  patch: { name?: string; metadata?: Record<string, unknown> },
): Promise<boolean> {
  const { set, params } = updateSet({ name: patch.name ?? undefined, metadata: patch.metadata && JSON.stringify(patch.metadata) }, 2);
  const { rowCount } = await db.query(`UPDATE contact_lists SET ${set} WHERE tenant_id = $1 AND id = $2`, [tenantId, listId, ...params]);
  return rowCount === 1;
}

export async function deleteList(db: Queryable, tenantId: string, listId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM contact_lists WHERE tenant_id = $1 AND id = $2', [tenantId, listId]);
  return rowCount === 1;
}

/** Inserts the contacts a list does not hold yet (by phone number); answers the numbers it inserted. */
export async function insertContacts(
  db: Queryable,
  tenantId: string,
  listId: string,
  contacts: (ContactFields & { id: string })[],
): Promise<string[]> {
  if (contacts.length === 0) return [];
  // Only the numbers come back: an import of thousands needs to know which were new, not their rows.
  const rows = await insertReturning<{ phone_number: string }>(db, tenantId, listId, contacts, 'phone_number');
  return rows.map((row) => row.phone_number);
}

/** Inserts one contact; undefined when the list already holds its number. */
export async function insertContact(
  db: Queryable,
  tenantId: string,
  listId: string,
  contact: ContactFields & { id: string },
): Promise<ContactRow | undefined> {
  return (await insertReturning<ContactRow>(db, tenantId, listId, [contact], CONTACT_COLUMNS))[0];
}

async function insertReturning<R>(
  db: Queryable,
  tenantId: string,
  listId: string,
  contacts: (ContactFields & { id: string })[],
  returning: string,
): Promise<R[]> {
  const { rows } = await db.query<R>(
    `INSERT INTO contacts (tenant_id, id, list_id, phone_number, name, email, metadata, timezone)
     SELECT $1, c.id, $2, c.phone_number, c.name, c.email, c.metadata, c.timezone
     FROM jsonb_to_recordset($3::jsonb) AS c(id uuid, phone_number text, name text, email text, metadata jsonb, timezone text)
     ON CONFLICT (tenant_id, list_id, phone_number) DO NOTHING
     RETURNING ${returning}`,
    [
      tenantId,
      listId,
      JSON.stringify(
        contacts.map((c) => ({
          id: c.id,
          phone_number: c.phoneNumber,
          name: c.name,
          email: c.email,
          metadata: c.metadata,
          timezone: c.timezone,
        })),
      ),
    ],
  );
  return rows;
}

/** The contact of any list holding this number that was updated last (see the service); the newest first on a tie. */
export async function findContactByPhone(db: Queryable, tenantId: string, phoneNumber: string): Promise<ContactRow | undefined> {
  const { rows } = await db.query<ContactRow>(
    `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND phone_number = $2
     ORDER BY contacts.updated_at DESC, contacts.created_at DESC, id DESC LIMIT 1`,
    [tenantId, phoneNumber],
  );
  return rows[0];
}

export async function findContactById(db: Queryable, tenantId: string, contactId: string): Promise<ContactRow | undefined> {
  const { rows } = await db.query<ContactRow>(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND id = $2`, [
    tenantId,
    contactId,
  ]);
  return rows[0];
}

export async function findContact(db: Queryable, tenantId: string, listId: string, contactId: string): Promise<ContactRow | undefined> {
  const { rows } = await db.query<ContactRow>(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND list_id = $2 AND id = $3`, [
    tenantId,
    listId,
    contactId,
  ]);
  return rows[0];
}

/** A page of a list's contacts asked for: all of them without `page`; with `search`, those whose phone, name or email contains it. */
export interface ContactsAsked {
  tenantId: string;
  listId: string;
  page: Page | undefined;
  search: string | undefined;
}

/**
 * The statement of `listContactPages`: one row per ask joined to its list, then the page as a lateral
 * subquery (run once per ask, in a nested loop), its contacts written as one JSON array in their
 * order (`CONTACT_JSON`).
 *
 * One value per page rather than a row per contact: on the embedded engine a statement's rows are
 * encoded on the wire, parsed by PGlite and copied to the service's thread one field at a time, and
 * for 50 pages of 25 that took three times as long as running the statement (measured: 33 ms a
 * batch of 50 pages as rows, 14 ms as one JSON text per page). The text is the API's own, so the
 * service sends it untouched: for 50 pages of 25, writing it took the embedded engine 6.8 ms where
 * `json_agg` of the columns took 8.4 ms, and the service no longer parses 470 KB and serialises
 * them again. `string_agg` keeps the order of the sorted subquery it is fed (PostgreSQL's
 * documented way to order an aggregate's input).
 *
 * What is searched is counted in a lateral subquery of its own, once per ask. As a subquery in the
 * select list it was a SubPlan evaluated for every row of the page (a search's page of 25 counted
 * the list 25 times), and the planner charged its cost for every row it expected: on a list that
 * was the whole table that made a page's estimate 790,000 (above `jit_above_cost`, so every page
 * was compiled by the JIT, about 150-570 ms) while it ran in 0.3 ms. A batch with no search has
 * neither the count nor the search's condition, so its estimate is that of the pages alone.
 */
export function contactPagesSql(searched: boolean): string {
  const matches = '(phone_number ILIKE q.pattern OR name ILIKE q.pattern OR email ILIKE q.pattern)';
  const ofList = 'tenant_id = q.tenant_id AND list_id = q.list_id';
  return `SELECT q.asked::text AS asked, ${searched ? 'CASE WHEN q.pattern IS NULL THEN l.contact_count ELSE m.n END' : 'l.contact_count'} AS page_total, c.contacts
     FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int[]) WITH ORDINALITY AS q (tenant_id, list_id, pattern, lim, off, asked)
     JOIN contact_lists l ON l.tenant_id = q.tenant_id AND l.id = q.list_id${
       searched
         ? `
     CROSS JOIN LATERAL (SELECT count(*)::int AS n FROM contacts WHERE q.pattern IS NOT NULL AND ${ofList} AND ${matches}) m`
         : ''
     }
     CROSS JOIN LATERAL (
       SELECT '[' || coalesce(string_agg(page.contact, ','), '') || ']' AS contacts FROM (
         SELECT ${CONTACT_JSON} AS contact FROM contacts WHERE ${ofList}${searched ? ` AND (q.pattern IS NULL OR ${matches})` : ''}
         ORDER BY contacts.created_at, id LIMIT q.lim OFFSET q.off
       ) page
     ) c`;
}

/** A page of contacts: the API's JSON array of them as text, and the total it is a page of. */
export interface ContactPage {
  contactsJson: string;
  total: number;
}

/**
 * Pages of lists' contacts, of any tenants, with their totals, in one statement; for each ask, in
 * order, undefined when its list does not exist. Without a search the list's kept count is the
 * total; with one, the matches are counted.
 */
export async function listContactPages(db: Queryable, asked: ContactsAsked[]): Promise<(ContactPage | undefined)[]> {
  const patterns = asked.map((ask) => containing(ask.search));
  const { rows } = await db.query<{ asked: string; page_total: number; contacts: string }>(
    contactPagesSql(patterns.some((pattern) => pattern !== null)),
    [
      asked.map((ask) => ask.tenantId),
      asked.map((ask) => ask.listId),
      patterns,
      asked.map((ask) => ask.page?.limit ?? null),
      asked.map((ask) => ask.page?.offset ?? 0),
    ],
  );
  const pages: (ContactPage | undefined)[] = asked.map(() => undefined);
  for (const row of rows) pages[Number(row.asked) - 1] = { contactsJson: row.contacts, total: row.page_total };
  return pages;
}

export async function updateContact(
  db: Queryable,
  tenantId: string,
  listId: string,
  contactId: string,
  patch: {
    phoneNumber?: string;
    name?: string | null;
    email?: string | null;
    metadata?: Record<string, unknown>;
    timezone?: string | null;
  },
): Promise<ContactRow | undefined> {
  const { set, params } = updateSet(
    {
      phone_number: patch.phoneNumber ?? undefined,
      name: patch.name,
      email: patch.email,
      metadata: patch.metadata && JSON.stringify(patch.metadata),
      timezone: patch.timezone,
    },
    3,
  );
  const { rows } = await db.query<ContactRow>(
    `UPDATE contacts SET ${set} WHERE tenant_id = $1 AND list_id = $2 AND id = $3 RETURNING ${CONTACT_COLUMNS}`,
    [tenantId, listId, contactId, ...params],
  );
  return rows[0];
}

export async function deleteContacts(db: Queryable, tenantId: string, listId: string, contactIds: string[]): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM contacts WHERE tenant_id = $1 AND list_id = $2 AND id = ANY($3::uuid[])', [
    tenantId,
    listId,
    contactIds,
  ]);
  return rowCount;
}

/** A contact of a list as read in insertion order, with the exact key of its place in that order. */
export interface ListedContactRow {
  id: string;
  phone_number: string;
  name: string | null;
  email: string | null;
  metadata: Record<string, unknown>;
  timezone: string | null;
  /** created_at as text: a JS Date would drop its microseconds and misplace the next page. */
  page_key: string;
}

/** The next `limit` contacts of a list in insertion order after `after` (keyset on the page index, no OFFSET). */
export async function contactsAfter(
  db: Queryable,
  tenantId: string,
  listId: string,
  after: { pageKey: string; id: string } | undefined,
  limit: number,
): Promise<ListedContactRow[]> {
  const columns = 'id, phone_number, name, email, metadata, timezone, created_at::text AS page_key';
  const { rows } = after
    ? await db.query<ListedContactRow>(
        `SELECT ${columns} FROM contacts WHERE tenant_id = $1 AND list_id = $2 AND (created_at, id) > ($3::timestamptz, $4::uuid)
         ORDER BY created_at, id LIMIT $5`,
        [tenantId, listId, after.pageKey, after.id, limit],
      )
    : await db.query<ListedContactRow>(
        `SELECT ${columns} FROM contacts WHERE tenant_id = $1 AND list_id = $2 ORDER BY created_at, id LIMIT $3`,
        [tenantId, listId, limit],
      );
  return rows;
}
