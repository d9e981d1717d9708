import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

export interface FieldError {
  path: string;
  message: string;
}

/** The one error type: thrown anywhere, rendered by `sendError` into the contract's error shape. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly details?: FieldError[],
  ) {
    super(message);
  }
}

export const notFound = (what: string) => new AppError(404, 'NOT_FOUND', `${what} not found.`);
export const conflict = (code: string, message: string) => new AppError(409, code, message);
export const badRequest = (code: string, message: string, details?: FieldError[]) => new AppError(400, code, message, details);

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
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
    default:
      return error.message ?? 'is invalid';
  }
}

const PART_NAMES: Record<string, string> = { body: 'Field', querystring: 'Query parameter', params: 'Path parameter', headers: 'Header' };

/** Turns Ajv's errors into the contract's `details` and one sentence a person can act on. */
export function validationError(errors: AjvError[], part: string): AppError {
  // anyOf/oneOf failures repeat the branch errors; keep the most specific ones.
  const useful = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  const list = useful.length > 0 ? useful : errors;
  const details = list.map((e) => ({ path: fieldPath(e), message: describe(e) }));
  const first = details[0]!;
  const name =
    first.path === ''
      ? part === 'body'
        ? 'The request body'
        : `The ${part}`
      : `${PART_NAMES[part] ?? 'Field'} '${first.path.slice(1).replaceAll('/', '.')}'`;
  return new AppError(400, 'VALIDATION_FAILED', `${name} ${first.message}.`, details);
}

function fromFastifyError(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'This content type is not accepted here; send the body as application/json.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(413, 'PAYLOAD_TOO_LARGE', 'The request body is larger than this endpoint accepts; send a smaller one.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(400, 'INVALID_CONTENT_LENGTH', 'The Content-Length header does not match the body sent.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError(400, 'INVALID_JSON', 'The request body is not valid JSON; check quotes, commas and brackets.');
  }
  if (error.name === 'SyntaxError' && error.statusCode === 400) {
    return new AppError(400, 'INVALID_JSON', 'The request body is not valid JSON; check quotes, commas and brackets.');
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new AppError(
      status,
      (STATUS_CODES[status] ?? 'Error').toUpperCase().replace(/[^A-Z]+/g, '_'),
      error.message.endsWith('.') ? error.message : `${error.message}.`,
    );
  }
  return new AppError(
    500,
    'INTERNAL_ERROR',
    'Something went wrong on our side; try again, and quote the request id if it keeps happening.',
  );
}

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
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

export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  const appError = toAppError(error);
  if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
  return reply.code(appError.statusCode).type('application/json; charset=utf-8').send(errorBody(appError, request.id));
}
