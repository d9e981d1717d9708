import type { Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['dnc_entries'] as const;

export interface DncRow {
  phone_number: string;
  source: string;
  reason: string | null;
  evidence: Record<string, unknown>;
  created_at: Date;
}

const COLUMNS = 'phone_number, source, reason, evidence, created_at';

export interface NewEntry {
  phoneNumber: string;
  source: string;
  reason: string | null;
  evidence: Record<string, unknown>;
}

/** Adds the numbers not yet listed, in one statement; a listed number keeps its first entry. Returns the new rows. */
export async function insertEntries(db: Queryable, tenantId: string, entries: NewEntry[], at: Date): Promise<DncRow[]> {
  if (entries.length === 0) return [];
  const { rows } = await db.query<DncRow>(
    `INSERT INTO dnc_entries (tenant_id, phone_number, source, reason, evidence, created_at)
     SELECT $1, e.phone_number, e.source, e.reason, e.evidence, $6
     FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[]) AS e(phone_number, source, reason, evidence)
     ON CONFLICT (tenant_id, phone_number) DO NOTHING
     RETURNING ${COLUMNS}`,
    [
      tenantId,
      entries.map((entry) => entry.phoneNumber),
      entries.map((entry) => entry.source),
      entries.map((entry) => entry.reason),
      entries.map((entry) => JSON.stringify(entry.evidence)),
      at,
    ],
  );
  return rows;
}

export async function findEntry(db: Queryable, tenantId: string, phoneNumber: string): Promise<DncRow | undefined> {
  const { rows } = await db.query<DncRow>(`SELECT ${COLUMNS} FROM dnc_entries WHERE tenant_id = $1 AND phone_number = $2`, [
    tenantId,
    phoneNumber,
  ]);
  return rows[0];
}

export async function deleteEntry(db: Queryable, tenantId: string, phoneNumber: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM dnc_entries WHERE tenant_id = $1 AND phone_number = $2', [tenantId, phoneNumber]);
  return rowCount > 0;
}

/** Newest first; `search` matches a part of the number. */
export async function listEntries(db: Queryable, tenantId: string, search: string | undefined, page: Page) {
  const filter = search ? `AND phone_number LIKE '%' || $4 || '%'` : '';
  const params = [tenantId, page.limit, page.offset, ...(search ? [search] : [])];
  const [{ rows }, count] = await Promise.all([
    db.query<DncRow>(
      `SELECT ${COLUMNS} FROM dnc_entries WHERE tenant_id = $1 ${filter} ORDER BY created_at DESC, phone_number LIMIT $2 OFFSET $3`,
      params,
    ),
    db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dnc_entries WHERE tenant_id = $1 ${filter.replace('$4', '$2')}`,
      search ? [tenantId, search] : [tenantId],
    ),
  ]);
  return { rows, total: count.rows[0]!.n };
}

/** The next `limit` entries after `after` in number order: the export reads the list in such slices. */
export async function entriesAfter(db: Queryable, tenantId: string, after: string, limit: number): Promise<DncRow[]> {
  const { rows } = await db.query<DncRow>(
    `SELECT ${COLUMNS} FROM dnc_entries WHERE tenant_id = $1 AND phone_number > $2 ORDER BY phone_number LIMIT $3`,
    [tenantId, after, limit],
  );
  return rows;
}

/** Which of `phoneNumbers` are on the list. */
export async function listedAmong(db: Queryable, tenantId: string, phoneNumbers: string[]): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  const { rows } = await db.query<{ phone_number: string }>(
    'SELECT phone_number FROM dnc_entries WHERE tenant_id = $1 AND phone_number = ANY ($2::text[])',
    [tenantId, phoneNumbers],
  );
  return new Set(rows.map((row) => row.phone_number));
}
