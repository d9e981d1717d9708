import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['dnc_entries', 'compliance_settings', 'consents', 'compliance_records', 'compliance_chain_heads'] as const;

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
  const filter = search ? `AND phone_number LIKE '%' || $2 || '%'` : '';
  return selectPage<DncRow>(
    db,
    {
      rows: `SELECT ${COLUMNS} FROM dnc_entries WHERE tenant_id = $1 ${filter} ORDER BY created_at DESC, phone_number`,
      total: `SELECT count(*)::int AS n FROM dnc_entries WHERE tenant_id = $1 ${filter}`,
      params: search ? [tenantId, search] : [tenantId],
    },
    page,
  );
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

// ---------------------------------------------------------------------------------------------
// Compliance settings

export interface SettingsRow {
  window_time_zone: string;
  calling_rules: boolean;
  require_consent: boolean;
  max_calls_per_day: number | null;
  max_calls_per_week: number | null;
  custom_rules: unknown[];
  updated_at: Date;
}

export async function findSettings(db: Queryable, tenantId: string): Promise<SettingsRow | undefined> {
  const { rows } = await db.query<SettingsRow>('SELECT * FROM compliance_settings WHERE tenant_id = $1', [tenantId]);
  return rows[0];
}

export async function saveSettings(
  db: Queryable,
  tenantId: string,
  settings: Omit<SettingsRow, 'updated_at'>,
  at: Date,
): Promise<SettingsRow> {
  const { rows } = await db.query<SettingsRow>(
    `INSERT INTO compliance_settings (tenant_id, window_time_zone, calling_rules, require_consent, max_calls_per_day, max_calls_per_week, custom_rules, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (tenant_id) DO UPDATE SET window_time_zone = $2, calling_rules = $3, require_consent = $4, max_calls_per_day = $5,
       max_calls_per_week = $6, custom_rules = $7, updated_at = $8
     RETURNING *`,
    [
      tenantId,
      settings.window_time_zone,
      settings.calling_rules,
      settings.require_consent,
      settings.max_calls_per_day,
      settings.max_calls_per_week,
      JSON.stringify(settings.custom_rules),
      at,
    ],
  );
  return rows[0]!;
}

// ---------------------------------------------------------------------------------------------
// Consents

export interface ConsentRow {
  id: string;
  phone_number: string;
  channel: string;
  source: string;
  evidence: Record<string, unknown>;
  granted_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
}

export async function insertConsent(db: Queryable, tenantId: string, row: Omit<ConsentRow, 'revoked_at'>): Promise<ConsentRow> {
  const { rows } = await db.query<ConsentRow>(
    `INSERT INTO consents (tenant_id, id, phone_number, channel, source, evidence, granted_at, expires_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
    [
      tenantId,
      row.id,
      row.phone_number,
      row.channel,
      row.source,
      JSON.stringify(row.evidence),
      row.granted_at,
      row.expires_at,
      row.created_at,
    ],
  );
  return rows[0]!;
}

export async function listConsents(db: Queryable, tenantId: string, phoneNumber: string | undefined, page: Page) {
  const where = 'tenant_id = $1 AND ($2::text IS NULL OR phone_number = $2)';
  const params = [tenantId, phoneNumber ?? null];
  return selectPage<ConsentRow>(
    db,
    {
      rows: `SELECT * FROM consents WHERE ${where} ORDER BY created_at DESC, id`,
      total: `SELECT count(*)::int AS n FROM consents WHERE ${where}`,
      params,
    },
    page,
  );
}

export async function findConsent(db: Queryable, tenantId: string, id: string): Promise<ConsentRow | undefined> {
  const { rows } = await db.query<ConsentRow>('SELECT * FROM consents WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

/** Revokes a consent not revoked yet (a revoked one keeps its first revocation time). */
export async function revokeConsent(db: Queryable, tenantId: string, id: string, at: Date): Promise<ConsentRow | undefined> {
  const { rows } = await db.query<ConsentRow>(
    'UPDATE consents SET revoked_at = coalesce(revoked_at, $3) WHERE tenant_id = $1 AND id = $2 RETURNING *',
    [tenantId, id, at],
  );
  return rows[0];
}

/** Which of `phoneNumbers` hold a consent for `channel` valid at `at`. */
export async function consentedAmong(
  db: Queryable,
  tenantId: string,
  phoneNumbers: string[],
  channel: string,
  at: Date,
): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  const { rows } = await db.query<{ phone_number: string }>(
    `SELECT DISTINCT phone_number FROM consents
     WHERE tenant_id = $1 AND phone_number = ANY ($2::text[]) AND channel = $3 AND granted_at <= $4
       AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $4)`,
    [tenantId, phoneNumbers, channel, at],
  );
  return new Set(rows.map((row) => row.phone_number));
}

// ---------------------------------------------------------------------------------------------
// Compliance records: an append-only chain per tenant

export interface RecordRow {
  sequence: string | number;
  id: string;
  campaign_id: string;
  contact_id: string;
  phone_number: string;
  decided_at: Date;
  verdict: string;
  reason: string | null;
  facts: Record<string, unknown>;
  previous_hash: string;
  hash: string;
}

/** Locks the tenant's chain head (created at `genesis` on first use) until the transaction ends. */
export async function lockChainHead(db: Queryable, tenantId: string, genesis: string): Promise<{ sequence: number; hash: string }> {
  await db.query('INSERT INTO compliance_chain_heads (tenant_id, sequence, hash) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING', [
    tenantId,
    genesis,
  ]);
  const { rows } = await db.query<{ sequence: string; hash: string }>(
    'SELECT sequence, hash FROM compliance_chain_heads WHERE tenant_id = $1 FOR UPDATE',
    [tenantId],
  );
  return { sequence: Number(rows[0]!.sequence), hash: rows[0]!.hash };
}

/** Appends records (already hashed, in sequence order) and moves the head to the last. */
export async function appendRecords(db: Queryable, tenantId: string, records: RecordRow[]): Promise<void> {
  if (records.length === 0) return;
  await db.query(
    `INSERT INTO compliance_records (tenant_id, sequence, id, campaign_id, contact_id, phone_number, decided_at, verdict, reason, facts, previous_hash, hash)
     SELECT $1, r.sequence, r.id, r.campaign_id, r.contact_id, r.phone_number, r.decided_at, r.verdict, r.reason, r.facts, r.previous_hash, r.hash
     FROM jsonb_to_recordset($2::jsonb) AS r(sequence bigint, id uuid, campaign_id uuid, contact_id uuid, phone_number text, decided_at timestamptz,
       verdict text, reason text, facts jsonb, previous_hash text, hash text)`,
    [tenantId, JSON.stringify(records)],
  );
  const last = records.at(-1)!;
  await db.query('UPDATE compliance_chain_heads SET sequence = $2, hash = $3 WHERE tenant_id = $1', [tenantId, last.sequence, last.hash]);
}

/** The next `limit` records after `after` in chain order; of one campaign, or of the whole chain. */
export async function recordsAfter(
  db: Queryable,
  tenantId: string,
  campaignId: string | null,
  after: number,
  limit: number,
): Promise<RecordRow[]> {
  const { rows } = await db.query<RecordRow>(
    `SELECT sequence, id, campaign_id, contact_id, phone_number, decided_at, verdict, reason, facts, previous_hash, hash FROM compliance_records
     WHERE tenant_id = $1 AND ($2::uuid IS NULL OR campaign_id = $2) AND sequence > $3 ORDER BY sequence LIMIT $4`,
    [tenantId, campaignId, after, limit],
  );
  return rows;
}

/** The sequence and hash of the chain's head, as stored (what the last record must match). */
export async function chainHead(db: Queryable, tenantId: string): Promise<{ sequence: number; hash: string } | undefined> {
  const { rows } = await db.query<{ sequence: string; hash: string }>(
    'SELECT sequence, hash FROM compliance_chain_heads WHERE tenant_id = $1',
    [tenantId],
  );
  return rows[0] && { sequence: Number(rows[0].sequence), hash: rows[0].hash };
}
