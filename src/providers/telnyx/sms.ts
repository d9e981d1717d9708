/**
 * SMS through Telnyx Messaging v2 (https://developers.telnyx.com/api-reference/messages/send-a-message):
 * `POST /v2/messages` with `{from, to, text, webhook_url}`, answered with the message (`data.id`).
 * Its delivery is reported to `webhook_url` by `message.sent` and `message.finalized` webhooks
 * whose `payload.to[0].status` is the recipient's status
 * (https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks). DLT fields are not sent:
 * Telnyx takes no per-message DLT ids.
 */
import { asRecord, isRetryableStatus, ProviderError } from '../errors.ts';
import type { SmsChannel, SmsConnection, SmsDeliveryUpdate } from '../types.ts';
import type { Connection } from '../types.ts';
import { dataOf, telnyxCodeSuffix, telnyxErrorOf, telnyxPost } from './api.ts';
import { requireEvent, SIGNATURE_HEADER, verifyTelnyxWebhook } from './webhooks.ts';

const LABEL = 'Telnyx SMS';

export function connectTelnyxSms(connection: Connection): SmsConnection {
  return {
    async send(message) {
      const response = await telnyxPost(
        connection,
        '/v2/messages',
        {
          from: message.from,
          to: message.to,
          text: message.body,
          ...(message.statusCallbackUrl ? { webhook_url: message.statusCallbackUrl } : {}),
        },
        LABEL,
      );
      const { status } = response;
      if (status >= 200 && status < 300) {
        const data = dataOf(response);
        if (typeof data?.id !== 'string' || data.id === '') {
          // Not retryable: Telnyx may have accepted the message, and a retry could send it twice.
          throw new ProviderError(`${LABEL}: answered HTTP ${status} without a message id`, { status, retryable: false });
        }
        return { providerMessageId: data.id, status: recipientStatusOf(data) ?? 'queued' };
      }
      const error = telnyxErrorOf(response);
      throw new ProviderError(`${LABEL}: HTTP ${status}${telnyxCodeSuffix(error.code)}: ${error.message}`, {
        status,
        code: error.code,
        retryable: isRetryableStatus(status),
      });
    },
  };
}

/** The first recipient's status (`queued`, `sent`, `delivered`, …): callforge sends to one number. */
function recipientStatusOf(message: Record<string, unknown>): string | undefined {
  const to = message.to;
  const status = Array.isArray(to) ? asRecord(to[0])?.status : undefined;
  return typeof status === 'string' && status !== '' ? status : undefined;
}

/** Telnyx's recipient statuses that record something; queued and sending record nothing. */
const DELIVERY_STATUS: Record<string, SmsDeliveryUpdate['status']> = {
  sent: 'SENT',
  // The carrier took it but never confirmed delivery: it was sent, no more is known.
  delivery_unconfirmed: 'SENT',
  delivered: 'DELIVERED',
  sending_failed: 'FAILED',
  delivery_failed: 'FAILED',
};

/** A `message.sent` / `message.finalized` webhook as a delivery update, or null for one that records nothing. */
export function telnyxSmsUpdate(eventType: string, payload: Record<string, unknown>): SmsDeliveryUpdate | null {
  if (eventType !== 'message.sent' && eventType !== 'message.finalized') return null;
  const recipientStatus = recipientStatusOf(payload);
  const status = recipientStatus === undefined ? undefined : DELIVERY_STATUS[recipientStatus];
  if (typeof payload.id !== 'string' || payload.id === '' || !status) return null;
  return { providerMessageId: payload.id, status, failureReason: status === 'FAILED' ? failureReasonOf(recipientStatus!, payload) : null };
}

function failureReasonOf(recipientStatus: string, payload: Record<string, unknown>): string {
  const first = Array.isArray(payload.errors) ? asRecord(payload.errors[0]) : undefined;
  const code = typeof first?.code === 'string' || typeof first?.code === 'number' ? ` (error ${first.code})` : '';
  const title = typeof first?.title === 'string' && first.title !== '' ? `: ${first.title}` : '';
  return `Telnyx: the message was ${recipientStatus.replace('_', ' ')}${title}${code}.`;
}

/** Telnyx SMS: sent over REST, delivery statuses posted to the per-message webhook_url, signed with the account's Ed25519 key. */
export const telnyxSms: SmsChannel = {
  connect: connectTelnyxSms,
  callbacks: {
    signatureHeader: SIGNATURE_HEADER,
    signedWith: 'public key',
    verify: verifyTelnyxWebhook,
    read(webhook) {
      const event = requireEvent(webhook);
      return telnyxSmsUpdate(event.eventType, event.payload);
    },
    // The messaging profile's inbound webhook: `message.received`, signed with the account's own key
    // (which binds the account, so the payload need not name it).
    incoming: {
      read(webhook) {
        const event = requireEvent(webhook);
        if (event.eventType !== 'message.received') return null;
        const { payload } = event;
        const from = asRecord(payload.from)?.phone_number;
        const to = Array.isArray(payload.to) ? asRecord(payload.to[0])?.phone_number : undefined;
        if (typeof payload.id !== 'string' || typeof from !== 'string') return null;
        return {
          providerMessageId: payload.id,
          accountId: '',
          from,
          to: typeof to === 'string' ? to : '',
          text: typeof payload.text === 'string' ? payload.text : '',
        };
      },
      noReply: { contentType: 'text/plain', body: '' },
    },
  },
};
