import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { InvalidArgumentError } from 'commander';

/**
 * Option parsers and checks of the `callforge` CLI. A bad value is a usage error (exit code 2)
 * whose message names the option, raised before anything opens the database.
 */
export class UsageError extends Error {}

/** A command that talks to a running server could not be carried out there: its code and sentence (the server's own when it answered). */
export class RemoteError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const ajv = new Ajv({ strict: false, allErrors: false });
addFormats.default(ajv);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// numeric(20, 4) in the database: at most 16 digits before the point and 4 after.
const AMOUNT = /^[0-9]{1,16}(\.[0-9]{1,4})?$/;

export function parseUuid(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('expected an id such as 0190a4c2-7d3e-7b1a-9c4f-2e8d5a6b1c3f.');
  return value.toLowerCase();
}

/** A positive amount of money. */
export function parseAmount(value: string): string {
  if (!AMOUNT.test(value.trim()) || Number(value) <= 0) {
    throw new InvalidArgumentError('expected a decimal amount greater than 0 with at most 4 decimals, such as 10 or 12.5.');
  }
  return value.trim();
}

/** An amount of money that may be 0 (a tenant's starting credit). */
export function parseCredit(value: string): string {
  if (!AMOUNT.test(value.trim()))
    throw new InvalidArgumentError('expected a decimal amount with at most 4 decimals, such as 0, 10 or 12.5.');
  return value.trim();
}

const isDate = ajv.compile({ type: 'string', format: 'date' });
const isDateTime = ajv.compile({ type: 'string', format: 'date-time' });

/** An ISO date (the end of that day, UTC) or an ISO date-time with its time zone; the past is allowed. */
export function parseExpiry(value: string): string {
  const trimmed = value.trim();
  if (isDate(trimmed)) return trimmed;
  if (isDateTime(trimmed) && !Number.isNaN(Date.parse(trimmed))) return new Date(trimmed).toISOString();
  throw new InvalidArgumentError('expected an ISO date such as 2026-12-31 or a date-time with its time zone such as 2026-12-31T18:00:00Z.');
}

/** A server's address, http(s), without a trailing slash. */
export function parseServerUrl(value: string): string {
  const trimmed = value.trim().replace(/\/+$/, '');
  const url = URL.canParse(trimmed) ? new URL(trimmed) : undefined;
  if (!url || !['http:', 'https:'].includes(url.protocol))
    throw new InvalidArgumentError('expected an http(s) address such as http://localhost:3000.');
  return trimmed;
}

export function parseCountry(value: string): string {
  const upper = value.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(upper)) throw new InvalidArgumentError('expected a two-letter ISO 3166-1 country code such as US.');
  return upper;
}

export function parseCurrency(value: string): string {
  const upper = value.trim().toUpperCase();
  if (!/^[A-Z]{3}$/.test(upper)) throw new InvalidArgumentError('expected a three-letter ISO 4217 currency code such as USD.');
  return upper;
}

export function parsePositiveInt(max: number) {
  return (value: string): number => {
    if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > max)
      throw new InvalidArgumentError(`expected a whole number from 1 to ${max}.`);
    return Number(value);
  };
}

/**
 * Checks `input` against the API's own schema of the same request, so the CLI accepts exactly
 * what the API would; `options` maps each property to the option that sets it.
 */
export function checkAgainst(schema: object, input: Record<string, unknown>, options: Record<string, string>): void {
  const validate = ajv.compile(schema);
  if (validate(input)) return;
  const error = validate.errors![0]!;
  const property = error.keyword === 'required' ? String(error.params.missingProperty) : (error.instancePath.split('/')[1] ?? '');
  const option = options[property] ?? property;
  const reason =
    error.keyword === 'format'
      ? `must be a valid ${String(error.params.format)}`
      : error.keyword === 'minLength'
        ? error.params.limit === 1
          ? 'must not be empty'
          : `must be at least ${String(error.params.limit)} characters long`
        : error.keyword === 'maxLength'
          ? `must be at most ${String(error.params.limit)} characters long`
          : (error.message ?? 'is invalid');
  throw new UsageError(`${option} ${reason}.`);
}
