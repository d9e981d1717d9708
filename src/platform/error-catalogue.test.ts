import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { describe, expect, it } from 'vitest';
import { codeOf, errorCatalogue, FRAMEWORK_CODES, type ErrorEntry, type ErrorKey } from './error-catalogue.ts';
import { errorsMarkdown } from './error-docs.ts';
import { appError, errorBody, toAppError } from './errors.ts';

const entries = Object.entries(errorCatalogue) as [ErrorKey, ErrorEntry][];

describe('the error catalogue', () => {
  it('gives every variant of a code the status of the code', () => {
    // The one exception the contract fixed before the catalogue: WhatsApp's bad signature is a 401, Twilio's a 403.
    const statusesOf = new Map<string, Set<number>>();
    for (const [key, entry] of entries) statusesOf.set(codeOf(key), (statusesOf.get(codeOf(key)) ?? new Set()).add(entry.status));
    const mixed = [...statusesOf].filter(([, statuses]) => statuses.size > 1).map(([code, statuses]) => [code, [...statuses]]);
    expect(mixed).toEqual([['INVALID_SIGNATURE', [401, 403]]]);
  });

  it('names each 4xx of the framework as it always was: the status text in capitals', () => {
    const nodeNames = Object.keys(STATUS_CODES)
      .map(Number)
      .filter((status) => status >= 400 && status < 500)
      .map((status) => [status, STATUS_CODES[status]!.toUpperCase().replace(/[^A-Z]+/g, '_')]);
    expect(Object.entries(FRAMEWORK_CODES).map(([status, code]) => [Number(status), code])).toEqual(nodeNames);
  });

  it('fills the named parameters of a sentence and nothing else', () => {
    const error = appError('CONTACTS_NOT_FOUND', { missing: 2, total: 5 });
    expect([error.statusCode, error.code, error.message]).toEqual([
      404,
      'CONTACTS_NOT_FOUND',
      '2 of the 5 contacts are not in this list; nothing was deleted.',
    ]);
    expect(appError('NOT_IMPLEMENTED.bulkStop').message).toContain('POST /api/v1/call-logs/{id}/hangup.');
    expect(appError('NOT_FOUND', { what: 'An ${x}' }).message).toBe('An ${x} not found.');
  });

  it("renders a framework refusal with Fastify's own sentence", () => {
    const error = toAppError(Object.assign(new Error('Route GET:/x not allowed'), { statusCode: 405 }));
    expect(errorBody(error, 'req-1')).toEqual({
      statusCode: 405,
      error: 'Method Not Allowed',
      code: 'METHOD_NOT_ALLOWED',
      message: 'Route GET:/x not allowed.',
      requestId: 'req-1',
    });
  });
});

describe('docs/errors.md', () => {
  it('is generated from the catalogue and up to date (npm run docs:errors)', () => {
    expect(readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')).toBe(errorsMarkdown());
  });
});
