import type { Queryable } from '../../platform/db.ts';
import { selectPage, type Page } from '../../platform/pagination.ts';

/** The tables this module owns: only its SQL touches them (scripts/check-table-ownership.ts holds it to that). */
export const OWNED_TABLES = ['webhook_events', 'webhook_deliveries', 'webhook_attempts'] as const;

export interface DeliveryRow {
  tenant_id: string;
  id: string;
  event_id: string;
  api_key_id: string;
  url: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
  event_type: string;
  event_data: Record<string, unknown>;
  event_created_at: Date;
}

export interface AttemptRow {
  attempt: number;
  at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export async function insertEvent(
  db: Queryable,
  tenantId: string,
  event: { id: string; type: string; agentId: string | null; data: unknown; at: Date },
): Promise<void> {
  await db.query('INSERT INTO webhook_events (tenant_id, id, type, agent_id, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    tenantId,
    event.id,
    event.type,
    event.agentId,
    JSON.stringify(event.data),
    event.at,
  ]);
}

export async function insertDeliveries(
  db: Queryable,
  tenantId: string,
  eventId: string,
  deliveries: { id: string; apiKeyId: string; url: string }[],
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (tenant_id, id, event_id, api_key_id, url, status)
     SELECT $1, d.id, $2, d.api_key_id, d.url, 'PENDING' FROM jsonb_to_recordset($3::jsonb) AS d(id uuid, api_key_id uuid, url text)`,
    [tenantId, eventId, JSON.stringify(deliveries.map((d) => ({ id: d.id, api_key_id: d.apiKeyId, url: d.url })))],
  );
}

const DELIVERY_SELECT = `SELECT d.*, e.type AS event_type, e.data AS event_data, e.created_at AS event_created_at
  FROM webhook_deliveries d JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id`;

export async function findDelivery(db: Queryable, tenantId: string, id: string): Promise<DeliveryRow | undefined> {
  const { rows } = await db.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.tenant_id = $1 AND d.id = $2`, [tenantId, id]);
  return rows[0];
}

/** Several deliveries in one statement; each id's row in order. */
export async function findDeliveries(db: Queryable, tenantId: string, ids: string[]): Promise<(DeliveryRow | undefined)[]> {
  const { rows } = await db.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE d.tenant_id = $1 AND d.id = ANY($2::uuid[])`, [tenantId, ids]);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id));
}

export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  filter: { status?: string; eventType?: string },
  page: Page,
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const where = 'd.tenant_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::text IS NULL OR e.type = $3)';
  const params = [tenantId, filter.status ?? null, filter.eventType ?? null];
  return selectPage<DeliveryRow>(
    db,
    {
      rows: `${DELIVERY_SELECT} WHERE ${where} ORDER BY d.created_at DESC, d.id DESC`,
      total: `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id WHERE ${where}`,
      params,
    },
    page,
  );
}

export async function attemptsOf(
  db: Queryable,
  tenantId: string,
  deliveryIds: string[],
): Promise<(AttemptRow & { delivery_id: string })[]> {
  if (deliveryIds.length === 0) return [];
  const { rows } = await db.query<AttemptRow & { delivery_id: string }>(
    'SELECT delivery_id, attempt, at, status_code, error, duration_ms FROM webhook_attempts WHERE tenant_id = $1 AND delivery_id = ANY($2::uuid[]) ORDER BY delivery_id, attempt',
    [tenantId, deliveryIds],
  );
  return rows;
}

/** Records one attempt and its outcome on the delivery, in one statement. */
export interface Attempt {
  deliveryId: string;
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
}

/**
 * Records attempts in one statement: each delivery's count and status (its last attempt's here),
 * and one attempt row each, numbered in order (a delivery may be attempted twice in one batch).
 */
export async function recordAttempts(db: Queryable, tenantId: string, attempts: Attempt[]): Promise<void> {
  await db.query(
    `WITH a AS (
       SELECT *, row_number() OVER (PARTITION BY delivery_id ORDER BY ord) AS k, count(*) OVER (PARTITION BY delivery_id) AS n
       FROM unnest($2::uuid[], $3::timestamptz[], $4::int[], $5::text[], $6::text[], $7::int[])
         WITH ORDINALITY AS a (delivery_id, at, status_code, error, status, duration_ms, ord)
     ), d AS (
       UPDATE webhook_deliveries w SET attempts = w.attempts + a.n, status = a.status, last_status_code = a.status_code, last_error = a.error,
         updated_at = now(), delivered_at = CASE WHEN a.status = 'DELIVERED' THEN a.at ELSE w.delivered_at END
       FROM a WHERE a.k = a.n AND w.tenant_id = $1 AND w.id = a.delivery_id RETURNING w.id, w.attempts
     )
     INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, at, status_code, error, duration_ms)
     SELECT $1, d.id, d.attempts - a.n + a.k, a.at, a.status_code, a.error, a.duration_ms FROM d JOIN a ON a.delivery_id = d.id`,
    [
      tenantId,
      attempts.map((attempt) => attempt.deliveryId),
      attempts.map((attempt) => attempt.at),
      attempts.map((attempt) => attempt.statusCode),
      attempts.map((attempt) => attempt.error),
      attempts.map((attempt) => attempt.status),
      attempts.map((attempt) => attempt.durationMs),
    ],
  );
}

export async function markPending(db: Queryable, tenantId: string, deliveryId: string): Promise<void> {
  await db.query("UPDATE webhook_deliveries SET status = 'PENDING', updated_at = now() WHERE tenant_id = $1 AND id = $2", [
    tenantId,
    deliveryId,
  ]);
}
