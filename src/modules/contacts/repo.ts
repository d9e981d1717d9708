import { updateSet, type Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';
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
  created_at: Date;
  updated_at: Date;
}

const LIST_COLUMNS = 'l.id, l.tenant_id, l.name, l.metadata, l.contact_count, l.created_at, l.updated_at';
const CONTACT_COLUMNS = 'id, tenant_id, list_id, phone_number, name, email, metadata, timezone, created_at, updated_at';

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
  const [{ rows }, count] = await Promise.all([
    db.query<ListRow>(
      `SELECT ${LIST_COLUMNS} FROM contact_lists l WHERE l.tenant_id = $1 AND ($2::text IS NULL OR l.name ILIKE $2)
       ORDER BY l.created_at DESC, l.id DESC LIMIT $3 OFFSET $4`,
      [tenantId, pattern, page.limit, page.offset],
    ),
    db.query<{ n: number }>('SELECT count(*)::int AS n FROM contact_lists WHERE tenant_id = $1 AND ($2::text IS NULL OR name ILIKE $2)', [
      tenantId,
      pattern,
    ]),
  ]);
  return { rows, total: count.rows[0]!.n };
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

/** Inserts the contacts whose phone number is not in the list yet; returns the numbers inserted. */
export async function insertContacts(
  db: Queryable,
  tenantId: string,
  listId: string,
  contacts: (ContactFields & { id: string })[],
): Promise<ContactRow[]> {
  if (contacts.length === 0) return [];
  const { rows } = await db.query<ContactRow>(
    `INSERT INTO contacts (tenant_id, id, list_id, phone_number, name, email, metadata, timezone)
     SELECT $1, c.id, $2, c.phone_number, c.name, c.email, c.metadata, c.timezone
     FROM jsonb_to_recordset($3::jsonb) AS c(id uuid, phone_number text, name text, email text, metadata jsonb, timezone text)
     ON CONFLICT (tenant_id, list_id, phone_number) DO NOTHING
     RETURNING ${CONTACT_COLUMNS}`,
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
     ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT 1`,
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

/**
 * A page of a list's contacts, optionally those whose phone, name or email contains `search`, with
 * the total, in one statement; undefined when the list does not exist. Without a search the list's
 * kept count is the total; with one, the matches are counted.
 */
export async function listContacts(
  db: Queryable,
  tenantId: string,
  listId: string,
  page: Page | undefined,
  search?: string,
): Promise<{ rows: ContactRow[]; total: number } | undefined> {
  const pattern = containing(search);
  const matches = '($3::text IS NULL OR phone_number ILIKE $3 OR name ILIKE $3 OR email ILIKE $3)';
  const { rows } = await db.query<ContactRow & { list_total: number; matching: number | null }>(
    `SELECT l.contact_count AS list_total,
            ${pattern ? `(SELECT count(*)::int FROM contacts WHERE tenant_id = $1 AND list_id = $2 AND ${matches})` : 'NULL::int'} AS matching,
            c.*
     FROM contact_lists l
     LEFT JOIN LATERAL (
       SELECT ${CONTACT_COLUMNS} FROM contacts WHERE tenant_id = $1 AND list_id = $2 AND ${matches}
       ORDER BY created_at, id LIMIT $4 OFFSET $5
     ) c ON true
     WHERE l.tenant_id = $1 AND l.id = $2`,
    [tenantId, listId, pattern, page?.limit ?? null, page?.offset ?? 0],
  );
  const first = rows[0];
  if (!first) return undefined;
  // A list with no contacts on this page still gives its one row, with no contact in it.
  const contacts = first.id === null ? [] : rows.map(({ list_total: _total, matching: _matching, ...contact }) => contact);
  return { rows: contacts, total: first.matching ?? first.list_total };
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
