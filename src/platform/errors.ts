import { randomUUID } from 'node:crypto';
import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { EmbeddedDatabaseFailure, isStatementTimeout } from './db.ts';
import { PATTERN_MESSAGE } from './schemas.ts';
import {
  codeOf,
  errorCatalogue,
  FRAMEWORK_CODES,
  renderMessage,
  type ErrorCode,
  type ErrorEntry,
  type ErrorKey,
  type ErrorParams,
  type FrameworkStatus,
  type ParamsOf,
} from './error-catalogue.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What a route that takes no JSON says to a body of a type it does not take (an upload's own sentence). */
    unsupportedMediaType?: 'UNSUPPORTED_MEDIA_TYPE.csv';
  }
}

export interface FieldError {
  path: string;
  message: string;
}

/** The one error type: thrown anywhere, rendered by `sendError` into the contract's error shape. */
export class AppError extends Error {
  /** Sent as Retry-After (a 429 or 503 that says when to come back). */
  retryAfterSeconds?: number;
  /** Throw sites use `appError(key, params)`. */
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldError[],
  ) {
    super(message);
  }
}

/** What a throw site passes after the key: the sentence's parameters (none for a fixed sentence), then field details. */
type ErrorArgs<K extends ErrorKey> = [ParamsOf<K>] extends [never]
  ? [params?: Record<string, never>, details?: FieldError[]]
  : [params: ErrorParams<K>, details?: FieldError[]];

/** The catalogue's error for `key`, its sentence filled in: `appError('NOT_FOUND', { what: 'Agent' })`. */
export function appError<K extends ErrorKey>(key: K, ...[params, details]: ErrorArgs<K>): AppError {
  const entry: ErrorEntry = errorCatalogue[key];
  return new AppError(entry.status, codeOf(key), renderMessage(entry.message, params), details);
}

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  /** The schema that failed (validation is verbose). */
  parentSchema?: unknown;
}

function fieldPath(error: AjvError): string {
  const extra =
    error.keyword === 'required'
      ? error.params.missingProperty
      : error.keyword === 'additionalProperties'
        ? error.params.additionalProperty
        : undefined;
  return extra === undefined ? error.instancePath : `${error.instancePath}/${String(extra)}`;
}

function describe(error: AjvError): string {
  const p = error.params;
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not an accepted property';
    case 'type':
      if (p.type === 'null') return 'must be null';
      return `must be ${/^[aeiou]/.test(String(p.type)) ? 'an' : 'a'} ${String(p.type)}`;
    case 'minimum':
      return `must be at least ${String(p.limit)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}`;
    case 'minLength':
      return p.limit === 1 ? 'must not be empty' : `must be at least ${String(p.limit)} characters long`;
    case 'maxLength':
      return `must be at most ${String(p.limit)} characters long`;
    case 'minItems':
      return `must have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`;
    case 'maxItems':
      return `must have at most ${String(p.limit)} items`;
    case 'enum':
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `must be ${String(p.allowedValue)}`;
    case 'format':
      return `must be a valid ${String(p.format)}`;
    case 'uniqueItems':
      return 'must not contain duplicates';
    case 'pattern': {
      const words = (error.parentSchema as { [PATTERN_MESSAGE]?: string } | undefined)?.[PATTERN_MESSAGE];
      return words ? `must be ${words}` : `must match the pattern ${String(p.pattern)}`;
    }
    default:
      return error.message ?? 'is invalid';
  }
}

/**
 * A value that fits none of a union's branches fails each branch on its own (one `const` per
 * allowed word, a `type` for the null of a nullable field): the branches' failures at the union's
 * own path become one detail that names every choice ("must be one of DRAFT, RUNNING",
 * "must be a valid uuid or null"). Other failures stay one detail each.
 */
function withAlternativesMerged(errors: AjvError[], unionPaths: Set<string>): { path: string; message: string }[] {
  const details: { path: string; message: string }[] = [];
  const alternatives = new Map<string, AjvError[]>();
  for (const error of errors) {
    const path = fieldPath(error);
    if (!unionPaths.has(path)) details.push({ path, message: describe(error) });
    else if (alternatives.has(path)) alternatives.get(path)!.push(error);
    else {
      alternatives.set(path, [error]);
      details.push({ path, message: '' });
    }
  }
  for (const detail of details) {
    const branches = alternatives.get(detail.path);
    if (!branches) continue;
    const words = branches.filter((e) => e.keyword === 'const').map((e) => String(e.params.allowedValue));
    // Branches failing alike (a repeated query parameter is a list, which no branch of strings takes) are said once.
    const choices = [
      ...new Set([
        ...(words.length === 0 ? [] : [words.length === 1 ? `must be ${words[0]!}` : `must be one of ${words.join(', ')}`]),
        ...branches.filter((e) => e.keyword !== 'const').map(describe),
      ]),
    ];
    // "must be a string or must be null" reads as "must be a string or null".
    detail.message = choices.map((choice, i) => (i === 0 ? choice : choice.replace(/^must be /, ''))).join(' or ');
  }
  return details;
}

/** Details listed at most: a large body wrong everywhere would otherwise answer with a far larger list. */
const MAX_DETAILS = 100;

const PART_NAMES: Record<string, string> = { body: 'Field', querystring: 'Query parameter', params: 'Path parameter', headers: 'Header' };

/** Turns Ajv's errors into the contract's `details` and one sentence a person can act on. */
export function validationError(errors: AjvError[], part: string): AppError {
  // anyOf/oneOf failures repeat the branch errors; keep the most specific ones.
  const useful = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  const list = useful.length > 0 ? useful : errors;
  const details = withAlternativesMerged(
    list,
    new Set(errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map(fieldPath)),
  ).slice(0, MAX_DETAILS);
  const first = details[0]!;
  const name =
    first.path === ''
      ? part === 'body'
        ? 'The request body'
        : `The ${part}`
      : `${PART_NAMES[part] ?? 'Field'} '${first.path.slice(1).replaceAll('/', '.')}'`;
  return appError('VALIDATION_FAILED', { subject: name, problem: first.message }, details);
}

/** What every upload route accepts of a multipart body, beside its byte limits: one file and a few fields. */
export const MULTIPART_LIMITS = { files: 1, fields: 10, parts: 20 } as const;

/**
 * A multipart body whose file stream closed early: the body ends before its closing boundary, or
 * the parser stopped at its fields limit after the file had begun (it then closes the file without
 * telling which).
 */
export const uploadCutShort = () =>
  appError('INVALID_MULTIPART', {
    reason: `it ends before its closing boundary, or holds more than ${MULTIPART_LIMITS.fields} fields`,
  });

/** Fastify's default longest path parameter: longer ones find no route and answer 414. */
export const MAX_PARAM_LENGTH = 100;
const MULTIPART_FAILURE = /^(Multipart: |Malformed part header|(Part|Field) terminated early|Unexpected end of (form|multipart))/;

function fromFastifyError(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return appError('UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return appError('PAYLOAD_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return appError('INVALID_CONTENT_LENGTH');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return appError('URI_TOO_LONG', { max: MAX_PARAM_LENGTH });
    case 'FST_ERR_BAD_URL':
      return appError('BAD_REQUEST.badUrl', { path: /'(.*)'/.exec(error.message)?.[1] ?? 'given' });
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return appError('INVALID_MULTIPART.tooManyParts', { fields: MULTIPART_LIMITS.fields, parts: MULTIPART_LIMITS.parts });
    case 'FST_FILES_LIMIT':
      return appError('VALIDATION_FAILED.oneFile', {}, [{ path: '/file', message: 'is one file too many' }]);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return appError('INVALID_JSON');
  }
  if (error.name === 'SyntaxError' && error.statusCode === 400) return appError('INVALID_JSON');
  // The multipart parser's own failures on a body cut short or with broken part headers; a cut-short
  // body also ends the uploaded file's stream early, which whoever reads it sees as a premature close.
  if (error.code === 'ERR_STREAM_PREMATURE_CLOSE') return uploadCutShort();
  if (error.statusCode === undefined && MULTIPART_FAILURE.test(error.message))
    return appError('INVALID_MULTIPART', { reason: error.message.toLowerCase() });
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // A 4xx Node has no name for would come from no component we run; it reads as a plain 400.
    const code = FRAMEWORK_CODES[status as FrameworkStatus] ?? FRAMEWORK_CODES[400];
    return appError(`${code}.framework`, { message: error.message.endsWith('.') ? error.message : `${error.message}.` });
  }
  return appError('INTERNAL_ERROR');
}

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isStatementTimeout(error)) return appError('DATABASE_TIMEOUT');
  if (error instanceof EmbeddedDatabaseFailure) return appError('DATABASE_UNAVAILABLE');
  const fastifyError = error as FastifyError & { validation?: AjvError[]; validationContext?: string };
  if (Array.isArray(fastifyError.validation)) return validationError(fastifyError.validation, fastifyError.validationContext ?? 'body');
  return fromFastifyError(fastifyError);
}

export function errorBody(error: AppError, requestId: string) {
  return {
    statusCode: error.statusCode,
    error: STATUS_CODES[error.statusCode] ?? 'Error',
    code: error.code,
    message: error.message,
    ...(error.details ? { details: error.details } : {}),
    requestId,
  };
}

/** A body of a type the route does not take, refused in the route's own sentence when it has one. */
function inRouteWords(refusal: AppError, request: FastifyRequest): AppError {
  const key = refusal.code === 'UNSUPPORTED_MEDIA_TYPE' ? request.routeOptions.config?.unsupportedMediaType : undefined;
  return key ? appError(key) : refusal;
}

export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const refusal = inRouteWords(toAppError(error), request);
  if (refusal.statusCode >= 500) request.log.error({ err: error }, 'request failed');
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
  return reply.code(refusal.statusCode).type('application/json; charset=utf-8').send(errorBody(refusal, request.id));
}

/**
 * Node's HTTP parser refuses some requests before Fastify sees them (headers over the size limit, a
 * broken request line, a client too slow); they are answered in the same error shape, then closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? appError('REQUEST_HEADER_FIELDS_TOO_LARGE', { max: maxHeaderSize })
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? appError('REQUEST_TIMEOUT')
        : appError('BAD_REQUEST.malformedRequest', { reason: (error.message || 'unreadable').replace(/\.$/, '') });
  const body = JSON.stringify(errorBody(refusal, randomUUID()));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${refusal.statusCode} ${STATUS_CODES[refusal.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
