import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';
import { STATUS_CODES } from 'node:http';

/** `schema`, or null. */
export const Nullable = <T extends TSchema>(schema: T, options?: { description: string }) => Type.Union([schema, Type.Null()], options);

/** The schema keyword (an OpenAPI extension) that says in words what a `pattern` wants, for the error a person reads. */
export const PATTERN_MESSAGE = 'x-pattern-message';

/** Shapes shared by every module's routes. */
export const Uuid = Type.String({ format: 'uuid' });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO-8601 UTC with milliseconds.' });
export const MoneyString = Type.String({
  pattern: '^-?[0-9]+\\.[0-9]{4}$',
  [PATTERN_MESSAGE]: 'a decimal amount with 4 fractional digits, such as 12.5000',
  description: 'Decimal amount with 4 fractional digits.',
});
export const IdParams = Type.Object({ id: Uuid });
/** The body of an action that takes none: an empty object, or no body at all. */
export const EmptyBody = Type.Optional(Type.Object({}, { additionalProperties: false, description: 'Empty object, or no body.' }));
/** A name or title a person reads: not empty, and not only spaces (which would be stored as nothing once trimmed). */
export const Title = (options: { maxLength: number; description?: string }) =>
  Type.String({ minLength: 1, ...options, pattern: '\\S', [PATTERN_MESSAGE]: 'some text, not only spaces' });

/** An instant, or a bare date (UTC) that stands for the whole of that day (see `dayStart`, `dayEnd`). */
export const InstantOrDate = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });
const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;
/** An `InstantOrDate` as the start of a range: a bare date's first moment. */
export const dayStart = (value: string) => new Date(BARE_DATE.test(value) ? `${value}T00:00:00.000Z` : value);
/** An `InstantOrDate` as the (exclusive) end of a range: the moment after a bare date's last, so the day is in. */
export const dayEnd = (value: string) =>
  BARE_DATE.test(value) ? new Date(Date.parse(`${value}T00:00:00.000Z`) + 86_400_000) : new Date(value);

export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    code: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    requestId: Type.String(),
  },
  { description: 'The one error shape of every error response.' },
);
export type ErrorBody = Static<typeof ErrorBody>;

/** Documents the error responses a route can give, all in the one error shape. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((code) => [code, { ...ErrorBody, description: STATUS_CODES[code] }]));

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

/**
 * A string that is one of `values` (a union of literals, which the Fastify type provider types exactly).
 * The return type is spelled out: inferred, TypeBox resolves `Union<Literals<T>>` against the constraint
 * and its static type widens to `string`.
 */
export const StringEnum = <const T extends readonly [string, ...string[]]>(
  values: T,
  options: { description?: string } = {},
): TUnion<Literals<T>> =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as unknown as TUnion<Literals<T>>;

/**
 * A key, token or secret the service later sends to a provider in an HTTP header: printable ASCII
 * without spaces, so that a stray character is refused when it is saved rather than failing every call.
 */
export const Credential = (options: { minLength: number; maxLength: number; description: string }) =>
  Type.String({ ...options, pattern: '^[!-~]+$', [PATTERN_MESSAGE]: 'printable ASCII without spaces (as it is pasted from the provider)' });
