import type { Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';

export type CallStatus = 'QUEUED' | 'RINGING' | 'IN_PROGRESS' | 'ENDED';

export interface CallRow {
  tenant_id: string;
  id: string;
  agent_id: string | null;
  campaign_id: string | null;
  contact_id: string | null;
  /** The contact as it was when the call was placed. */
  contact_name: string | null;
  contact_metadata: Record<string, unknown> | null;
  voice_number_id: string | null;
  direction: 'OUTGOING' | 'INCOMING';
  from_number: string;
  to_number: string;
  attempt: number;
  status: CallStatus;
  outcome: string | null;
  failure_reason: string | null;
  permanent_failure: boolean;
  provider: string;
  provider_call_id: string | null;
  dial_timeout: number;
  deadline_at: Date | null;
  started_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  duration_sec: number | null;
  transcript: unknown[];
  recording_url: string | null;
  usage: Record<string, number> | null;
  cost: Record<string, string> | null;
  cost_total: string | null;
  created_at: Date;
}

export type NewCall = Pick<
  CallRow,
  | 'id'
  | 'agent_id'
  | 'campaign_id'
  | 'contact_id'
  | 'contact_name'
  | 'contact_metadata'
  | 'voice_number_id'
  | 'direction'
  | 'from_number'
  | 'to_number'
  | 'attempt'
  | 'status'
  | 'provider'
  | 'provider_call_id'
  | 'dial_timeout'
  | 'started_at'
> & { deadline_at: Date };

export async function insertCalls(db: Queryable, tenantId: string, calls: NewCall[]): Promise<void> {
  if (calls.length === 0) return;
  await db.query(
    `INSERT INTO calls (tenant_id, id, agent_id, campaign_id, contact_id, contact_name, contact_metadata, voice_number_id, direction,
                        from_number, to_number, attempt, status, provider, provider_call_id, dial_timeout, deadline_at, started_at, created_at)
     SELECT $1, c.id, c.agent_id, c.campaign_id, c.contact_id, c.contact_name, c.contact_metadata, c.voice_number_id, c.direction,
            c.from_number, c.to_number, c.attempt, c.status, c.provider, c.provider_call_id, c.dial_timeout, c.deadline_at, c.started_at, c.started_at
     FROM jsonb_to_recordset($2::jsonb) AS c(id uuid, agent_id uuid, campaign_id uuid, contact_id uuid, contact_name text, contact_metadata jsonb,
       voice_number_id uuid, direction text, from_number text, to_number text, attempt int, status text, provider text, provider_call_id text,
       dial_timeout int, deadline_at timestamptz, started_at timestamptz)`,
    [tenantId, JSON.stringify(calls)],
  );
}

/** Live calls whose deadline passed, locked for this worker; other workers skip them. */
export async function lockDueCalls(db: Queryable, now: Date, limit: number): Promise<CallRow[]> {
  const { rows } = await db.query<CallRow>(
    `SELECT * FROM calls WHERE status <> 'ENDED' AND deadline_at <= $1
     ORDER BY deadline_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [now, limit],
  );
  return rows;
}

export async function lockCall(db: Queryable, tenantId: string, id: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE tenant_id = $1 AND id = $2 FOR UPDATE', [tenantId, id]);
  return rows[0];
}

/** A provider's callback names its own call id; it leads to the tenant's call. */
export async function lockCallByProviderId(db: Queryable, provider: string, providerCallId: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE provider = $1 AND provider_call_id = $2 FOR UPDATE', [
    provider,
    providerCallId,
  ]);
  return rows[0];
}

export async function updateLiveCall(
  db: Queryable,
  tenantId: string,
  id: string,
  change: { status: CallStatus; providerCallId?: string; answeredAt?: Date | null; deadlineAt: Date | null },
): Promise<void> {
  await db.query(
    `UPDATE calls SET status = $3, provider_call_id = coalesce($4, provider_call_id), answered_at = coalesce($5, answered_at), deadline_at = $6
     WHERE tenant_id = $1 AND id = $2 AND status <> 'ENDED'`,
    [tenantId, id, change.status, change.providerCallId ?? null, change.answeredAt ?? null, change.deadlineAt],
  );
}

export interface CallEnd {
  outcome: string;
  failureReason: string | null;
  permanent: boolean;
  endedAt: Date;
  answeredAt: Date | null;
  durationSec: number;
  transcript: unknown[];
  usage: Record<string, number>;
  cost: Record<string, string>;
  costTotal: string;
}

/** Ends a live call; undefined when it had already ended (a repeated callback). */
export async function endCall(db: Queryable, tenantId: string, id: string, end: CallEnd): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>(
    `UPDATE calls SET status = 'ENDED', outcome = $3, failure_reason = $4, permanent_failure = $5, ended_at = $6,
       answered_at = coalesce(answered_at, $7), duration_sec = $8, transcript = $9, usage = $10, cost = $11, cost_total = $12, deadline_at = NULL
     WHERE tenant_id = $1 AND id = $2 AND status <> 'ENDED' RETURNING *`,
    [
      tenantId,
      id,
      end.outcome,
      end.failureReason,
      end.permanent,
      end.endedAt,
      end.answeredAt,
      end.durationSec,
      JSON.stringify(end.transcript),
      JSON.stringify(end.usage),
      JSON.stringify(end.cost),
      end.costTotal,
    ],
  );
  return rows[0];
}

export async function findCall(db: Queryable, tenantId: string, id: string): Promise<CallRow | undefined> {
  const { rows } = await db.query<CallRow>('SELECT * FROM calls WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
  return rows[0];
}

export interface CallFilter {
  agentId?: string;
  campaignId?: string;
  contactId?: string;
  direction?: string;
  outcome?: string;
  from?: Date;
  to?: Date;
}

export async function listCalls(
  db: Queryable,
  tenantId: string,
  filter: CallFilter,
  page: Page,
): Promise<{ rows: CallRow[]; total: number }> {
  const where = `tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2) AND ($3::uuid IS NULL OR campaign_id = $3) AND ($4::uuid IS NULL OR contact_id = $4)
    AND ($5::text IS NULL OR direction = $5) AND ($6::text IS NULL OR outcome = $6) AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at < $8)`;
  const params = [
    tenantId,
    filter.agentId ?? null,
    filter.campaignId ?? null,
    filter.contactId ?? null,
    filter.direction ?? null,
    filter.outcome ?? null,
    filter.from ?? null,
    filter.to ?? null,
  ];
  const [{ rows }, count] = await Promise.all([
    db.query<CallRow>(`SELECT * FROM calls WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $9 OFFSET $10`, [
      ...params,
      page.limit,
      page.offset,
    ]),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM calls WHERE ${where}`, params),
  ]);
  return { rows, total: count.rows[0]!.n };
}

export async function hasEndedCall(db: Queryable, tenantId: string): Promise<boolean> {
  const { rowCount } = await db.query("SELECT 1 FROM calls WHERE tenant_id = $1 AND status = 'ENDED' AND outcome IS NOT NULL LIMIT 1", [
    tenantId,
  ]);
  return rowCount > 0;
}
