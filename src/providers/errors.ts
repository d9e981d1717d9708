/**
 * The one error type every provider throws, and the one HTTP transport they share.
 *
 * `message` carries the provider's own words (prefixed with the provider's name), because the API
 * shows it to users in a 502. `retryable` says whether sending the same request again later may
 * succeed: true for network failures, timeouts, HTTP 429 and 5xx; false for other 4xx. A client
 * may also mark a provider error code that it knows to be transient (a throttle) as retryable.
 */
export class ProviderError extends Error {
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly code: string | number | undefined;
  /** The request can never succeed for this target (an invalid number): a call attempt is not retried. */
  readonly permanent: boolean;

  constructor(
    message: string,
    options: { status?: number; retryable: boolean; permanent?: boolean; code?: string | number; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProviderError';
    this.status = options.status;
    this.retryable = options.retryable;
    this.code = options.code;
    this.permanent = options.permanent ?? false;
  }
}

/** HTTP 429 and 5xx are worth retrying; any other status is not. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

export interface ProviderResponse {
  status: number;
  /** The raw response body. */
  text: string;
  /** The body parsed as JSON, or `undefined` when it is empty or not JSON. */
  json: unknown;
}

/**
 * `fetch` with a per-request timeout. A timeout or a network failure becomes a retryable
 * `ProviderError` whose message starts with `label`; any HTTP answer, whatever its status, is
 * returned for the caller to interpret. The URL is never put in an error message (it may carry
 * a credential in its query string).
 */
export async function providerFetch(label: string, url: string, init: RequestInit, timeoutMs: number): Promise<ProviderResponse> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      throw new ProviderError(`${label}: request timed out after ${timeoutMs} ms`, { retryable: true, cause: error });
    }
    throw new ProviderError(`${label}: request failed: ${describeNetworkError(error)}`, { retryable: true, cause: error });
  }
  return { status: response.status, text, json: parseJson(text) };
}

/** A short excerpt of a non-JSON body (an HTML error page from a proxy, say) for error messages. */
export function bodyExcerpt(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 300) || '(empty response body)';
}

/** `value` when it is a plain JSON object, else `undefined`. */
export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error && cause.message) return `${error.message} (${cause.message})`;
  return error.message;
}
