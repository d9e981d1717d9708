/**
 * SMS through MSG91, an Indian provider, for DLT-regulated traffic.
 *
 * Endpoint followed: MSG91's send-SMS HTTP API, `GET {baseUrl}/api/v2/sendsms` with query
 * parameters `authkey`, `mobiles` (international format, digits only), `message`, `sender`,
 * `route` (4 = transactional, 1 = promotional), `country` (0 = numbers already carry their
 * country code), `unicode=1` for UCS-2 text, and `response=json`, answered with
 * `{"type":"success","message":"<request id>"}` or `{"type":"error","message":…,"code":"…"}`
 * (often with HTTP 200):
 *   https://api.msg91.com/apidoc/textsms/send-sms-v1.php
 * The DLT content-template id travels as `DLT_TE_ID`, as in MSG91's own client library:
 *   https://github.com/MSG91/MSG91-node#readme
 * The sender must be the DLT-registered header, so `dltSenderId` wins over `from`.
 */
import { asRecord, bodyExcerpt, isRetryableStatus, ProviderError, providerFetch } from '../errors.ts';
import { smsSegments } from '../sms-segments.ts';
import type { SmsConnection, SmsSend } from '../types.ts';

export interface Msg91SmsOptions {
  authKey: string;
  /** MSG91 API origin; a fake in tests. Default `https://api.msg91.com`. */
  baseUrl?: string;
  /** Per-request timeout. Default 10 000 ms. */
  timeoutMs?: number;
  /** MSG91 route: `4` transactional (default), `1` promotional. */
  route?: string;
}

const LABEL = 'MSG91';
const DEFAULT_BASE_URL = 'https://api.msg91.com';
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_ROUTE = '4';

/**
 * MSG91's "system error" codes (database unreachable, internal error): MSG91's fault, worth
 * retrying even though they come with HTTP 200.
 */
export const MSG91_TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set(['001', '002', '601']);

export function createMsg91Sms(options: Msg91SmsOptions): SmsConnection {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const route = options.route ?? DEFAULT_ROUTE;

  return {
    async send(message: SmsSend): Promise<{ providerMessageId: string; status: string }> {
      const templateId = message.dltTemplateId?.trim();
      if (!templateId) {
        throw new ProviderError(`${LABEL}: a DLT template id is required for MSG91 (India DLT); set dltTemplateId on the message`, {
          retryable: false,
        });
      }
      const sender = message.dltSenderId?.trim() || message.from;

      const query = new URLSearchParams();
      query.set('authkey', options.authKey);
      query.set('mobiles', message.to.trim().replace(/^\+/, ''));
      query.set('message', message.body);
      query.set('sender', sender);
      query.set('route', route);
      query.set('country', '0');
      query.set('DLT_TE_ID', templateId);
      if (smsSegments(message.body).encoding === 'UCS-2') query.set('unicode', '1');
      query.set('response', 'json');

      const response = await providerFetch(
        LABEL,
        `${baseUrl}/api/v2/sendsms?${query.toString()}`,
        { method: 'GET', headers: { accept: 'application/json' } },
        timeoutMs,
      );
      const status = response.status;
      const body = asRecord(response.json);
      const type = typeof body?.type === 'string' ? body.type.toLowerCase() : undefined;

      if (status >= 200 && status <= 299 && type === 'success') {
        if (typeof body?.message !== 'string' || body.message === '') {
          throw new ProviderError(`${LABEL}: answered success without a request id`, { status, retryable: false });
        }
        return { providerMessageId: body.message, status: 'queued' };
      }

      if (type === 'error' || (body && typeof body.message === 'string')) {
        const code = typeof body?.code === 'string' || typeof body?.code === 'number' ? String(body.code) : undefined;
        const text =
          typeof body?.message === 'string' && body.message !== '' ? body.message : `HTTP ${status}: ${bodyExcerpt(response.text)}`;
        throw new ProviderError(`${LABEL}: ${text}${code === undefined ? '' : ` (MSG91 error ${code})`}`, {
          status,
          code,
          retryable: isRetryableStatus(status) || (code !== undefined && MSG91_TRANSIENT_ERROR_CODES.has(code)),
        });
      }

      // Neither answer shape: a proxy's error page, or a plain-text answer.
      throw new ProviderError(`${LABEL}: unexpected answer: HTTP ${status}: ${bodyExcerpt(response.text)}`, {
        status,
        retryable: isRetryableStatus(status),
      });
    },
  };
}
