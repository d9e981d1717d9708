import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';
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
  agent_version: number | null;
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
  return selectPage<ResultRow>(
    db,
    {
      rows: `SELECT id, call_id, agent_id, agent_version, campaign_id, contact_id, fields, status, summary, outcome, extracted_at FROM analytics_results WHERE ${where} ORDER BY extracted_at DESC, id DESC`,
      total: `SELECT count(*)::int AS n FROM analytics_results WHERE ${where}`,
      params,
    },
    page,
  );
}

/** One result per call; a repeated extraction leaves the first. Returns whether it was stored. */
export interface NewResult {
  id: string;
  callId: string;
  agentId: string | null;
  agentVersion: number | null;
  campaignId: string | null;
  contactId: string | null;
  fields: Record<string, unknown>;
  status: string;
  summary: string | null;
  outcome: string;
  extractedAt: Date;
}

/** Stores results, several calls' in one statement; the calls whose result this stored (a call's first result stays). */
export async function insertResults(db: Queryable, tenantId: string, results: NewResult[]): Promise<Set<string>> {
  const { rows } = await db.query<{ call_id: string }>(
    `INSERT INTO analytics_results (tenant_id, id, call_id, agent_id, agent_version, campaign_id, contact_id, fields, extracted_at, status, summary, outcome)
     SELECT $1, r.id, r.call_id, r.agent_id, r.agent_version, r.campaign_id, r.contact_id, r.fields, r.extracted_at, r.status, r.summary, r.outcome
     FROM jsonb_to_recordset($2::jsonb) AS r (id uuid, call_id uuid, agent_id uuid, agent_version int, campaign_id uuid, contact_id uuid, fields jsonb,
       extracted_at timestamptz, status text, summary text, outcome text)
     ON CONFLICT (tenant_id, call_id) DO NOTHING RETURNING call_id`,
    [
      tenantId,
      JSON.stringify(
        results.map((result) => ({
          id: result.id,
          call_id: result.callId,
          agent_id: result.agentId,
          agent_version: result.agentVersion,
          campaign_id: result.campaignId,
          contact_id: result.contactId,
          fields: result.fields,
          extracted_at: result.extractedAt,
          status: result.status,
          summary: result.summary,
          outcome: result.outcome,
        })),
      ),
    ],
  );
  return new Set(rows.map((row) => row.call_id));
}

/** Which of the calls have a result already. */
export async function callsWithResults(db: Queryable, tenantId: string, callIds: string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ call_id: string }>(
    'SELECT call_id FROM analytics_results WHERE tenant_id = $1 AND call_id = ANY($2::uuid[])',
    [tenantId, callIds],
  );
  return new Set(rows.map((row) => row.call_id));
}
