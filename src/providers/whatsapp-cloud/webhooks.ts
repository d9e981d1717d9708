/**
 * WhatsApp Cloud API webhook deliveries (Graph's `whatsapp_business_account` notifications): each
 * entry names the business account, each change may carry message statuses
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples).
 */
import type { WhatsAppDeliveryUpdate, WhatsAppWebhook } from '../types.ts';

interface GraphStatus {
  id?: unknown;
  status?: unknown;
  timestamp?: unknown;
  biz_opaque_callback_data?: unknown;
  errors?: { code?: unknown; title?: unknown; message?: unknown; error_data?: { details?: unknown } }[];
}
interface GraphNotification {
  object?: unknown;
  entry?: { id?: unknown; changes?: { field?: unknown; value?: { statuses?: GraphStatus[] } }[] }[];
}

const DELIVERY_STATUS = { sent: 'SENT', delivered: 'DELIVERED', read: 'READ', failed: 'FAILED' } as const;

const list = <T>(value: unknown): T[] => (Array.isArray(value) ? (value as T[]) : []);

/** Reads a delivery: the business accounts it names and its message statuses, normalised. */
export function readWhatsAppWebhook(rawBody: Buffer, receivedAt: Date): WhatsAppWebhook {
  let payload: GraphNotification;
  try {
    payload = JSON.parse(rawBody.toString('utf8')) as GraphNotification;
  } catch {
    return { kind: 'not-json' };
  }
  if (payload === null || typeof payload !== 'object' || !Array.isArray(payload.entry)) return { kind: 'not-a-notification' };
  const accountIds = [...new Set(payload.entry.map((entry) => String(entry?.id ?? '')))].filter(Boolean);
  const statuses: WhatsAppDeliveryUpdate[] = [];
  for (const entry of payload.entry) {
    for (const change of list<NonNullable<NonNullable<GraphNotification['entry']>[number]['changes']>[number]>(entry?.changes)) {
      for (const status of list<GraphStatus>(change?.value?.statuses)) {
        const next = DELIVERY_STATUS[String(status.status) as keyof typeof DELIVERY_STATUS];
        if (!next || typeof status.id !== 'string') continue;
        const error = list<NonNullable<GraphStatus['errors']>[number]>(status.errors)[0];
        const details = [error?.code, error?.title ?? error?.message, error?.error_data?.details].filter(
          (part) => part !== undefined && part !== '',
        );
        statuses.push({
          providerMessageId: status.id,
          callbackData: typeof status.biz_opaque_callback_data === 'string' ? status.biz_opaque_callback_data : null,
          status: next,
          at: Number.isFinite(Number(status.timestamp)) ? new Date(Number(status.timestamp) * 1000) : receivedAt,
          failureReason: next === 'FAILED' ? `WhatsApp: ${details.join(' ') || 'failed'}` : null,
        });
      }
    }
  }
  return { kind: 'notification', accountIds, statuses };
}
