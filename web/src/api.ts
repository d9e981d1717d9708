/** The dashboard's only way to the service: the public API under /api/v1, with the session token. */
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

const TOKEN_KEY = 'callforge.session';
const listeners = new Set<() => void>();

export const session = {
  get token(): string | null {
    return localStorage.getItem(TOKEN_KEY);
  },
  start(token: string) {
    localStorage.setItem(TOKEN_KEY, token);
    listeners.forEach((listener) => listener());
  },
  end() {
    localStorage.removeItem(TOKEN_KEY);
    listeners.forEach((listener) => listener());
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
  const token = session.token;
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(json ? { 'content-type': 'application/json' } : {}) };
}

/** Calls the API; a non-2xx answer throws ApiError with the API's own sentence. */
export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const isForm = body instanceof FormData;
  const response = await fetch(`/api/v1${path}`, {
    method,
    headers: headers(body !== undefined && !isForm),
    body: body === undefined ? undefined : isForm ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    // A session that expired or was refused: back to the login page.
    if (response.status === 401 && session.token) session.end();
    throw failure(response.status, parsed);
  }
  return parsed as T;
}

/**
 * A file of the API (a call's recording), whole, as a Blob: an <audio src> cannot send the
 * session's bearer header, so the page fetches the file and plays it from a blob URL.
 */
export async function download(path: string): Promise<Blob> {
  const response = await fetch(`/api/v1${path}`, { headers: headers(false) });
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
 * Follows a server-sent-events stream of the API (EventSource cannot send the session's bearer
 * header, so fetch reads it). Calls `onEvent` per event; resolves when the server closes the
 * stream or `signal` aborts it; a non-2xx answer throws ApiError like `api`.
 */
export async function follow(path: string, onEvent: (event: StreamEvent) => void, signal: AbortSignal): Promise<void> {
  let response: Response;
  try {
    response = await fetch(`/api/v1${path}`, { headers: { ...headers(false), accept: 'text/event-stream' }, signal });
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
