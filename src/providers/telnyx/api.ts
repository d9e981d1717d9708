/**
 * Telnyx's v2 REST API as callforge uses it (https://developers.telnyx.com/development/api-fundamentals/api-errors):
 * JSON requests with `Authorization: Bearer <API key>`, answers wrapped in `{data: …}`, failures as
 * `{errors: [{code, title, detail, source: {pointer}}]}`.
 */
import { asRecord, bodyExcerpt, providerFetch, type ProviderResponse } from '../errors.ts';
import type { Connection } from '../types.ts';

export interface TelnyxError {
  /** Telnyx's error code (`10016`), when the answer carried one. */
  code: number | undefined;
  /** Telnyx's title and detail, or an excerpt of a body that was not Telnyx's error JSON. */
  message: string;
  /** The request field the error is about (`/to`), when Telnyx said. */
  pointer: string | undefined;
}

/** POSTs a JSON body to a Telnyx v2 path; any HTTP answer is returned for the caller to read. */
export function telnyxPost(connection: Connection, path: string, body: object, label: string): Promise<ProviderResponse> {
  const origin = connection.settings.TELNYX_API_URL!.replace(/\/+$/, '');
  return providerFetch(
    label,
    `${origin}${path}`,
    {
      method: 'POST',
      headers: {
        authorization: `Bearer ${connection.credentials.apiKey!}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify(body),
    },
    connection.timeoutMs,
  );
}

/** The answer's `data` object, or undefined. */
export const dataOf = (response: ProviderResponse) => asRecord(asRecord(response.json)?.data);

/** The first error of Telnyx's error JSON (the one that decided the answer). */
export function telnyxErrorOf(response: ProviderResponse): TelnyxError {
  const errors = asRecord(response.json)?.errors;
  const first = Array.isArray(errors) ? asRecord(errors[0]) : undefined;
  if (!first) return { code: undefined, message: bodyExcerpt(response.text), pointer: undefined };
  const code =
    typeof first.code === 'number'
      ? first.code
      : typeof first.code === 'string' && /^\d+$/.test(first.code)
        ? Number(first.code)
        : undefined;
  const title = typeof first.title === 'string' ? first.title : '';
  const detail = typeof first.detail === 'string' ? first.detail : '';
  const message = (title && detail && detail !== title ? `${title}: ${detail}` : title || detail) || bodyExcerpt(response.text);
  const pointer = asRecord(first.source)?.pointer;
  return { code, message, pointer: typeof pointer === 'string' ? pointer : undefined };
}

export const telnyxCodeSuffix = (code: number | undefined) => (code === undefined ? '' : ` (Telnyx error ${code})`);
