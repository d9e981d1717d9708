/**
 * SMS through Twilio's Programmable Messaging REST API
 * (https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource):
 * `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, form-encoded, HTTP Basic auth, answered
 * with the Message resource (201) or Twilio's error JSON `{code, message, more_info, status}`.
 * DLT fields are not sent: Twilio takes India DLT ids from the sender's registration, not per message.
 */
import { asRecord, bodyExcerpt, isRetryableStatus, ProviderError, providerFetch } from '../errors.ts';
import { parseForm } from '../../platform/form.ts';
import type { SmsChannel, SmsConnection, SmsSend } from '../types.ts';
import { headerOf, verifyTwilioSignature } from './telephony.ts';

export interface TwilioSmsOptions {
  accountSid: string;
  authToken: string;
  /** Twilio REST API origin; a fake in tests. Default `https://api.twilio.com`. */
  baseUrl?: string;
  /** Per-request timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

const LABEL = 'Twilio SMS';
const DEFAULT_BASE_URL = 'https://api.twilio.com';
const DEFAULT_TIMEOUT_MS = 10_000;

export function createTwilioSms(options: TwilioSmsOptions): SmsConnection {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const messagesUrl = `${baseUrl}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Messages.json`;
  const authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`, 'utf8').toString('base64')}`;

  return {
    async send(message: SmsSend): Promise<{ providerMessageId: string; status: string }> {
      const form = new URLSearchParams();
      form.append('To', message.to);
      form.append('From', message.from);
      form.append('Body', message.body);
      if (message.statusCallbackUrl) form.append('StatusCallback', message.statusCallbackUrl);

      const response = await providerFetch(
        LABEL,
        messagesUrl,
        {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form.toString(),
        },
        timeoutMs,
      );
      const body = asRecord(response.json);
      const status = response.status;

      if (status >= 200 && status <= 299) {
        if (typeof body?.sid !== 'string' || body.sid === '') {
          // Not retryable: Twilio may have accepted the message, and a retry could send it twice.
          throw new ProviderError(`${LABEL}: answered HTTP ${status} without a message sid`, { status, retryable: false });
        }
        return { providerMessageId: body.sid, status: typeof body.status === 'string' && body.status !== '' ? body.status : 'queued' };
      }

      const code =
        typeof body?.code === 'number'
          ? body.code
          : typeof body?.code === 'string' && /^\d+$/.test(body.code)
            ? Number(body.code)
            : undefined;
      const text =
        typeof body?.message === 'string' && body.message !== '' ? body.message : `HTTP ${status}: ${bodyExcerpt(response.text)}`;
      throw new ProviderError(`${LABEL}: ${text}${code === undefined ? '' : ` (Twilio error ${code})`}`, {
        status,
        code,
        retryable: isRetryableStatus(status),
        cause: { moreInfo: typeof body?.more_info === 'string' ? body.more_info : undefined },
      });
    },
  };
}

const MESSAGE_STATUS = { sent: 'SENT', delivered: 'DELIVERED', read: 'READ', undelivered: 'FAILED', failed: 'FAILED' } as const;

/** Twilio SMS: sent over REST, delivery statuses posted to the per-message StatusCallback, signed like every Twilio callback. */
export const twilioSms: SmsChannel = {
  connect: (connection) =>
    createTwilioSms({
      accountSid: connection.credentials.accountSid!,
      authToken: connection.credentials.authToken!,
      baseUrl: connection.settings.TWILIO_API_URL,
      timeoutMs: connection.timeoutMs,
    }),
  callbacks: {
    signatureHeader: 'X-Twilio-Signature',
    signedWith: 'Auth Token',
    verify: (webhook, credentials) =>
      verifyTwilioSignature(webhook.url, parseForm(webhook.rawBody), headerOf(webhook, 'x-twilio-signature'), credentials.authToken!),
    read(webhook) {
      const params = parseForm(webhook.rawBody);
      const status = MESSAGE_STATUS[String(params.MessageStatus ?? '') as keyof typeof MESSAGE_STATUS];
      const sid = typeof params.MessageSid === 'string' ? params.MessageSid : undefined;
      if (!status || !sid) return null; // queued, accepted, sending: nothing to record
      const failureReason =
        status === 'FAILED'
          ? `Twilio: the message was ${String(params.MessageStatus)}${typeof params.ErrorCode === 'string' ? ` (error ${params.ErrorCode})` : ''}.`
          : null;
      return { providerMessageId: sid, status, failureReason };
    },
    // A number's "A message comes in" webhook: Twilio posts the message form-encoded, signed like every callback.
    incoming: {
      read(webhook) {
        const params = parseForm(webhook.rawBody);
        const field = (name: string) => (typeof params[name] === 'string' ? (params[name] as string) : '');
        if (!field('MessageSid') || !field('From')) return null;
        return {
          providerMessageId: field('MessageSid'),
          accountId: field('AccountSid'),
          from: field('From'),
          to: field('To'),
          text: field('Body'),
        };
      },
      accountIdOf: (credentials) => credentials.accountSid ?? '',
      noReply: { contentType: 'text/xml', body: '<?xml version="1.0" encoding="UTF-8"?><Response/>' },
      // Twilio's default opt-out handling answers STOP itself on long codes, toll-free and short codes.
      confirmsOptOuts: true,
    },
  },
};
