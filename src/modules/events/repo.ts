import type { Queryable } from '../../platform/db.ts';
import type { Page } from '../../platform/pagination.ts';

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

export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  filter: { status?: string; eventType?: string },
  page: Page,
): Promise<{ rows: DeliveryRow[]; total: number }> {
  const where = 'd.tenant_id = $1 AND ($2::text IS NULL OR d.status = $2) AND ($3::text IS NULL OR e.type = $3)';
  const params = [tenantId, filter.status ?? null, filter.eventType ?? null];
  const [{ rows }, count] = await Promise.all([
    db.query<DeliveryRow>(`${DELIVERY_SELECT} WHERE ${where} ORDER BY d.created_at DESC, d.id DESC LIMIT $4 OFFSET $5`, [
      ...params,
      page.limit,
      page.offset,
    ]),
    db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_events e ON e.tenant_id = d.tenant_id AND e.id = d.event_id WHERE ${where}`,
      params,
    ),
  ]);
  return { rows, total: count.rows[0]!.n };
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
export async function recordAttempt(
  db: Queryable,
  tenantId: string,
  deliveryId: string,
  attempt: { at: Date; statusCode: number | null; error: string | null; durationMs: number; status: 'PENDING' | 'DELIVERED' | 'FAILED' },
): Promise<void> {
  await db.query(
    `WITH d AS (
       UPDATE webhook_deliveries SET attempts = attempts + 1, status = $6, last_status_code = $4, last_error = $5, updated_at = now(),
         delivered_at = CASE WHEN $6 = 'DELIVERED' THEN $3 ELSE delivered_at END
       WHERE tenant_id = $1 AND id = $2 RETURNING attempts
     )
     INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, at, status_code, error, duration_ms) SELECT $1, $2, d.attempts, $3, $4, $5, $7 FROM d`,
    [tenantId, deliveryId, attempt.at, attempt.statusCode, attempt.error, attempt.status, attempt.durationMs],
  );
}

export async function markPending(db: Queryable, tenantId: string, deliveryId: string): Promise<void> {
  await db.query("UPDATE webhook_deliveries SET status = 'PENDING', updated_at = now() WHERE tenant_id = $1 AND id = $2", [
    tenantId,
    deliveryId,
  ]);
}
