/**
 * WhatsApp Cloud API client (Meta Graph API): template sends, a business account's sender numbers,
 * and the `X-Hub-Signature-256` check for webhook deliveries. A plain HTTP client: it knows
 * nothing of our database.
 *
 * Wire format: https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages and
 * https://developers.facebook.com/docs/whatsapp/business-management-api/manage-phone-numbers;
 * errors are Graph's `{error: {message, type, code, error_subcode?, error_data?, fbtrace_id}}`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { asRecord, bodyExcerpt, isRetryableStatus, ProviderError, providerFetch, type ProviderResponse } from '../errors.ts';
import type { WhatsAppConnection, WhatsAppSenderNumber, WhatsAppTemplateSend } from '../types.ts';

export interface WhatsAppCloudOptions {
  /** A system-user (or temporary) access token with `whatsapp_business_messaging` / `_management`. */
  accessToken: string;
  /** Graph API origin; a fake in tests. Default `https://graph.facebook.com`. */
  baseUrl?: string;
  /** Graph API version. Default `v21.0`. */
  apiVersion?: string;
  /** Per-request timeout. Default 10 000 ms. */
  timeoutMs?: number;
}

/** The Cloud API's client is the WhatsApp channel's connection. */
export type WhatsAppCloud = WhatsAppConnection;

const LABEL = 'WhatsApp Cloud API';
const DEFAULT_BASE_URL = 'https://graph.facebook.com';
const DEFAULT_API_VERSION = 'v21.0';
const DEFAULT_TIMEOUT_MS = 10_000;
const PHONE_NUMBER_FIELDS = 'id,display_phone_number,verified_name,quality_rating';
/** Pages of phone numbers followed at most; a business account has far fewer numbers than this allows. */
const MAX_PAGES = 20;

/**
 * Graph error codes that mean "slow down / try again later" even though Graph answers them with a
 * 400 (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes):
 * 2 service temporarily unavailable, 4 app-level call-rate limit, 80007 WABA rate limit,
 * 130429 Cloud API throughput limit, 131016 service unavailable, 131056 business→user pair rate
 * limit, 133004 server temporarily unavailable.
 */
export const WHATSAPP_TRANSIENT_ERROR_CODES: ReadonlySet<number> = new Set([2, 4, 80007, 130429, 131016, 131056, 133004]);

export function createWhatsAppCloud(options: WhatsAppCloudOptions): WhatsAppCloud {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const apiVersion = (options.apiVersion ?? DEFAULT_API_VERSION).replace(/^\/+|\/+$/g, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const origin = new URL(baseUrl).origin;
  const authorization = `Bearer ${options.accessToken}`;

  function versioned(path: string): string {
    return `${baseUrl}/${apiVersion}/${path}`;
  }

  /** POST /{phone-number-id}/messages of one message to one person; the message id Graph gives it. */
  async function postMessage(
    send: { phoneNumberId: string; to: string; callbackData?: string },
    content: Record<string, unknown>,
  ): Promise<{ providerMessageId: string }> {
    requireText(send.phoneNumberId, 'phoneNumberId');
    const to = send.to.trim().replace(/^\+/, '');
    if (!/^\d{6,15}$/.test(to)) {
      throw new ProviderError(`${LABEL}: recipient ${JSON.stringify(send.to)} is not an E.164 phone number`, { retryable: false });
    }
    const payload = {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      ...content,
      ...(send.callbackData ? { biz_opaque_callback_data: send.callbackData } : {}),
    };
    const response = await providerFetch(
      LABEL,
      versioned(`${encodeURIComponent(send.phoneNumberId)}/messages`),
      {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
      },
      timeoutMs,
    );
    if (response.status < 200 || response.status > 299) throw graphError(response);
    const messages = asRecord(response.json)?.messages;
    const id = Array.isArray(messages) ? asRecord(messages[0])?.id : undefined;
    if (typeof id !== 'string' || id === '') {
      // Not retryable: the message may well have been accepted, and a retry could send it twice.
      throw new ProviderError(`${LABEL}: answered HTTP ${response.status} without a message id`, {
        status: response.status,
        retryable: false,
      });
    }
    return { providerMessageId: id };
  }

  return {
    async sendTemplate(send: WhatsAppTemplateSend): Promise<{ providerMessageId: string }> {
      requireText(send.templateName, 'templateName');
      requireText(send.languageCode, 'languageCode');
      const template: Record<string, unknown> = { name: send.templateName, language: { code: send.languageCode } };
      if (send.bodyParameters.length > 0) {
        template.components = [{ type: 'body', parameters: send.bodyParameters.map((text) => ({ type: 'text', text })) }];
      }
      return postMessage(send, { type: 'template', template });
    },

    async sendText(send): Promise<{ providerMessageId: string }> {
      requireText(send.body, 'body');
      return postMessage(send, { type: 'text', text: { preview_url: false, body: send.body } });
    },

    async listPhoneNumbers(businessAccountId: string): Promise<WhatsAppSenderNumber[]> {
      requireText(businessAccountId, 'businessAccountId');
      const numbers: WhatsAppSenderNumber[] = [];
      const seen = new Set<string>();
      let url: string | undefined = versioned(`${encodeURIComponent(businessAccountId)}/phone_numbers?fields=${PHONE_NUMBER_FIELDS}`);

      for (let page = 0; url !== undefined && page < MAX_PAGES; page++) {
        seen.add(url);
        const response = await providerFetch(
          LABEL,
          url,
          { method: 'GET', headers: { authorization, accept: 'application/json' } },
          timeoutMs,
        );
        if (response.status < 200 || response.status > 299) throw graphError(response);
        const body = asRecord(response.json);
        if (!body || !Array.isArray(body.data)) {
          throw new ProviderError(`${LABEL}: unexpected phone number list: ${bodyExcerpt(response.text)}`, {
            status: response.status,
            retryable: false,
          });
        }
        for (const item of body.data) {
          const number = toSenderNumber(item);
          if (number) numbers.push(number);
        }
        url = nextPage(body.paging, origin, seen);
      }
      return numbers;
    },
  };
}

function requireText(value: string, name: string): void {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ProviderError(`${LABEL}: ${name} is required`, { retryable: false });
  }
}

function toSenderNumber(item: unknown): WhatsAppSenderNumber | undefined {
  const record = asRecord(item);
  if (!record || typeof record.id !== 'string' || record.id === '') return undefined;
  const text = (value: unknown, fallback: string) => (typeof value === 'string' && value !== '' ? value : fallback);
  return {
    id: record.id,
    displayPhoneNumber: text(record.display_phone_number, ''),
    verifiedName: text(record.verified_name, ''),
    qualityRating: text(record.quality_rating, 'UNKNOWN'),
  };
}

/**
 * Graph's cursor pagination: `paging.next` is the full URL of the next page and is absent on the
 * last. It is followed only on the API's own origin (we send our bearer token with it) and never
 * twice (a looping cursor ends the walk).
 */
function nextPage(paging: unknown, origin: string, seen: Set<string>): string | undefined {
  const next = asRecord(paging)?.next;
  if (typeof next !== 'string' || next === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(next);
  } catch {
    throw new ProviderError(`${LABEL}: paging.next is not a URL`, { retryable: false });
  }
  if (parsed.origin !== origin) {
    throw new ProviderError(`${LABEL}: paging.next points at ${parsed.origin}, not ${origin}; not following it`, { retryable: false });
  }
  return seen.has(parsed.href) || seen.has(next) ? undefined : parsed.href;
}

/** Maps a non-2xx Graph answer to a ProviderError carrying Graph's own message and code. */
function graphError(response: ProviderResponse): ProviderError {
  const error = asRecord(asRecord(response.json)?.error);
  const status = response.status;
  if (!error || typeof error.message !== 'string' || error.message === '') {
    return new ProviderError(`${LABEL}: HTTP ${status}: ${bodyExcerpt(response.text)}`, { status, retryable: isRetryableStatus(status) });
  }
  const code =
    typeof error.code === 'number'
      ? error.code
      : typeof error.code === 'string' && /^\d+$/.test(error.code)
        ? Number(error.code)
        : undefined;
  let message = error.message;
  // Graph writes most messages as "(#131030) Recipient …"; give the others the same shape.
  if (code !== undefined && !message.startsWith('(#')) message = `(#${code}) ${message}`;
  // `error_data.details` often says what to do about it: keep it when it adds something.
  const details = asRecord(error.error_data)?.details;
  if (typeof details === 'string' && details.trim() !== '' && !message.includes(details)) {
    const bare = message.replace(/^\(#\d+\)\s*/, '');
    message = details.startsWith(bare) ? `${message}${details.slice(bare.length)}` : `${message} (${details})`;
  }
  return new ProviderError(`${LABEL}: ${message}`, {
    status,
    code,
    retryable: isRetryableStatus(status) || (code !== undefined && WHATSAPP_TRANSIENT_ERROR_CODES.has(code)),
    cause: {
      type: error.type,
      code: error.code,
      subcode: error.error_subcode,
      fbtraceId: error.fbtrace_id,
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Webhook signatures (https://developers.facebook.com/docs/graph-api/webhooks/getting-started#event-notifications)
// ---------------------------------------------------------------------------------------------

/** Meta's `X-Hub-Signature-256` for a webhook body: `sha256=` + hex HMAC-SHA256 of the raw bytes under the app secret. */
export function whatsappSignature(appSecret: string, rawBody: Buffer | string): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

/**
 * Checks an `X-Hub-Signature-256` header against the raw body (exactly the bytes received, before
 * any JSON parsing) in constant time. A missing, malformed or empty-secret check fails.
 */
export function verifyWhatsAppSignature(appSecret: string, rawBody: Buffer | string, header: string | undefined): boolean {
  if (typeof appSecret !== 'string' || appSecret === '' || typeof header !== 'string') return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match?.[1]) return false;
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const expected = createHmac('sha256', appSecret).update(body).digest();
  return timingSafeEqual(Buffer.from(match[1], 'hex'), expected);
}
