import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { OptionalKind } from '@sinclair/typebox';

/**
 * Bodies are validated strictly: a string where a number belongs is an error, never coerced, and
 * unknown properties are refused rather than silently dropped. Query strings and path parameters
 * arrive as text, so they are coerced to the declared types.
 */
const common: Options = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false };

function makeAjv(options: Options) {
  const ajv = new Ajv({ ...common, ...options });
  addFormats.default(ajv);
  return ajv;
}

const bodyAjv = makeAjv({ coerceTypes: false });
const textAjv = makeAjv({ coerceTypes: 'array' });

/**
 * A body schema marked `Type.Optional` also accepts no body at all (state actions such as
 * `POST /campaigns/{id}/resume` take an empty object or nothing).
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);
  if (httpPart !== 'body' || (schema as Record<symbol, unknown>)[OptionalKind] !== 'Optional') return validate;
  return Object.assign((data: unknown) => data === undefined || validate(data), {
    get errors() {
      return validate.errors;
    },
  });
};
