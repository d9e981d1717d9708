import { createHmac, timingSafeEqual } from 'node:crypto';
import { PermanentDialError, type CallOutcome, type DialRequest, type DialResult, type TelephonyProvider } from './types.ts';

export interface TwilioTelephonyOptions {
  accountSid: string;
  authToken: string;
  /** Twilio REST API origin; a fake in tests. Default `https://api.twilio.com`. */
  baseUrl?: string;
  /** `wss://` URL of our media-stream endpoint that `<Connect><Stream>` points the call at. */
  mediaStreamUrl: string;
  /** Per-request timeout for REST calls. Default 10 000 ms. */
  timeoutMs?: number;
}

/**
 * Twilio error codes (REST answer `code`, on a 4xx) meaning this number will never be dialable,
 * so the attempt must not be retried:
 *
 * - 21211 Invalid 'To' phone number.
 * - 21214 'To' phone number cannot be reached.
 * - 21215 Account not authorized to call this number (geographic permissions).
 * - 21216 Account not allowed to call this number (blocked / high-risk / premium destination).
 * - 21217 Phone number does not appear to be valid.
 * - 13223 Dial: invalid phone number format.
 * - 13224 Dial: invalid phone number (not a callable number).
 * - 21610 The recipient has opted out (replied STOP); they may not be contacted.
 */
export const TWILIO_PERMANENT_DIAL_ERROR_CODES: ReadonlySet<number> = new Set([21211, 21214, 21215, 21216, 21217, 13223, 13224, 21610]);

/** Twilio 21220 "Invalid call state": modifying a call that has already ended. */
const CALL_NOT_IN_PROGRESS = 21220;

const DEFAULT_BASE_URL = 'https://api.twilio.com';
const DEFAULT_TIMEOUT_MS = 10_000;

/** The events we ask Twilio to report on the call's `StatusCallback`. */
const STATUS_CALLBACK_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const;

export function createTwilioTelephony(options: TwilioTelephonyOptions): TelephonyProvider {
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const callsUrl = `${baseUrl}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Calls`;
  const authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`, 'utf8').toString('base64')}`;

  async function post(url: string, form: URLSearchParams, what: string): Promise<{ status: number; body: TwilioBody }> {
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: {
          authorization,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
        throw new Error(`Twilio ${what} timed out after ${timeoutMs} ms`, { cause: error });
      }
      const reason = error instanceof Error ? describeNetworkError(error) : String(error);
      throw new Error(`Twilio ${what} request failed: ${reason}`, { cause: error });
    }
    return { status: response.status, body: parseBody(text) };
  }

  return {
    async dial(request: DialRequest): Promise<DialResult> {
      const form = new URLSearchParams();
      form.append('To', request.to);
      form.append('From', request.from);
      form.append('Timeout', String(request.dialTimeoutSec));
      form.append('StatusCallback', request.statusCallbackUrl);
      form.append('StatusCallbackMethod', 'POST');
      for (const event of STATUS_CALLBACK_EVENTS) form.append('StatusCallbackEvent', event);
      form.append('Twiml', streamTwiml(options.mediaStreamUrl, request.callId));

      const { status, body } = await post(`${callsUrl}.json`, form, 'dial');
      if (status >= 200 && status < 300) {
        if (typeof body.json?.sid !== 'string' || body.json.sid === '') {
          throw new Error(`Twilio dial answered HTTP ${status} without a call sid`);
        }
        return { providerCallId: body.json.sid };
      }
      const twilioError = errorOf(body);
      if (status >= 400 && status < 500 && twilioError.code !== undefined && TWILIO_PERMANENT_DIAL_ERROR_CODES.has(twilioError.code)) {
        throw new PermanentDialError(twilioError.message, { cause: { status, code: twilioError.code, moreInfo: twilioError.moreInfo } });
      }
      throw new Error(`Twilio dial failed: HTTP ${status}${codeSuffix(twilioError.code)}: ${twilioError.message}`, {
        cause: { status, code: twilioError.code, moreInfo: twilioError.moreInfo },
      });
    },

    async hangup(providerCallId: string): Promise<void> {
      const form = new URLSearchParams({ Status: 'completed' });
      const { status, body } = await post(`${callsUrl}/${encodeURIComponent(providerCallId)}.json`, form, 'hangup');
      if (status >= 200 && status < 300) return;
      // The call is gone or already over: nothing left to hang up.
      if (status === 404) return;
      const twilioError = errorOf(body);
      if (status === 400 && twilioError.code === CALL_NOT_IN_PROGRESS) return;
      throw new Error(`Twilio hangup of ${providerCallId} failed: HTTP ${status}${codeSuffix(twilioError.code)}: ${twilioError.message}`, {
        cause: { status, code: twilioError.code, moreInfo: twilioError.moreInfo },
      });
    },
  };
}

/** TwiML that connects the answered call to our media stream, passing our call id as a custom parameter. */
export function streamTwiml(mediaStreamUrl: string, callId: string): string {
  return (
    `<Response><Connect><Stream url="${xmlAttr(mediaStreamUrl)}">` +
    `<Parameter name="callId" value="${xmlAttr(callId)}"/>` +
    `</Stream></Connect></Response>`
  );
}

function xmlAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

interface TwilioBody {
  text: string;
  json: Record<string, unknown> | null;
}

function parseBody(text: string): TwilioBody {
  if (text === '') return { text, json: null };
  try {
    const parsed: unknown = JSON.parse(text);
    return {
      text,
      json: parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null,
    };
  } catch {
    return { text, json: null };
  }
}

function errorOf(body: TwilioBody): { code: number | undefined; message: string; moreInfo: string | undefined } {
  const json = body.json;
  const code =
    typeof json?.code === 'number' ? json.code : typeof json?.code === 'string' && /^\d+$/.test(json.code) ? Number(json.code) : undefined;
  const message =
    typeof json?.message === 'string' && json.message !== '' ? json.message : body.text.trim().slice(0, 300) || '(empty response body)';
  const moreInfo = typeof json?.more_info === 'string' ? json.more_info : undefined;
  return { code, message, moreInfo };
}

function codeSuffix(code: number | undefined): string {
  return code === undefined ? '' : ` (Twilio error ${code})`;
}

function describeNetworkError(error: Error): string {
  const cause = error.cause;
  if (cause instanceof Error && cause.message) return `${error.message} (${cause.message})`;
  return error.message;
}

// ---------------------------------------------------------------------------------------------
// Webhook signatures (https://www.twilio.com/docs/usage/security#validating-requests)
// ---------------------------------------------------------------------------------------------

/**
 * Twilio's `X-Twilio-Signature`: take the full URL Twilio requested (scheme, host, path and query
 * string, exactly as configured), append every POST parameter sorted by name (case-sensitive,
 * code-unit order) as name followed by value with no delimiters (a repeated name contributes
 * name+value once per value, in the order given), HMAC-SHA1 that with the auth token, base64.
 */
export function twilioSignature(url: string, params: Record<string, string | string[]>, authToken: string): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name];
    const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
    for (const v of values) data += name + v;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Checks an `X-Twilio-Signature` header in constant time. A missing or empty header fails. */
export function verifyTwilioSignature(
  url: string,
  params: Record<string, string | string[]>,
  signatureHeader: string | undefined,
  authToken: string,
): boolean {
  if (typeof signatureHeader !== 'string' || signatureHeader === '') return false;
  const expected = Buffer.from(twilioSignature(url, params, authToken), 'utf8');
  const given = Buffer.from(signatureHeader, 'utf8');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}

// ---------------------------------------------------------------------------------------------
// Status callbacks
// ---------------------------------------------------------------------------------------------

export type TwilioCallState = 'QUEUED' | 'RINGING' | 'IN_PROGRESS' | 'ENDED';

export interface TwilioCallUpdate {
  status: TwilioCallState;
  /** Set only when `status` is `ENDED`. */
  outcome: CallOutcome | null;
  /** Twilio's `CallDuration` (seconds) when the call ended and Twilio reported it. */
  durationSec: number | null;
}

/**
 * Maps a status callback's `CallStatus` to our call state. `answeredBefore` is whether we already
 * saw the call `in-progress`, since Twilio's `completed` alone does not say whether anyone answered.
 * `AnsweredBy` (answering-machine detection) is accepted but does not change the mapping.
 */
export function twilioCallUpdate(
  params: { CallStatus?: string; CallDuration?: string; AnsweredBy?: string },
  answeredBefore: boolean,
): TwilioCallUpdate {
  const status = params.CallStatus;
  switch (status) {
    case 'queued':
    case 'initiated':
      return { status: 'QUEUED', outcome: null, durationSec: null };
    case 'ringing':
      return { status: 'RINGING', outcome: null, durationSec: null };
    case 'in-progress':
      return { status: 'IN_PROGRESS', outcome: null, durationSec: null };
    case 'completed': {
      const durationSec = parseDuration(params.CallDuration);
      const answered = answeredBefore || (durationSec !== null && durationSec > 0);
      return { status: 'ENDED', outcome: answered ? 'ANSWERED' : 'UNANSWERED', durationSec };
    }
    case 'busy':
      return { status: 'ENDED', outcome: 'BUSY', durationSec: parseDuration(params.CallDuration) };
    case 'no-answer':
    case 'canceled':
      return { status: 'ENDED', outcome: 'UNANSWERED', durationSec: parseDuration(params.CallDuration) };
    case 'failed':
      return { status: 'ENDED', outcome: 'FAILED', durationSec: parseDuration(params.CallDuration) };
    default:
      throw new Error(
        status === undefined ? 'Twilio status callback without CallStatus' : `Unknown Twilio CallStatus: ${JSON.stringify(status)}`,
      );
  }
}

function parseDuration(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d+$/.test(raw.trim())) return null;
  return Number(raw.trim());
}
