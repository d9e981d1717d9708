// What the chat model and the speech channels share: one way to build the `openai` SDK's client and
// one reading of its errors as ProviderError.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { isRetryableStatus, ProviderError } from '../errors.ts';

export interface SdkEndpoint {
  /** Base URL up to and including the version, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  /** The SDK's own deadline for a request's answer to start. */
  timeoutMs: number;
  /** How requests are made; a tenant's own server is reached through one that refuses private addresses. */
  fetch?: typeof globalThis.fetch;
}

export function sdkClient(endpoint: SdkEndpoint): OpenAI {
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    apiKey: endpoint.apiKey ?? 'none',
    // Explicit, so OPENAI_ORG_ID / OPENAI_PROJECT_ID in the environment add no headers of their own.
    organization: null,
    project: null,
    timeout: endpoint.timeoutMs,
    // The caller decides about retries (ProviderError.retryable): a retry inside a live call costs time it may not have.
    maxRetries: 0,
    // Failures reach the caller as errors; the SDK's own console output would duplicate them.
    logLevel: 'off',
    ...(endpoint.fetch ? { fetch: endpoint.fetch } : {}),
  });
}

/**
 * The watch over one streamed request: one controller for the caller's abort and a silence
 * deadline (the longest the server may stay silent before its answer starts and between two
 * chunks, counted only while we wait for it: a consumer slow to pull is not a stalled server), and
 * its failures in our terms. One timer per request, restarted at each wait, rather than one per chunk.
 */
export function watchRequest(label: string, timeoutMs: number, callerSignal: AbortSignal | undefined) {
  const controller = new AbortController();
  const abort = () => controller.abort();
  callerSignal?.addEventListener('abort', abort, { once: true });
  let timedOut = false;
  let waiting = false;
  const silent = setTimeout(() => {
    if (!waiting) return;
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const failure = (error: unknown) =>
    sdkProviderError(label, error, { timedOut, timeoutMs, abortedByCaller: callerSignal?.aborted === true });
  return {
    signal: controller.signal,
    /** Waits for the server under the deadline; a failure is thrown as ProviderError. */
    async waitForServer<T>(promise: Promise<T>): Promise<T> {
      waiting = true;
      silent.refresh();
      try {
        return await promise;
      } catch (error) {
        throw failure(error);
      } finally {
        waiting = false;
      }
    },
    /** Why the request stopped (the deadline or the caller), for an SDK that ends a stream quietly when it is aborted; undefined while it runs. */
    stopped: (): ProviderError | undefined => (timedOut || callerSignal?.aborted ? failure(undefined) : undefined),
    /** Closes the connection, so the server stops generating. */
    abort,
    /** Stops the deadline and forgets the caller's signal. */
    end() {
      clearTimeout(silent);
      callerSignal?.removeEventListener('abort', abort);
    },
  };
}

export const cancelled = (label: string) => new ProviderError(`${label}: the request was cancelled.`, { retryable: false });

/** The SDK's errors in our terms, prefixed with `label` (`LLM`, `Speech-to-text`); never the URL or the key, only the server's words. */
export function sdkProviderError(
  label: string,
  error: unknown,
  state: { timedOut: boolean; timeoutMs: number; abortedByCaller: boolean },
): ProviderError {
  if (error instanceof ProviderError) return error;
  if (state.timedOut || error instanceof APIConnectionTimeoutError)
    return new ProviderError(`${label}: no answer within ${state.timeoutMs} ms`, { retryable: true, cause: error });
  if (state.abortedByCaller || error instanceof APIUserAbortError) return cancelled(label);
  if (error instanceof APIConnectionError)
    return new ProviderError(`${label}: request failed: ${causeOf(error)}`, { retryable: true, cause: error });
  if (error instanceof APIError) {
    const serverMessage = asServerError(error.error)?.message;
    const code = error.code ?? undefined;
    // No status: the server reported the error inside a stream it had begun, a failure on its side.
    if (error.status === undefined)
      return new ProviderError(`${label}: ${serverMessage ?? 'the server reported an error mid-stream'}`, {
        retryable: true,
        code,
        cause: error,
      });
    return new ProviderError(`${label}: ${serverMessage ?? `HTTP ${error.status}`}`, {
      status: error.status,
      retryable: isRetryableStatus(error.status),
      code,
      cause: error,
    });
  }
  // The connection dropped mid-stream (undici's "terminated") or a chunk was not JSON.
  return new ProviderError(`${label}: the stream broke off: ${error instanceof Error ? error.message : String(error)}`, {
    retryable: true,
    cause: error,
  });
}

function asServerError(value: unknown): { message?: string } | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const message = (value as { message?: unknown }).message;
  return typeof message === 'string' ? { message } : undefined;
}

function causeOf(error: APIConnectionError): string {
  const cause = error.cause;
  if (!(cause instanceof Error)) return error.message;
  const inner = cause.cause;
  return inner instanceof Error && inner.message ? `${cause.message} (${inner.message})` : cause.message;
}
