/**
 * WhatsApp Cloud API webhook deliveries (Graph's `whatsapp_business_account` notifications): each
 * entry names the business account, each change may carry message statuses and the messages people sent
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks/payload-examples).
 */
import type { WhatsAppDeliveryUpdate, WhatsAppIncomingMessage, WhatsAppWebhook } from '../types.ts';

interface GraphStatus {
  id?: unknown;
  status?: unknown;
  timestamp?: unknown;
  biz_opaque_callback_data?: unknown;
  errors?: { code?: unknown; title?: unknown; message?: unknown; error_data?: { details?: unknown } }[];
}
/** A message a person sent: text, a quick-reply button (such as Meta's "Stop promotions"), or an interactive reply. */
interface GraphMessage {
  id?: unknown;
  from?: unknown;
  timestamp?: unknown;
  text?: { body?: unknown };
  button?: { text?: unknown };
  interactive?: { button_reply?: { title?: unknown }; list_reply?: { title?: unknown } };
}
interface GraphNotification {
  object?: unknown;
  entry?: { id?: unknown; changes?: { field?: unknown; value?: { statuses?: GraphStatus[]; messages?: GraphMessage[] } }[] }[];
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
  const messages: WhatsAppIncomingMessage[] = [];
  const at = (timestamp: unknown) => (Number.isFinite(Number(timestamp)) ? new Date(Number(timestamp) * 1000) : receivedAt);
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
          at: at(status.timestamp),
          failureReason: next === 'FAILED' ? `WhatsApp: ${details.join(' ') || 'failed'}` : null,
        });
      }
      for (const message of list<GraphMessage>(change?.value?.messages)) {
        const text =
          message.text?.body ?? message.button?.text ?? message.interactive?.button_reply?.title ?? message.interactive?.list_reply?.title;
        if (typeof message.id !== 'string' || typeof message.from !== 'string' || typeof text !== 'string') continue;
        messages.push({ providerMessageId: message.id, from: `+${message.from.replace(/^\+/, '')}`, text, at: at(message.timestamp) });
      }
    }
  }
  return { kind: 'notification', accountIds, statuses, messages };
}
