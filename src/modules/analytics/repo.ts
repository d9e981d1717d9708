import type { Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';
import type { BindingField } from './schemas.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['analytics_bindings', 'analytics_results'] as const;

export async function bindingsOf(
  db: Queryable,
  tenantId: string,
  agentId: string,
): Promise<{ fields: BindingField[]; updated_at: Date } | undefined> {
  const { rows } = await db.query<{ fields: BindingField[]; updated_at: Date }>(
    'SELECT fields, updated_at FROM analytics_bindings WHERE tenant_id = $1 AND agent_id = $2',
    [tenantId, agentId],
  );
  return rows[0];
}

export async function putBindings(
  db: Queryable,
  tenantId: string,
  agentId: string,
  fields: BindingField[],
): Promise<{ fields: BindingField[]; updated_at: Date }> {
  const { rows } = await db.query<{ fields: BindingField[]; updated_at: Date }>(
    `INSERT INTO analytics_bindings (tenant_id, agent_id, fields) VALUES ($1, $2, $3)
     ON CONFLICT (tenant_id, agent_id) DO UPDATE SET fields = EXCLUDED.fields, updated_at = now() RETURNING fields, updated_at`,
    [tenantId, agentId, JSON.stringify(fields)],
  );
  return rows[0]!;
}

export interface ResultRow {
  id: string;
  call_id: string;
  agent_id: string | null;
  campaign_id: string | null;
  contact_id: string | null;
  fields: Record<string, unknown>;
  status: string;
  summary: string | null;
  outcome: string | null;
  extracted_at: Date;
}

export async function listResults(
  db: Queryable,
  tenantId: string,
  filter: { agentId?: string; sessionId?: string },
  page: Page,
): Promise<{ rows: ResultRow[]; total: number }> {
  const where = 'tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2) AND ($3::uuid IS NULL OR call_id = $3)';
  const params = [tenantId, filter.agentId ?? null, filter.sessionId ?? null];
  const [{ rows }, count] = await Promise.all([
    db.query<ResultRow>(
      `SELECT id, call_id, agent_id, campaign_id, contact_id, fields, status, summary, outcome, extracted_at FROM analytics_results WHERE ${where} ORDER BY extracted_at DESC, id DESC LIMIT $4 OFFSET $5`,
      [...params, page.limit, page.offset],
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM analytics_results WHERE ${where}`, params),
  ]);
  return { rows, total: count.rows[0]!.n };
}

/** One result per call; a repeated extraction leaves the first. Returns whether it was stored. */
export async function insertResult(
  db: Queryable,
  tenantId: string,
  result: {
    id: string;
    callId: string;
    agentId: string | null;
    campaignId: string | null;
    contactId: string | null;
    fields: Record<string, unknown>;
    status: string;
    summary: string | null;
    outcome: string;
    extractedAt: Date;
  },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO analytics_results (tenant_id, id, call_id, agent_id, campaign_id, contact_id, fields, extracted_at, status, summary, outcome)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
     ON CONFLICT (tenant_id, call_id) DO NOTHING`,
    [
      tenantId,
      result.id,
      result.callId,
      result.agentId,
      result.campaignId,
      result.contactId,
      JSON.stringify(result.fields),
      result.extractedAt,
      result.status,
      result.summary,
      result.outcome,
    ],
  );
  return rowCount === 1;
}

export async function hasResult(db: Queryable, tenantId: string, callId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM analytics_results WHERE tenant_id = $1 AND call_id = $2', [tenantId, callId]);
  return rowCount > 0;
}
