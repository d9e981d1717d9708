import { performance } from 'node:perf_hooks';
import { signedWebhookHeaders } from '../../platform/webhook-signature.ts';
import { tenantCtx, withTransaction, type Deps, type TenantCtx } from '../../platform/context.ts';
import { oncePer, perTurn, perTurnWrite } from '../../platform/batches.ts';
import { appError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { isoOrNull } from '../../platform/clock.ts';
import { RetryLater, type JobDefinition } from '../../platform/jobs.ts';
import type { Page } from '../../platform/pagination.ts';
import { safeFetch, UnsafeUrlError } from '../../platform/safe-fetch.ts';
import * as identity from '../identity/service.ts';
import * as repo from './repo.ts';
import type { Delivery, DeliveryQuery, EventType } from './schemas.ts';

export type { EventType };

export const DELIVER_WEBHOOK = 'webhook.deliver';
export interface DeliverWebhookJob {
  tenantId: string;
  deliveryId: string;
}

/** Retries after the first attempt: pg-boss doubles WEBHOOK_RETRY_SECONDS each time (with jitter), so 15 span well over 24 hours. */
export const WEBHOOK_RETRY_LIMIT = 15;
const RESPONSE_LIMIT_BYTES = 64 * 1024;
const TIMEOUT_MS = 10_000;

type EmitCtx = Pick<TenantCtx, 'db' | 'tenantId' | 'jobs' | 'clock'>;

/**
 * Writes an event and one delivery per subscribed key, with their delivery jobs, in the caller's
 * transaction: the event exists if and only if the change that caused it committed. Keys pinned
 * to an agent get only that agent's events. Returns the event id (undefined: nobody subscribed).
 * A caller emitting many events in one transaction passes a `cache`: the subscribers are read once
 * per tenant and agent.
 */
export async function emitEvent(
  ctx: EmitCtx,
  type: EventType,
  data: object,
  agentId: string | null,
  cache?: Map<string, unknown>,
): Promise<string | undefined> {
  const now = ctx.clock.now();
  const cacheKey = `webhook-subscribers:${ctx.tenantId}:${agentId}`;
  const subscribers =
    (cache?.get(cacheKey) as Awaited<ReturnType<typeof identity.webhookSubscribers>> | undefined) ??
    (await identity.webhookSubscribers(ctx.db, ctx.tenantId, agentId, now));
  cache?.set(cacheKey, subscribers);
  if (subscribers.length === 0) return undefined;
  const eventId = newId();
  await repo.insertEvent(ctx.db, ctx.tenantId, { id: eventId, type, agentId, data, at: now });
  const deliveries = subscribers.map((key) => ({ id: newId(), apiKeyId: key.id, url: key.webhook_url }));
  await repo.insertDeliveries(ctx.db, ctx.tenantId, eventId, deliveries);
  const jobs = deliveries.map((delivery) => ({
    name: DELIVER_WEBHOOK,
    data: { tenantId: ctx.tenantId, deliveryId: delivery.id } satisfies DeliverWebhookJob,
  }));
  await ctx.jobs.sendMany(jobs, { tx: ctx.db });
  return eventId;
}

const payloadOf = (row: repo.DeliveryRow) => ({
  type: row.event_type,
  timestamp: row.event_created_at.toISOString(),
  data: row.event_data,
});

/**
 * One attempt: the event signed per Standard Webhooks (`webhook-id` is the event id, the same on
 * every attempt) and posted through the safe client. A 2xx delivers it; anything else is recorded
 * and retried by the job queue with backoff until the last retry, which marks it FAILED. An
 * address the rules refuse fails at once.
 */
export async function deliverWebhook(deps: Deps, job: DeliverWebhookJob, meta: { retryCount: number }): Promise<void> {
  const ctx = tenantCtx(deps, job.tenantId);
  const statements = statementsOf(deps);
  const delivery = await statements.delivery(ctx.tenantId, job.deliveryId);
  if (!delivery || delivery.status === 'DELIVERED') return;
  const at = ctx.clock.now();
  const record = (statusCode: number | null, error: string | null, status: 'PENDING' | 'DELIVERED' | 'FAILED', durationMs: number) =>
    statements.record(ctx.tenantId, { deliveryId: delivery.id, at, statusCode, error, durationMs, status });
  const secret = await statements.secret(ctx.tenantId, delivery.api_key_id);
  if (!secret) return record(null, 'The API key has no webhook signing secret.', 'FAILED', 0);

  const body = JSON.stringify(payloadOf(delivery));
  const headers = signedWebhookHeaders(secret, delivery.event_id, at, body, 'callforge-webhooks/1');
  const started = performance.now();
  let statusCode: number | null = null;
  let error: string | null = null;
  let permanent = false;
  try {
    const response = await safeFetch(delivery.url, {
      allowPrivate: ctx.config.allowPrivateUrls,
      method: 'POST',
      headers,
      body,
      timeoutMs: TIMEOUT_MS,
      maxBytes: RESPONSE_LIMIT_BYTES,
    });
    statusCode = response.status;
    if (statusCode < 200 || statusCode >= 300) error = `The receiver answered HTTP ${statusCode}.`;
  } catch (caught) {
    error = caught instanceof Error ? caught.message : String(caught);
    permanent = caught instanceof UnsafeUrlError && (caught.reason === 'ADDRESS' || caught.reason === 'SCHEME');
  }
  const durationMs = Math.round(performance.now() - started);
  if (error === null) return record(statusCode, null, 'DELIVERED', durationMs);
  const last = permanent || meta.retryCount >= WEBHOOK_RETRY_LIMIT;
  await record(statusCode, error, last ? 'FAILED' : 'PENDING', durationMs);
  if (!last) throw new RetryLater(error); // the job queue retries with backoff
}

/**
 * The statements every delivery makes, shared by the deliveries running at once (a fetched batch
 * starts together, receivers' answers arrive together): one read of the deliveries, of the keys'
 * secrets and one record of the attempts per turn and tenant, instead of one each.
 */
function sharedStatements(deps: Deps) {
  const { db } = deps;
  return {
    delivery: perTurn((tenantId, ids: string[]) => repo.findDeliveries(db, tenantId, ids)),
    secret: perTurn((tenantId, keyIds: string[]) => identity.webhookSecrets(db, deps.serverKeys, tenantId, keyIds)),
    record: perTurnWrite((tenantId, attempts: repo.Attempt[]) => repo.recordAttempts(db, tenantId, attempts)),
  };
}
const statementsOf = oncePer(sharedStatements);

export const deliverWebhookJob = (deps: Deps): JobDefinition<DeliverWebhookJob> => ({
  name: DELIVER_WEBHOOK,
  retryLimit: WEBHOOK_RETRY_LIMIT,
  retryDelaySeconds: deps.config.webhookRetrySeconds,
  // Up to 2 × 100 deliveries in flight per worker: each fetch, lease and completion serves a batch,
  // and a batch of slow receivers lasts as long as the slowest (TIMEOUT_MS), not their sum.
  concurrency: 2,
  batchSize: 100,
  parallel: true,
  // A delivery whose worker died mid-POST is retried by another after JOBS_RECOVERY_SECONDS.
  handle: (data, meta) => deliverWebhook(deps, data, meta),
});

// ---------------------------------------------------------------------------------------------
// Routes' side.

function toDelivery(row: repo.DeliveryRow, attempts: repo.AttemptRow[]): Delivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type as EventType,
    apiKeyId: row.api_key_id,
    url: row.url,
    status: row.status,
    attemptCount: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    deliveredAt: isoOrNull(row.delivered_at),
    payload: payloadOf(row),
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      at: a.at.toISOString(),
      statusCode: a.status_code,
      error: a.error,
      durationMs: a.duration_ms,
    })),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export async function listDeliveries(ctx: TenantCtx, query: DeliveryQuery, page: Page) {
  const { rows, total } = await repo.listDeliveries(ctx.db, ctx.tenantId, { status: query.status, eventType: query.eventType }, page);
  const attempts = await repo.attemptsOf(
    ctx.db,
    ctx.tenantId,
    rows.map((row) => row.id),
  );
  return {
    data: rows.map((row) =>
      toDelivery(
        row,
        attempts.filter((a) => a.delivery_id === row.id),
      ),
    ),
    total,
  };
}

export async function getDelivery(ctx: TenantCtx, id: string): Promise<Delivery> {
  const row = await repo.findDelivery(ctx.db, ctx.tenantId, id);
  if (!row) throw appError('NOT_FOUND', { what: 'Webhook delivery' });
  return toDelivery(row, await repo.attemptsOf(ctx.db, ctx.tenantId, [id]));
}

/** Sends a delivery again (same `webhook-id`), whatever its status; answers it as queued (PENDING). */
export async function redeliver(ctx: TenantCtx, id: string): Promise<Delivery> {
  return withTransaction(ctx, async (txCtx) => {
    if (!(await repo.findDelivery(txCtx.db, ctx.tenantId, id))) throw appError('NOT_FOUND', { what: 'Webhook delivery' });
    await repo.markPending(txCtx.db, ctx.tenantId, id);
    await ctx.jobs.send<DeliverWebhookJob>(DELIVER_WEBHOOK, { tenantId: ctx.tenantId, deliveryId: id }, { tx: txCtx.db });
    return getDelivery(txCtx, id);
  });
}
