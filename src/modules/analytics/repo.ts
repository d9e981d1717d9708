import type { Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';
import type { BindingField } from './schemas.ts';

export interface UsageRow {
  agent_id: string | null;
  agent_name: string | null;
  calls: number;
  seconds: number;
  stt: string;
  tts: string;
  llm: string;
  telephony: string;
  platform_fee: string;
  total: string;
}

const COMPONENT = (key: string) => `coalesce(sum((c.cost ->> '${key}')::numeric), 0)::text`;

/** Ended calls of the range per agent, with each cost component summed exactly. */
export async function usageByAgent(
  db: Queryable,
  tenantId: string,
  range: { from: Date; to: Date; agentId?: string },
): Promise<UsageRow[]> {
  const { rows } = await db.query<UsageRow>(
    `SELECT c.agent_id, a.name AS agent_name, count(*)::int AS calls, coalesce(sum(c.duration_sec), 0)::int AS seconds,
            ${COMPONENT('stt')} AS stt, ${COMPONENT('tts')} AS tts, ${COMPONENT('llm')} AS llm, ${COMPONENT('telephony')} AS telephony,
            ${COMPONENT('platformFee')} AS platform_fee, coalesce(sum(c.cost_total), 0)::text AS total
     FROM calls c LEFT JOIN agents a ON a.tenant_id = c.tenant_id AND a.id = c.agent_id
     WHERE c.tenant_id = $1 AND c.status = 'ENDED' AND c.ended_at >= $2 AND c.ended_at < $3 AND ($4::uuid IS NULL OR c.agent_id = $4)
     GROUP BY c.agent_id, a.name ORDER BY total DESC, c.agent_id`,
    [tenantId, range.from, range.to, range.agentId ?? null],
  );
  return rows;
}

export interface TrendRow {
  bucket: Date; // the instant the local day or hour starts
  calls: number;
  answered: number;
  seconds: number;
  spend: string;
}

/** Ended calls per local day or hour of `timezone`. */
export async function trend(
  db: Queryable,
  tenantId: string,
  range: { from: Date; to: Date; agentId?: string },
  interval: 'day' | 'hour',
  timezone: string,
): Promise<TrendRow[]> {
  const { rows } = await db.query<TrendRow>(
    // date_trunc in the zone keeps the two 01:00 hours of a fall-back night apart.
    `SELECT date_trunc($5, c.ended_at, $6) AS bucket, count(*)::int AS calls,
            count(*) FILTER (WHERE c.outcome = 'ANSWERED')::int AS answered, coalesce(sum(c.duration_sec), 0)::int AS seconds,
            coalesce(sum(c.cost_total), 0)::text AS spend
     FROM calls c
     WHERE c.tenant_id = $1 AND c.status = 'ENDED' AND c.ended_at >= $2 AND c.ended_at < $3 AND ($4::uuid IS NULL OR c.agent_id = $4)
     GROUP BY 1 ORDER BY 1`,
    [tenantId, range.from, range.to, range.agentId ?? null, interval, timezone],
  );
  return rows;
}

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
      `SELECT id, call_id, agent_id, campaign_id, contact_id, fields, extracted_at FROM analytics_results WHERE ${where} ORDER BY extracted_at DESC, id DESC LIMIT $4 OFFSET $5`,
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
    extractedAt: Date;
  },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO analytics_results (tenant_id, id, call_id, agent_id, campaign_id, contact_id, fields, extracted_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
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
    ],
  );
  return rowCount === 1;
}

export async function hasResult(db: Queryable, tenantId: string, callId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM analytics_results WHERE tenant_id = $1 AND call_id = $2', [tenantId, callId]);
  return rowCount > 0;
}
