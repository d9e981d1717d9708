/**
 * The dashboard's only way to the service: the public API under /api/v1, signed in by the session
 * cookie the service set at log-in. That cookie is httpOnly: no script of the page (nor one
 * injected into it) can read the session token. The page reads only the CSRF token beside it and
 * echoes it in X-CSRF-Token, which the service demands of every cookie-signed request that changes
 * something (another site's page can neither read nor forge it).
 */
import type { ErrorBody, PageOf } from '../../src/api-types.ts';

export type FieldError = NonNullable<ErrorBody['details']>[number];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldError[] = [],
  ) {
    super(message);
  }
}

export type Page<T> = PageOf<T>;

const CSRF_COOKIE = /(?:^|;\s*)(?:__Host-)?callforge_csrf=([^;]*)/;
const csrfToken = (): string | null => {
  const found = CSRF_COOKIE.exec(document.cookie);
  return found ? decodeURIComponent(found[1]!) : null;
};
// Earlier versions kept the session token in localStorage: forget it, it is no longer used.
localStorage.removeItem('callforge.session');

const listeners = new Set<() => void>();
const changed = () => listeners.forEach((listener) => listener());

export const session = {
  /** Whether a session is signed in: its cookies live (they expire with it). */
  get active(): boolean {
    return csrfToken() !== null;
  },
  /** After log-in or sign-up: the service has set the cookies. */
  started: changed,
  /** Ends the session on the service (its token stops working, its cookies are cleared). */
  async logOut() {
    try {
      await api('POST', '/auth/logout');
    } finally {
      changed();
    }
  },
  subscribe(listener: () => void): () => void {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
};

function failure(status: number, body: unknown): ApiError {
  const error = body as Partial<ErrorBody> | undefined;
  return new ApiError(
    status,
    error?.code ?? 'HTTP_' + status,
    error?.message ?? `The service answered HTTP ${status}.`,
    error?.details ?? [],
  );
}

function headers(json: boolean): Record<string, string> {
  const csrf = csrfToken();
  return { ...(csrf ? { 'x-csrf-token': csrf } : {}), ...(json ? { 'content-type': 'application/json' } : {}) };
}

/** Calls the API; a non-2xx answer throws ApiError with the API's own sentence. */
export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const isForm = body instanceof FormData;
  const response = await fetch(`/api/v1${path}`, {
    method,
    credentials: 'same-origin',
    headers: headers(body !== undefined && !isForm),
    body: body === undefined ? undefined : isForm ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    // A session that expired or was refused (the service cleared its cookies): back to the login page.
    if (response.status === 401) changed();
    throw failure(response.status, parsed);
  }
  return parsed as T;
}

/**
 * A file of the API (a call's recording), whole, as a Blob, played from a blob URL (the page's
 * policy lets media come from this origin and blob: URLs only).
 */
export async function download(path: string): Promise<Blob> {
  const response = await fetch(`/api/v1${path}`, { credentials: 'same-origin', headers: headers(false) });
  if (response.ok) return response.blob();
  const text = await response.text();
  throw failure(response.status, text ? JSON.parse(text) : undefined);
}

/** A multipart upload that reports its progress (0..1), which fetch cannot. */
export function upload<T>(path: string, form: FormData, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', `/api/v1${path}`);
    for (const [name, value] of Object.entries(headers(false))) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    request.onload = () => {
      const parsed: unknown = request.responseText ? JSON.parse(request.responseText) : undefined;
      if (request.status >= 200 && request.status < 300) resolve(parsed as T);
      else reject(failure(request.status, parsed));
    };
    request.onerror = () => reject(new ApiError(0, 'NETWORK', 'The service could not be reached; check your connection and try again.'));
    request.send(form);
  });
}

export const query = (params: Record<string, string | number | boolean | undefined | null>) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
};

/** One server-sent event: its `event:` name and its `data:` parsed as JSON. */
export interface StreamEvent {
  event: string;
  data: unknown;
}

/**
 * Follows a server-sent-events stream of the API, read with fetch (whose failures answer in the
 * API's error shape, unlike EventSource). Calls `onEvent` per event; resolves when the server closes the
 * stream or `signal` aborts it; a non-2xx answer throws ApiError like `api`.
 */
export async function follow(path: string, onEvent: (event: StreamEvent) => void, signal: AbortSignal): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, {
      credentials: 'same-origin',
      headers: { ...headers(false), accept: 'text/event-stream' },
      signal,
    });
  } catch (caught) {
    if (signal.aborted) return;
    throw caught;
  }
  if (!response.ok || !response.body) {
    const text = await response.text();
    throw failure(response.status, text ? JSON.parse(text) : undefined);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length) onEvent({ event, data: JSON.parse(data.join('\n')) as unknown });
      }
    }
  } catch (caught) {
    if (!signal.aborted) throw caught;
  }
}
