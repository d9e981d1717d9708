import { STATUS_CODES } from 'node:http';
import { ErrorBody } from './shapes.ts';

// The shapes live in shapes.ts, which imports nothing from Node so the dashboard can type-check against them.
export { IdParams } from './shapes.ts';

/** Documents the error responses a route can give, all in the one error shape. */
export const errorResponses = (...codes: number[]) =>
  Object.fromEntries(codes.map((code) => [code, { ...ErrorBody, description: STATUS_CODES[code] }]));
